// Package gemini embeds with the Gemini API's batchEmbedContents method.
// Documents are embedded with the RETRIEVAL_DOCUMENT task type and queries
// (EmbedQuery) with RETRIEVAL_QUERY. Vectors are L2-normalised on arrival
// (Gemini's are not at reduced dimensions), so Normalized is always true.
package gemini

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/embed/internal/httpx"
)

// Defaults.
const (
	DefaultBaseURL = "https://generativelanguage.googleapis.com/v1beta"
	DefaultModel   = "gemini-embedding-001"
	// MaxBatchSize is the API's limit of requests in one batch.
	MaxBatchSize = 100
)

// Task types of the API.
const (
	taskDocument = "RETRIEVAL_DOCUMENT"
	taskQuery    = "RETRIEVAL_QUERY"
)

var dimensions = map[string]int{
	"gemini-embedding-001": 3072,
	"text-embedding-004":   768,
	"embedding-001":        768,
}

// Config configures the embedder. Zero values mean the defaults.
type Config struct {
	// Model is the model name, DefaultModel when empty.
	Model string
	// BaseURL is the API root, DefaultBaseURL when empty.
	BaseURL string
	// APIKey is sent in x-goog-api-key; GEMINI_API_KEY or GOOGLE_API_KEY
	// when empty.
	APIKey string
	// Dimension, when set, is requested ("outputDimensionality": 768, 1536
	// and 3072 are the recommended sizes of gemini-embedding-001). When 0
	// the model's known dimension is used, or one call learns it.
	Dimension int
	// BatchSize is how many texts go in one request: MaxBatchSize when 0.
	BatchSize int
	embed.HTTPOptions
}

// Embedder embeds with Gemini. It is safe for concurrent use and
// implements embed.QueryEmbedder.
type Embedder struct {
	cfg    Config
	url    string
	header map[string]string
	client httpx.Client
	info   embed.ModelInfo
}

// New returns an embedder. When the dimension is neither configured nor
// known, New makes one call to learn it: a collection must know its
// dimension before its first write.
func New(ctx context.Context, cfg Config) (*Embedder, error) {
	d := httpx.Defaults{Provider: "gemini", Model: DefaultModel, BaseURL: DefaultBaseURL, BatchSize: MaxBatchSize, MaxBatchSize: MaxBatchSize}
	if err := httpx.Resolve(d, &cfg.Model, &cfg.BaseURL, &cfg.BatchSize); err != nil {
		return nil, err
	}
	cfg.Model = strings.TrimPrefix(cfg.Model, "models/")
	key, err := httpx.Key(cfg.APIKey, "gemini", "GEMINI_API_KEY", "GOOGLE_API_KEY")
	if err != nil {
		return nil, err
	}
	e := &Embedder{
		cfg:    cfg,
		url:    cfg.BaseURL + "/models/" + url.PathEscape(cfg.Model) + ":batchEmbedContents",
		header: map[string]string{"x-goog-api-key": key},
		client: httpx.New(cfg.HTTPOptions),
	}
	dim, err := httpx.Dimension(ctx, cfg.Dimension, dimensions, cfg.Model, e.documents)
	if err != nil {
		return nil, fmt.Errorf("gemini embedder: %w", err)
	}
	e.info = embed.ModelInfo{Provider: "gemini", Model: cfg.Model, Dimension: dim, Normalized: true}
	return e, nil
}

// Model implements embed.Embedder.
func (e *Embedder) Model() embed.ModelInfo { return e.info }

// Embed implements embed.Embedder with the RETRIEVAL_DOCUMENT task type.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return e.embed(ctx, texts, e.documents)
}

// EmbedQuery implements embed.QueryEmbedder with the RETRIEVAL_QUERY task
// type.
func (e *Embedder) EmbedQuery(ctx context.Context, queries []string) ([][]float32, error) {
	return e.embed(ctx, queries, e.queries)
}

func (e *Embedder) embed(ctx context.Context, texts []string, call func(context.Context, []string) ([][]float32, error)) ([][]float32, error) {
	return httpx.EmbedBatches(ctx, e.info, e.cfg.BatchSize, texts, call)
}

type part struct {
	Text string `json:"text"`
}

type content struct {
	Parts []part `json:"parts"`
}

type embedRequest struct {
	Model                string  `json:"model"`
	Content              content `json:"content"`
	TaskType             string  `json:"taskType"`
	OutputDimensionality int     `json:"outputDimensionality,omitempty"`
}

type batchRequest struct {
	Requests []embedRequest `json:"requests"`
}

type batchResponse struct {
	Embeddings []struct {
		Values []float32 `json:"values"`
	} `json:"embeddings"`
}

func (e *Embedder) documents(ctx context.Context, texts []string) ([][]float32, error) {
	return e.call(ctx, texts, taskDocument)
}

func (e *Embedder) queries(ctx context.Context, texts []string) ([][]float32, error) {
	return e.call(ctx, texts, taskQuery)
}

func (e *Embedder) call(ctx context.Context, texts []string, task string) ([][]float32, error) {
	req := batchRequest{Requests: make([]embedRequest, len(texts))}
	for i, t := range texts {
		req.Requests[i] = embedRequest{Model: "models/" + e.cfg.Model, Content: content{Parts: []part{{Text: t}}}, TaskType: task, OutputDimensionality: e.cfg.Dimension}
	}
	var resp batchResponse
	if err := e.client.PostJSON(ctx, e.url, e.header, req, &resp); err != nil {
		return nil, err
	}
	out := make([][]float32, len(resp.Embeddings))
	for i, emb := range resp.Embeddings {
		out[i] = emb.Values
	}
	return out, nil
}
