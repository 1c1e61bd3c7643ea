// Package remote is a retrieval source that searches another Quarry
// server's HTTP API, so one Quarry can answer from a knowledge base another
// one serves — alone or beside local collections in multi-source
// retrieval (retrieve.Parallel, retrieve.Composite).
//
// The request's scopes travel as a canonical JSON filter, merged by AND
// (SEMANTICS §5); the remote server adds its key's own mandatory filter on
// top, so a remote source never widens what either side allows.
package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/retrieve"
)

// MaxTopK is the most results one request asks a server for (the API's
// bound).
const MaxTopK = 100

// DefaultTimeout bounds a request when the context sets no deadline.
const DefaultTimeout = 30 * time.Second

// maxResponse bounds a response body.
const maxResponse = 32 << 20

// Retriever searches one collection of a Quarry server. It implements
// retrieve.Retriever and is safe for concurrent use.
type Retriever struct {
	// URL is the server's base URL, e.g. "https://quarry.example:8080".
	URL string
	// Collection is the remote collection ("default" when empty).
	Collection string
	// Key is the API key, sent as a bearer token; empty for a server
	// without keys.
	Key string
	// Mode is the remote search mode (keyword, vector, hybrid); empty lets
	// the server choose.
	Mode string
	// Scope is this source's own mandatory filter.
	Scope filter.Expr
	// Client makes the requests; http.DefaultClient when nil.
	Client *http.Client
}

var _ retrieve.Retriever = (*Retriever)(nil)

// Error is an error the remote server reported, with its stable code.
type Error struct {
	Status int    `json:"status"`
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("remote quarry: %d %s: %s", e.Status, e.Code, e.Detail)
}

type searchBody struct {
	Query  string          `json:"query"`
	Mode   string          `json:"mode,omitempty"`
	Filter json.RawMessage `json:"filter,omitempty"`
	TopK   int             `json:"top_k,omitempty"`
}

type passage struct {
	ID         string          `json:"id"`
	Score      float64         `json:"score"`
	SourceType string          `json:"sourceType"`
	Source     string          `json:"source"`
	Page       int             `json:"page"`
	Headings   []string        `json:"headings"`
	LineStart  int             `json:"lineStart"`
	LineEnd    int             `json:"lineEnd"`
	Text       string          `json:"text"`
	Metadata   json.RawMessage `json:"metadata"`
}

// Retrieve implements retrieve.Retriever.
func (r *Retriever) Retrieve(ctx context.Context, req retrieve.Request) ([]*document.Document, error) {
	if strings.TrimSpace(req.Query) == "" {
		return nil, errors.New("remote quarry: the query is empty")
	}
	base, err := url.Parse(r.URL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("remote quarry: %q is not an http(s) URL", r.URL)
	}
	coll := r.Collection
	if coll == "" {
		coll = "default"
	}
	body := searchBody{Query: req.Query, Mode: r.Mode, TopK: min(req.TopK, MaxTopK)}
	if f := filter.Merge(req.Scope, r.Scope, req.Filter); f != nil {
		s, err := filter.Format(f)
		if err != nil {
			return nil, fmt.Errorf("remote quarry: the filter: %w", err)
		}
		body.Filter = json.RawMessage(s)
	}
	js, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("remote quarry: %w", err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	u := base.JoinPath("v1", "collections", coll, "search")
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(js))
	if err != nil {
		return nil, fmt.Errorf("remote quarry: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json")
	if r.Key != "" {
		hr.Header.Set("Authorization", "Bearer "+r.Key)
	}
	client := r.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("remote quarry %s: %w", base.Host, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return nil, fmt.Errorf("remote quarry %s: %w", base.Host, err)
	}
	if resp.StatusCode != http.StatusOK {
		e := &Error{Status: resp.StatusCode}
		if json.Unmarshal(raw, e) != nil || e.Code == "" {
			e.Code, e.Detail = "http_error", strings.TrimSpace(string(raw[:min(len(raw), 200)]))
		}
		return nil, e
	}
	var out struct {
		Results []passage `json:"results"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("remote quarry %s: the response: %w", base.Host, err)
	}
	docs := make([]*document.Document, 0, len(out.Results))
	for i, p := range out.Results {
		d := document.New(p.Text)
		d.ID, d.SourceType, d.SourceName = p.ID, p.SourceType, p.Source
		d.SetScore(p.Score)
		d.Provenance.Page, d.Provenance.HeadingPath = p.Page, p.Headings
		d.Provenance.LineStart, d.Provenance.LineEnd = p.LineStart, p.LineEnd
		if len(p.Metadata) > 0 && string(p.Metadata) != "null" {
			v, err := document.DecodeJSONValue(p.Metadata)
			if err != nil {
				return nil, fmt.Errorf("remote quarry %s: result %d: metadata: %w", base.Host, i+1, err)
			}
			m, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("remote quarry %s: result %d: metadata is not an object", base.Host, i+1)
			}
			if err := d.AddMetadata(m); err != nil {
				return nil, fmt.Errorf("remote quarry %s: result %d: %w", base.Host, i+1, err)
			}
		}
		docs = append(docs, d)
	}
	return docs, nil
}
