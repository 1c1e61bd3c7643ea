// Package mistral embeds with the Mistral AI embeddings API (POST
// {base}/embeddings). The API has no query/document distinction. Vectors
// are L2-normalised on arrival, so Normalized is always true.
package mistral

import (
	"context"
	"fmt"
	"sort"

	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/embed/internal/httpx"
)

// Defaults.
const (
	DefaultBaseURL = "https://api.mistral.ai/v1"
	DefaultModel   = "mistral-embed"
	// DefaultBatchSize keeps requests small: the API bounds the tokens of
	// one request, not only the number of inputs.
	DefaultBatchSize = 32
)

var dimensions = map[string]int{
	"mistral-embed":   1024,
	"codestral-embed": 1536,
}

// Config configures the embedder. Zero values mean the defaults.
type Config struct {
	// Model is the model name, DefaultModel when empty.
	Model string
	// BaseURL is the API root, DefaultBaseURL when empty.
	BaseURL string
	// APIKey is sent as a bearer token; MISTRAL_API_KEY when empty.
	APIKey string
	// Dimension, when set, is requested ("output_dimension", which
	// codestral-embed honours). When 0 the model's known dimension is used,
	// or one call learns it.
	Dimension int
	// BatchSize is how many texts go in one request; DefaultBatchSize when 0.
	BatchSize int
	embed.HTTPOptions
}

// Embedder embeds with Mistral. It is safe for concurrent use.
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
	d := httpx.Defaults{Provider: "mistral", Model: DefaultModel, BaseURL: DefaultBaseURL, BatchSize: DefaultBatchSize, MaxBatchSize: 0}
	if err := httpx.Resolve(d, &cfg.Model, &cfg.BaseURL, &cfg.BatchSize); err != nil {
		return nil, err
	}
	key, err := httpx.Key(cfg.APIKey, "mistral", "MISTRAL_API_KEY")
	if err != nil {
		return nil, err
	}
	e := &Embedder{cfg: cfg, url: cfg.BaseURL + "/embeddings", header: map[string]string{"Authorization": "Bearer " + key}, client: httpx.New(cfg.HTTPOptions)}
	dim, err := httpx.Dimension(ctx, cfg.Dimension, dimensions, cfg.Model, e.call)
	if err != nil {
		return nil, fmt.Errorf("mistral embedder: %w", err)
	}
	e.info = embed.ModelInfo{Provider: "mistral", Model: cfg.Model, Dimension: dim, Normalized: true}
	return e, nil
}

// Model implements embed.Embedder.
func (e *Embedder) Model() embed.ModelInfo { return e.info }

// Embed implements embed.Embedder, in requests of at most BatchSize texts.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return httpx.EmbedBatches(ctx, e.info, e.cfg.BatchSize, texts, e.call)
}

type request struct {
	Model           string   `json:"model"`
	Input           []string `json:"input"`
	OutputDimension int      `json:"output_dimension,omitempty"`
	OutputDtype     string   `json:"output_dtype"`
}

type response struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
}

func (e *Embedder) call(ctx context.Context, texts []string) ([][]float32, error) {
	var resp response
	req := request{Model: e.cfg.Model, Input: texts, OutputDimension: e.cfg.Dimension, OutputDtype: "float"}
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
