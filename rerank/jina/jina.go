// Package jina reranks with Jina AI's Reranker API (POST /v1/rerank).
package jina

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/internal/httpx"
	"github.com/quarry-rag/quarry/rerank"
)

// Defaults.
const (
	DefaultModel    = "jina-reranker-v2-base-multilingual"
	DefaultEndpoint = "https://api.jina.ai/v1/rerank"
	EnvAPIKey       = "JINA_API_KEY"
)

// Config configures a Reranker. Zero values mean the defaults.
type Config struct {
	// Model is DefaultModel when empty.
	Model string
	// Endpoint is DefaultEndpoint when empty.
	Endpoint string
	// APIKey is read from JINA_API_KEY when empty.
	APIKey string
	// TopN asks for the best TopN only; all when 0.
	TopN int
	HTTP rerank.HTTPOptions
}

// Reranker calls Jina AI.
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
	for _, v := range []string{EnvAPIKey} {
		if cfg.APIKey == "" {
			cfg.APIKey = strings.TrimSpace(os.Getenv(v))
		}
	}
	if cfg.APIKey == "" {
		return nil, fmt.Errorf("jina reranker needs an API key: set %s", EnvAPIKey)
	}
	return &Reranker{cfg: cfg, client: httpx.New(httpx.Options{Client: cfg.HTTP.Client, MaxRetries: retries(cfg.HTTP.MaxRetries), RetryDelay: cfg.HTTP.RetryDelay})}, nil
}

func retries(n int) int {
	if n == 0 {
		return 2
	}
	return n
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
		Return    bool     `json:"return_documents"`
	}{r.cfg.Model, query, rerank.Texts(docs), r.cfg.TopN, false}
	var resp struct {
		Results []struct {
			Index int             `json:"index"`
			Score json.RawMessage `json:"relevance_score"`
		} `json:"results"`
	}
	if err := r.client.PostJSON(ctx, r.cfg.Endpoint, map[string]string{"Authorization": "Bearer " + r.cfg.APIKey}, body, &resp); err != nil {
		return nil, fmt.Errorf("jina rerank: %w", err)
	}
	res := make([]rerank.Result, len(resp.Results))
	for i, x := range resp.Results {
		res[i] = rerank.Result{Index: x.Index, Score: x.Score}
	}
	out, err := rerank.Apply(docs, res)
	if err != nil {
		return nil, fmt.Errorf("jina rerank: %w", err)
	}
	return out, nil
}

// Process implements rag.PostProcessor: it reranks by the question.
func (r *Reranker) Process(ctx context.Context, question string, docs []*document.Document) ([]*document.Document, error) {
	return r.Rerank(ctx, question, docs)
}
