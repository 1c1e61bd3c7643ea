// Package ollama embeds with a local Ollama server (POST {host}/api/embed).
//
// Ollama has no query/document distinction; models that expect prefixes
// (nomic-embed-text's "search_query: ") get the text as given. Vectors are
// L2-normalised, so Normalized is always true.
package ollama

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/embed/internal/httpx"
)

// Defaults.
const (
	DefaultHost      = "http://localhost:11434"
	DefaultModel     = "nomic-embed-text"
	DefaultBatchSize = 64
)

// dimensions of common embedding models in the Ollama library.
var dimensions = map[string]int{
	"nomic-embed-text":       768,
	"mxbai-embed-large":      1024,
	"all-minilm":             384,
	"snowflake-arctic-embed": 1024,
	"bge-m3":                 1024,
	"bge-large":              1024,
}

// Config configures the embedder. Zero values mean the defaults.
type Config struct {
	// Model is the model name, with an optional tag; DefaultModel when empty.
	Model string
	// Host is the server: OLLAMA_HOST when empty, else DefaultHost. A host
	// without a scheme ("localhost:11434") means http.
	Host string
	// Dimension is the vector size. When 0 the model's known dimension is
	// used, or one call learns it. When set it is also requested
	// ("dimensions"), which some models honour.
	Dimension int
	// BatchSize is how many texts go in one request; DefaultBatchSize when 0.
	BatchSize int
	embed.HTTPOptions
}

// Embedder embeds with Ollama. It is safe for concurrent use.
type Embedder struct {
	cfg    Config
	url    string
	client httpx.Client
	info   embed.ModelInfo
}

// New returns an embedder. When the dimension is neither configured nor
// known, New makes one call to learn it: a collection must know its
// dimension before its first write.
func New(ctx context.Context, cfg Config) (*Embedder, error) {
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	if cfg.Host == "" {
		cfg.Host = os.Getenv("OLLAMA_HOST")
	}
	if cfg.Host == "" {
		cfg.Host = DefaultHost
	}
	if !strings.Contains(cfg.Host, "://") {
		cfg.Host = "http://" + cfg.Host
	}
	cfg.Host = strings.TrimRight(cfg.Host, "/")
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	e := &Embedder{cfg: cfg, url: cfg.Host + "/api/embed", client: httpx.New(cfg.HTTPOptions)}
	dim, err := httpx.Dimension(ctx, cfg.Dimension, dimensions, strings.TrimSuffix(cfg.Model, ":latest"), e.call)
	if err != nil {
		return nil, fmt.Errorf("ollama embedder at %s: %w", cfg.Host, err)
	}
	e.info = embed.ModelInfo{Provider: "ollama", Model: cfg.Model, Dimension: dim, Normalized: true}
	return e, nil
}

// Model implements embed.Embedder.
func (e *Embedder) Model() embed.ModelInfo { return e.info }

// Embed implements embed.Embedder, in requests of at most BatchSize texts.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	vecs, err := httpx.Batches(ctx, texts, e.cfg.BatchSize, e.info.Dimension, e.call)
	if err != nil {
		return nil, fmt.Errorf("ollama embedder %s at %s: %w", e.info, e.cfg.Host, err)
	}
	return vecs, nil
}

type request struct {
	Model      string   `json:"model"`
	Input      []string `json:"input"`
	Dimensions int      `json:"dimensions,omitempty"`
}

type response struct {
	Embeddings [][]float32 `json:"embeddings"`
}

func (e *Embedder) call(ctx context.Context, texts []string) ([][]float32, error) {
	var resp response
	if err := e.client.PostJSON(ctx, e.url, nil, request{Model: e.cfg.Model, Input: texts, Dimensions: e.cfg.Dimension}, &resp); err != nil {
		return nil, err
	}
	return resp.Embeddings, nil
}
