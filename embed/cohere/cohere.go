// Package cohere embeds with Cohere's v2 embed API (POST {base}/embed,
// embedding_types ["float"]). Documents are embedded with input_type
// "search_document" and queries (EmbedQuery) with "search_query". Vectors
// are L2-normalised on arrival, so Normalized is always true.
package cohere

import (
	"context"
	"fmt"

	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/embed/internal/httpx"
)

// Defaults.
const (
	DefaultBaseURL = "https://api.cohere.com/v2"
	DefaultModel   = "embed-v4.0"
	// MaxBatchSize is the API's limit of texts per request.
	MaxBatchSize = 96
)

var dimensions = map[string]int{
	"embed-v4.0":                    1536,
	"embed-english-v3.0":            1024,
	"embed-multilingual-v3.0":       1024,
	"embed-english-light-v3.0":      384,
	"embed-multilingual-light-v3.0": 384,
}

// Config configures the embedder. Zero values mean the defaults.
type Config struct {
	// Model is the model name, DefaultModel when empty.
	Model string
	// BaseURL is the API root, up to and including /v2: DefaultBaseURL
	// when empty.
	BaseURL string
	// APIKey is sent as a bearer token; COHERE_API_KEY when empty.
	APIKey string
	// Dimension, when set, is requested ("output_dimension": 256, 512,
	// 1024 or 1536 with embed-v4.0). When 0 the model's known dimension is
	// used, or one call learns it.
	Dimension int
	// BatchSize is how many texts go in one request: MaxBatchSize when 0.
	BatchSize int
	embed.HTTPOptions
}

// Embedder embeds with Cohere. It is safe for concurrent use and implements
// embed.QueryEmbedder.
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
	d := httpx.Defaults{Provider: "cohere", Model: DefaultModel, BaseURL: DefaultBaseURL, BatchSize: MaxBatchSize, MaxBatchSize: MaxBatchSize}
	if err := httpx.Resolve(d, &cfg.Model, &cfg.BaseURL, &cfg.BatchSize); err != nil {
		return nil, err
	}
	key, err := httpx.Key(cfg.APIKey, "cohere", "COHERE_API_KEY")
	if err != nil {
		return nil, err
	}
	e := &Embedder{cfg: cfg, url: cfg.BaseURL + "/embed", header: map[string]string{"Authorization": "Bearer " + key}, client: httpx.New(cfg.HTTPOptions)}
	dim, err := httpx.Dimension(ctx, cfg.Dimension, dimensions, cfg.Model, e.documents)
	if err != nil {
		return nil, fmt.Errorf("cohere embedder: %w", err)
	}
	e.info = embed.ModelInfo{Provider: "cohere", Model: cfg.Model, Dimension: dim, Normalized: true}
	return e, nil
}

// Model implements embed.Embedder.
func (e *Embedder) Model() embed.ModelInfo { return e.info }

// Embed implements embed.Embedder with input_type "search_document".
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return e.embed(ctx, texts, e.documents)
}

// EmbedQuery implements embed.QueryEmbedder with input_type "search_query".
func (e *Embedder) EmbedQuery(ctx context.Context, queries []string) ([][]float32, error) {
	return e.embed(ctx, queries, e.queries)
}

func (e *Embedder) embed(ctx context.Context, texts []string, call func(context.Context, []string) ([][]float32, error)) ([][]float32, error) {
	return httpx.EmbedBatches(ctx, e.info, e.cfg.BatchSize, texts, call)
}

type request struct {
	Model           string   `json:"model"`
	Texts           []string `json:"texts"`
	InputType       string   `json:"input_type"`
	EmbeddingTypes  []string `json:"embedding_types"`
	OutputDimension int      `json:"output_dimension,omitempty"`
}

type response struct {
	Embeddings struct {
		Float [][]float32 `json:"float"`
	} `json:"embeddings"`
}

func (e *Embedder) documents(ctx context.Context, texts []string) ([][]float32, error) {
	return e.call(ctx, texts, "search_document")
}

func (e *Embedder) queries(ctx context.Context, texts []string) ([][]float32, error) {
	return e.call(ctx, texts, "search_query")
}

func (e *Embedder) call(ctx context.Context, texts []string, inputType string) ([][]float32, error) {
	var resp response
	req := request{Model: e.cfg.Model, Texts: texts, InputType: inputType, EmbeddingTypes: []string{"float"}, OutputDimension: e.cfg.Dimension}
	if err := e.client.PostJSON(ctx, e.url, e.header, req, &resp); err != nil {
		return nil, err
	}
	return resp.Embeddings.Float, nil
}
