// Package cohere reranks with Cohere's Rerank API (POST /v2/rerank).
package cohere

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
	DefaultModel    = "rerank-v3.5"
	DefaultEndpoint = "https://api.cohere.com/v2/rerank"
	EnvAPIKey       = "COHERE_API_KEY"
)

// Config configures a Reranker. Zero values mean the defaults.
type Config struct {
	// Model is DefaultModel when empty.
	Model string
	// Endpoint is DefaultEndpoint when empty.
	Endpoint string
	// APIKey is read from COHERE_API_KEY (then CO_API_KEY) when empty.
	APIKey string
	// TopN asks for the best TopN only; all when 0.
	TopN int
	HTTP rerank.HTTPOptions
}

// Reranker calls Cohere.
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
	key, err := hosted.Key(cfg.APIKey, "cohere", EnvAPIKey, "CO_API_KEY")
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
		Model     string   `json:"model"`
		Query     string   `json:"query"`
		Documents []string `json:"documents"`
		TopN      int      `json:"top_n,omitempty"`
	}{r.cfg.Model, query, rerank.Texts(docs), r.cfg.TopN}
	out, err := hosted.Rerank(ctx, r.client, r.cfg.Endpoint, map[string]string{"Authorization": "Bearer " + r.cfg.APIKey}, body, docs)
	if err != nil {
		return nil, fmt.Errorf("cohere rerank: %w", err)
	}
	return out, nil
}

// Process implements rag.PostProcessor: it reranks by the question.
func (r *Reranker) Process(ctx context.Context, question string, docs []*document.Document) ([]*document.Document, error) {
	return r.Rerank(ctx, question, docs)
}
