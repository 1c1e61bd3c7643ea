// Package voyage reranks with Voyage AI's Rerank API (POST /v1/rerank).
package voyage

import (
	"context"
	"fmt"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/internal/httpx"
	"github.com/quarry-rag/quarry/rerank"
	"github.com/quarry-rag/quarry/rerank/internal/hosted"
)

// Defaults.
const (
	DefaultModel    = "rerank-2.5"
	DefaultEndpoint = "https://api.voyageai.com/v1/rerank"
	EnvAPIKey       = "VOYAGE_API_KEY"
)

// Config configures a Reranker. Zero values mean the defaults.
type Config struct {
	// Model is DefaultModel when empty.
	Model string
	// Endpoint is DefaultEndpoint when empty.
	Endpoint string
	// APIKey is read from VOYAGE_API_KEY when empty.
	APIKey string
	// TopN asks for the best TopN only (top_k); all when 0.
	TopN int
	HTTP rerank.HTTPOptions
}

// Reranker calls Voyage AI.
type Reranker struct {
	cfg    Config
	client httpx.Client
}

// New returns a reranker; it makes no network call.
func New(cfg Config) (*Reranker, error) {
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	if cfg.Endpoint == "" {
		cfg.Endpoint = DefaultEndpoint
	}
	key, err := hosted.Key(cfg.APIKey, "voyage", EnvAPIKey)
	if err != nil {
		return nil, err
	}
	cfg.APIKey = key
	return &Reranker{cfg: cfg, client: hosted.Client(cfg.HTTP)}, nil
}

// Rerank implements rerank.Reranker.
func (r *Reranker) Rerank(ctx context.Context, query string, docs []*document.Document) ([]*document.Document, error) {
	if len(docs) == 0 {
		return []*document.Document{}, nil
	}
	body := struct {
		Query      string   `json:"query"`
		Documents  []string `json:"documents"`
		Model      string   `json:"model"`
		TopK       int      `json:"top_k,omitempty"`
		Truncation bool     `json:"truncation"`
	}{query, rerank.Texts(docs), r.cfg.Model, r.cfg.TopN, true}
	out, err := hosted.Rerank(ctx, r.client, r.cfg.Endpoint, map[string]string{"Authorization": "Bearer " + r.cfg.APIKey}, body, docs)
	if err != nil {
		return nil, fmt.Errorf("voyage rerank: %w", err)
	}
	return out, nil
}

// Process implements rag.PostProcessor: it reranks by the question.
func (r *Reranker) Process(ctx context.Context, question string, docs []*document.Document) ([]*document.Document, error) {
	return r.Rerank(ctx, question, docs)
}
