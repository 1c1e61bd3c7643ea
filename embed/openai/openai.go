// Package openai embeds with the OpenAI embeddings API (POST
// {base}/embeddings) and with any server that speaks it: vLLM, llama.cpp,
// LM Studio, Hugging Face TEI, … given their base URL.
//
// The API has no query/document distinction: queries and documents are
// embedded alike. Vectors are L2-normalised on arrival (OpenAI's already
// are; not every compatible server's are), so Normalized is always true.
package openai

import (
	"context"
	"fmt"
	"sort"

	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/embed/internal/httpx"
)

// Defaults.
const (
	DefaultBaseURL = "https://api.openai.com/v1"
	DefaultModel   = "text-embedding-3-small"
	// DefaultBatchSize keeps a batch of 512-token chunks under the API's
	// 300,000 tokens per request.
	DefaultBatchSize = 256
	// MaxBatchSize is the API's limit of inputs per request.
	MaxBatchSize = 2048
)

// dimensions of OpenAI's models at their full size.
var dimensions = map[string]int{
	"text-embedding-3-small": 1536,
	"text-embedding-3-large": 3072,
	"text-embedding-ada-002": 1536,
}

// Config configures the embedder. Zero values mean the defaults.
type Config struct {
	// Model is the model name, DefaultModel when empty.
	Model string
	// BaseURL is the API root, up to and including /v1: DefaultBaseURL
	// when empty, or a compatible server's ("http://localhost:8000/v1").
	BaseURL string
	// APIKey is sent as a bearer token; OPENAI_API_KEY when empty. It is
	// required with the default BaseURL only: local servers often need none.
	APIKey string
	// Dimension, when set, is requested from the API ("dimensions", which
	// text-embedding-3 models honour). When 0 the model's known dimension
	// is used, or one call learns it.
	Dimension int
	// BatchSize is how many texts go in one request: DefaultBatchSize when
	// 0, at most MaxBatchSize.
	BatchSize int
	embed.HTTPOptions
}

// Embedder embeds with an OpenAI-compatible API. It is safe for concurrent
// use.
type Embedder struct {
	cfg    Config
	url    string
	header map[string]string
	client httpx.Client
	info   embed.ModelInfo
}

// New returns an embedder. When neither the configuration nor the model
// table gives the dimension, New makes one call to learn it, because a
// collection must know its dimension before its first write.
func New(ctx context.Context, cfg Config) (*Embedder, error) {
	d := httpx.Defaults{Provider: "openai", Model: DefaultModel, BaseURL: DefaultBaseURL, BatchSize: DefaultBatchSize, MaxBatchSize: MaxBatchSize}
	if err := httpx.Resolve(d, &cfg.Model, &cfg.BaseURL, &cfg.BatchSize); err != nil {
		return nil, err
	}
	e := &Embedder{cfg: cfg, url: cfg.BaseURL + "/embeddings", header: map[string]string{}, client: httpx.New(cfg.HTTPOptions)}
	key := cfg.APIKey
	if cfg.BaseURL == DefaultBaseURL {
		var err error
		if key, err = httpx.Key(key, "openai", "OPENAI_API_KEY"); err != nil {
			return nil, err
		}
	} else {
		key, _ = httpx.Key(key, "openai", "OPENAI_API_KEY")
	}
	if key != "" {
		e.header["Authorization"] = "Bearer " + key
	}
	known := dimensions
	if cfg.BaseURL != DefaultBaseURL {
		known = nil // another server's model of the same name may differ
	}
	dim, err := httpx.Dimension(ctx, cfg.Dimension, known, cfg.Model, e.call)
	if err != nil {
		return nil, fmt.Errorf("openai embedder: %w", err)
	}
	e.info = embed.ModelInfo{Provider: "openai", Model: cfg.Model, Dimension: dim, Normalized: true}
	return e, nil
}

// Model implements embed.Embedder.
func (e *Embedder) Model() embed.ModelInfo { return e.info }

// Embed implements embed.Embedder, in requests of at most BatchSize texts.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return httpx.EmbedBatches(ctx, e.info, e.cfg.BatchSize, texts, e.call)
}

type request struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	Dimensions     int      `json:"dimensions,omitempty"`
	EncodingFormat string   `json:"encoding_format"`
}

type response struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
}

// call makes one request; the API may return data out of order, index
// says where each belongs.
func (e *Embedder) call(ctx context.Context, texts []string) ([][]float32, error) {
	var resp response
	req := request{Model: e.cfg.Model, Input: texts, Dimensions: e.cfg.Dimension, EncodingFormat: "float"}
	if err := e.client.PostJSON(ctx, e.url, e.header, req, &resp); err != nil {
		return nil, err
	}
	sort.SliceStable(resp.Data, func(i, j int) bool { return resp.Data[i].Index < resp.Data[j].Index })
	out := make([][]float32, len(resp.Data))
	for i, d := range resp.Data {
		if d.Index != i {
			return nil, fmt.Errorf("response indexes are not 0..%d", len(texts)-1)
		}
		out[i] = d.Embedding
	}
	return out, nil
}
