package retrieve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/internal/httpx"
)

// SourceWeb is the source type of web search results.
const SourceWeb = "web"

// SearXNG searches the web through a SearXNG instance's JSON API
// (GET /search?q=…&format=json; the instance must enable the json format).
// Each result becomes a passage with sourceType "web", the page's URL as
// source name and id, and the title and snippet as content.
//
// Web results carry no metadata, so a scope or filter naming a metadata
// field matches none of them (SEMANTICS §2: a missing field makes every
// operator false): a tenant-scoped request gets no web passages rather
// than unscoped ones. Filters are evaluated in process.
type SearXNG struct {
	// BaseURL is the instance ("http://localhost:8888"); required.
	BaseURL string
	// Categories, Engines and Language are passed to SearXNG when set.
	Categories, Engines, Language string
	// HTTPClient sends the request; a client with a 30s timeout when nil.
	HTTPClient *http.Client
	// MaxRetries on 429, 5xx and network errors: 1 when 0, none when
	// negative.
	MaxRetries int
}

// Retrieve implements Retriever.
func (s *SearXNG) Retrieve(ctx context.Context, req Request) ([]*document.Document, error) {
	if s.BaseURL == "" {
		return nil, errors.New("searxng: no instance URL")
	}
	m, err := filter.NewMatcher(filter.Merge(req.Scope, req.Filter))
	if err != nil {
		return nil, fmt.Errorf("searxng: %w", err)
	}
	q := url.Values{"q": {req.Query}, "format": {"json"}}
	for k, v := range map[string]string{"categories": s.Categories, "engines": s.Engines, "language": s.Language} {
		if v != "" {
			q.Set(k, v)
		}
	}
	hc := s.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	retries := s.MaxRetries
	if retries == 0 {
		retries = 1
	}
	var resp struct {
		Results []struct {
			URL     string  `json:"url"`
			Title   string  `json:"title"`
			Content string  `json:"content"`
			Engine  string  `json:"engine"`
			Score   float64 `json:"score"`
		} `json:"results"`
	}
	u := strings.TrimRight(s.BaseURL, "/") + "/search?" + q.Encode()
	if err := httpx.New(httpx.Options{Client: hc, MaxRetries: retries}).GetJSON(ctx, u, nil, &resp); err != nil {
		return nil, fmt.Errorf("searxng: %w", err)
	}
	var out []*document.Document
	for _, r := range resp.Results {
		if r.URL == "" || (r.Title == "" && r.Content == "") {
			continue
		}
		d := &document.Document{ID: r.URL, SourceType: SourceWeb, SourceName: r.URL,
			Content:    strings.TrimSpace(r.Title + "\n" + r.Content),
			Metadata:   map[string]any{},
			Provenance: document.Provenance{Source: r.URL}}
		d.SetScore(r.Score)
		if !m.MatchDocument(d) {
			continue
		}
		out = append(out, d)
		if req.TopK > 0 && len(out) == req.TopK {
			break
		}
	}
	return out, nil
}
