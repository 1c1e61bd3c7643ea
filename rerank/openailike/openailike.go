// Package openailike reranks with a self-hosted server's /rerank endpoint:
// vLLM (which serves Qwen3-Reranker), llama.cpp, Infinity and others that
// speak the Jina/Cohere shape, or Hugging Face's Text Embeddings Inference
// (TEI), whose request names the passages "texts" and whose reply is a bare
// list of {index, score}.
package openailike

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/internal/httpx"
	"github.com/quarry-rag/quarry/rerank"
	"github.com/quarry-rag/quarry/rerank/internal/hosted"
)

// DefaultModel is the model named to servers that host several.
const DefaultModel = "Qwen/Qwen3-Reranker-4B"

// Dialect is the request shape a server speaks.
type Dialect string

// Dialects.
const (
	// DialectResults sends {model, query, documents, top_n} and reads
	// {results: [{index, relevance_score}]}: vLLM, llama.cpp, Infinity.
	DialectResults Dialect = "results"
	// DialectTEI sends {query, texts, truncate} and reads [{index, score}].
	DialectTEI Dialect = "tei"
)

// Config configures a Reranker.
type Config struct {
	// BaseURL is the server ("http://localhost:8000" or ".../v1"); requests
	// go to BaseURL + "/rerank" unless it already ends in /rerank. Required.
	BaseURL string
	// Model is DefaultModel when empty (TEI ignores it).
	Model string
	// APIKey, when set, is sent as a bearer token.
	APIKey string
	// Dialect is DialectResults when empty.
	Dialect Dialect
	// TopN asks for the best TopN only; all when 0.
	TopN int
	HTTP rerank.HTTPOptions
}

// Reranker calls the server.
type Reranker struct {
	cfg    Config
	url    string
	client httpx.Client
}

// New returns a reranker; it makes no network call.
func New(cfg Config) (*Reranker, error) {
	if cfg.BaseURL == "" {
		return nil, errors.New("openai-compatible reranker: the server's URL is required")
	}
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	switch cfg.Dialect {
	case "":
		cfg.Dialect = DialectResults
	case DialectResults, DialectTEI:
	default:
		return nil, fmt.Errorf("openai-compatible reranker: unknown dialect %q (use %q or %q)", cfg.Dialect, DialectResults, DialectTEI)
	}
	url := strings.TrimRight(cfg.BaseURL, "/")
	if !strings.HasSuffix(url, "/rerank") {
		url += "/rerank"
	}
	return &Reranker{cfg: cfg, url: url, client: hosted.Client(cfg.HTTP)}, nil
}

type item struct {
	Index          int             `json:"index"`
	RelevanceScore json.RawMessage `json:"relevance_score"`
	Score          json.RawMessage `json:"score"`
}

// Rerank implements rerank.Reranker.
func (r *Reranker) Rerank(ctx context.Context, query string, docs []*document.Document) ([]*document.Document, error) {
	if len(docs) == 0 {
		return []*document.Document{}, nil
	}
	var body any
	if r.cfg.Dialect == DialectTEI {
		body = struct {
			Query    string   `json:"query"`
			Texts    []string `json:"texts"`
			Truncate bool     `json:"truncate"`
		}{query, rerank.Texts(docs), true}
	} else {
		body = struct {
			Model     string   `json:"model"`
			Query     string   `json:"query"`
			Documents []string `json:"documents"`
			TopN      int      `json:"top_n,omitempty"`
		}{r.cfg.Model, query, rerank.Texts(docs), r.cfg.TopN}
	}
	header := map[string]string{}
	if r.cfg.APIKey != "" {
		header["Authorization"] = "Bearer " + r.cfg.APIKey
	}
	var raw json.RawMessage
	if err := r.client.PostJSON(ctx, r.url, header, body, &raw); err != nil {
		return nil, fmt.Errorf("rerank at %s: %w", r.url, err)
	}
	// Either shape is read whatever the dialect: servers drift.
	var items []item
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '[' {
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, fmt.Errorf("rerank at %s: %w: %v", r.url, rerank.ErrResponse, err)
		}
	} else {
		var v struct {
			Results []item `json:"results"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("rerank at %s: %w: %v", r.url, rerank.ErrResponse, err)
		}
		items = v.Results
	}
	res := make([]rerank.Result, len(items))
	for i, it := range items {
		s := it.RelevanceScore
		if len(s) == 0 {
			s = it.Score
		}
		res[i] = rerank.Result{Index: it.Index, Score: s}
	}
	out, err := rerank.Apply(docs, res)
	if err != nil {
		return nil, fmt.Errorf("rerank at %s: %w", r.url, err)
	}
	if r.cfg.Dialect == DialectTEI && r.cfg.TopN > 0 && len(out) > r.cfg.TopN {
		out = out[:r.cfg.TopN]
	}
	return out, nil
}

// Process implements rag.PostProcessor: it reranks by the question.
func (r *Reranker) Process(ctx context.Context, question string, docs []*document.Document) ([]*document.Document, error) {
	return r.Rerank(ctx, question, docs)
}
