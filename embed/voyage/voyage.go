// Package voyage embeds with the Voyage AI embeddings API (POST
// {base}/embeddings). Documents are embedded with input_type "document" and
// queries (EmbedQuery) with "query". Vectors are L2-normalised, so
// Normalized is always true.
package voyage

import (
	"context"
	"fmt"
	"sort"

	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/embed/internal/httpx"
)

// Defaults.
const (
	DefaultBaseURL = "https://api.voyageai.com/v1"
	DefaultModel   = "voyage-3.5"
	// DefaultBatchSize keeps a batch of 512-token chunks under the API's
	// per-request token limits (120,000 tokens for the smallest models).
	DefaultBatchSize = 128
	// MaxBatchSize is the API's limit of inputs per request.
	MaxBatchSize = 1000
)

var dimensions = map[string]int{
	"voyage-3.5":       1024,
	"voyage-3.5-lite":  1024,
	"voyage-3-large":   1024,
	"voyage-3":         1024,
	"voyage-3-lite":    512,
	"voyage-code-3":    1024,
	"voyage-finance-2": 1024,
	"voyage-law-2":     1024,
	"voyage-context-3": 1024,
}

// Config configures the embedder. Zero values mean the defaults.
type Config struct {
	// Model is the model name, DefaultModel when empty.
	Model string
	// BaseURL is the API root, DefaultBaseURL when empty.
	BaseURL string
	// APIKey is sent as a bearer token; VOYAGE_API_KEY when empty.
	APIKey string
	// Dimension, when set, is requested ("output_dimension": 256, 512,
	// 1024 or 2048 for the models that offer them). When 0 the model's
	// known dimension is used, or one call learns it.
	Dimension int
	// BatchSize is how many texts go in one request: DefaultBatchSize when
	// 0, at most MaxBatchSize.
	BatchSize int
	embed.HTTPOptions
}

// Embedder embeds with Voyage. It is safe for concurrent use and implements
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
	d := httpx.Defaults{Provider: "voyage", Model: DefaultModel, BaseURL: DefaultBaseURL, BatchSize: DefaultBatchSize, MaxBatchSize: MaxBatchSize}
	if err := httpx.Resolve(d, &cfg.Model, &cfg.BaseURL, &cfg.BatchSize); err != nil {
		return nil, err
	}
	key, err := httpx.Key(cfg.APIKey, "voyage", "VOYAGE_API_KEY")
	if err != nil {
		return nil, err
	}
	e := &Embedder{cfg: cfg, url: cfg.BaseURL + "/embeddings", header: map[string]string{"Authorization": "Bearer " + key}, client: httpx.New(cfg.HTTPOptions)}
	dim, err := httpx.Dimension(ctx, cfg.Dimension, dimensions, cfg.Model, e.documents)
	if err != nil {
		return nil, fmt.Errorf("voyage embedder: %w", err)
	}
	e.info = embed.ModelInfo{Provider: "voyage", Model: cfg.Model, Dimension: dim, Normalized: true}
	return e, nil
}

// Model implements embed.Embedder.
func (e *Embedder) Model() embed.ModelInfo { return e.info }

// Embed implements embed.Embedder with input_type "document".
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return e.embed(ctx, texts, e.documents)
}

// EmbedQuery implements embed.QueryEmbedder with input_type "query".
func (e *Embedder) EmbedQuery(ctx context.Context, queries []string) ([][]float32, error) {
	return e.embed(ctx, queries, e.queries)
}

func (e *Embedder) embed(ctx context.Context, texts []string, call func(context.Context, []string) ([][]float32, error)) ([][]float32, error) {
	return httpx.EmbedBatches(ctx, e.info, e.cfg.BatchSize, texts, call)
}

type request struct {
	Model           string   `json:"model"`
	Input           []string `json:"input"`
	InputType       string   `json:"input_type"`
	OutputDimension int      `json:"output_dimension,omitempty"`
}

type response struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
}

func (e *Embedder) documents(ctx context.Context, texts []string) ([][]float32, error) {
	return e.call(ctx, texts, "document")
}

func (e *Embedder) queries(ctx context.Context, texts []string) ([][]float32, error) {
	return e.call(ctx, texts, "query")
}

func (e *Embedder) call(ctx context.Context, texts []string, inputType string) ([][]float32, error) {
	var resp response
	req := request{Model: e.cfg.Model, Input: texts, InputType: inputType, OutputDimension: e.cfg.Dimension}
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
