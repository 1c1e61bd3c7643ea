// Package azuresearch searches an Azure AI Search index as one of Quarry's
// retrieval sources: a keyword, vector or hybrid query (search text and
// vectorQueries in one request, fused by the service), optionally
// reranked by the Semantic Ranker with extractive captions, under
// Quarry's portable filter compiled to an OData $filter. Each result is a
// passage with its score, provenance and the index's filterable fields as
// metadata.
//
// It speaks the REST API (Documents_SearchPost, api-version 2024-07-01)
// with net/http. No Azure service can run here: the tests run against
// azuresearchtest, a fake whose requests and answers are validated
// against Azure's published REST specification.
package azuresearch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/internal/httpx"
	"github.com/quarry-rag/quarry/retrieve"
)

// SourceType is the source type of the passages an index returns.
const SourceType = "azure"

// APIVersion is the REST API version Quarry speaks.
const APIVersion = "2024-07-01"

// MaxTop is the most results one search asks for: the service pages
// results beyond 1,000.
const MaxTop = 1000

// Index is an Azure AI Search index searched as a retrieval source. It
// implements retrieve.Retriever.
type Index struct {
	// Endpoint is the service ("https://NAME.search.windows.net").
	Endpoint string
	// Name is the index.
	Name string
	// APIKey is a query (or admin) key, sent as api-key;
	// AZURE_SEARCH_API_KEY or AZURE_SEARCH_KEY when empty.
	APIKey string
	// KeyField is the index's key field ("id" when empty); ContentField
	// the text a passage carries ("content" when empty); TitleField an
	// optional title put before it; SourceField an optional field (a URL
	// or path) that names the passage's source, the key when empty.
	KeyField, ContentField, TitleField, SourceField string
	// VectorField is the vector field searched with the query embedded by
	// Embedder; with both set a search is hybrid (the service fuses the
	// text and vector rankings with RRF), otherwise keyword only.
	VectorField string
	Embedder    embed.Embedder
	// Semantic names a semantic configuration of the index: results are
	// then reranked by the Semantic Ranker (their score is its
	// rerankerScore, 0–4) and carry an extractive caption.
	Semantic string
	// Fields are the index's filterable fields in Quarry's types
	// (string, integer, float, boolean, string[]): a filter or scope may
	// name them, and each passage carries their values as metadata. A
	// filter naming any other field matches nothing.
	Fields []document.Field
	// MaxChars bounds a passage's text (4,000 runes when 0).
	MaxChars int
	// HTTPClient sends the requests (a 30 s timeout when nil); MaxRetries
	// retries 429, 5xx and network errors (1 when 0, none when negative).
	HTTPClient *http.Client
	MaxRetries int
}

var fieldName = regexp.MustCompile(`\A[A-Za-z][A-Za-z0-9_]{0,127}\z`)

// Check reports a configuration the service would refuse or that could
// put text into a request other than as a field name.
func (ix *Index) Check() error {
	u, err := url.Parse(ix.Endpoint)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("azure search: endpoint %q: want https://NAME.search.windows.net", ix.Endpoint)
	}
	if ix.Name == "" || strings.ContainsAny(ix.Name, "'/?#") {
		return fmt.Errorf("azure search: index name %q", ix.Name)
	}
	names := map[string]string{"key": ix.KeyField, "content": ix.ContentField, "title": ix.TitleField,
		"source": ix.SourceField, "vector": ix.VectorField}
	for role, n := range names {
		if n != "" && !fieldName.MatchString(n) {
			return fmt.Errorf("azure search: %s field %q is not a field name", role, n)
		}
	}
	for _, f := range ix.Fields {
		if !fieldName.MatchString(f.Name) {
			return fmt.Errorf("azure search: filterable field %q is not a field name", f.Name)
		}
		switch f.Type {
		case document.TypeString, document.TypeInteger, document.TypeFloat, document.TypeBoolean, document.TypeStringList:
		default:
			return fmt.Errorf("azure search: field %s: type %q: want string, integer, float, boolean or string[]", f.Name, f.Type)
		}
	}
	if (ix.VectorField == "") != (ix.Embedder == nil) {
		return errors.New("azure search: a vector field needs an embedder for the query, and an embedder a vector field")
	}
	return nil
}

func (ix *Index) keyField() string     { return cmp.Or(ix.KeyField, "id") }
func (ix *Index) contentField() string { return cmp.Or(ix.ContentField, "content") }
func (ix *Index) sourceField() string  { return cmp.Or(ix.SourceField, ix.keyField()) }

func (ix *Index) field(name string) (document.Field, bool) {
	for _, f := range ix.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return document.Field{}, false
}

// SearchURL is the address of the index's search operation.
func (ix *Index) SearchURL() string {
	return strings.TrimRight(ix.Endpoint, "/") + "/indexes('" + url.PathEscape(ix.Name) + "')/docs/search.post.search?api-version=" + APIVersion
}

// request is the body of Documents_SearchPost, as far as Quarry uses it.
type request struct {
	Search                string        `json:"search"`
	SearchMode            string        `json:"searchMode,omitempty"`
	QueryType             string        `json:"queryType,omitempty"`
	Filter                string        `json:"filter,omitempty"`
	Select                string        `json:"select"`
	Top                   int           `json:"top"`
	VectorQueries         []vectorQuery `json:"vectorQueries,omitempty"`
	VectorFilterMode      string        `json:"vectorFilterMode,omitempty"`
	SemanticConfiguration string        `json:"semanticConfiguration,omitempty"`
	Captions              string        `json:"captions,omitempty"`
}

type vectorQuery struct {
	Kind   string    `json:"kind"`
	Vector []float32 `json:"vector"`
	Fields string    `json:"fields"`
	K      int       `json:"k"`
}

// result is one search result: the service's annotations and the
// selected fields.
type result map[string]any

// Retrieve implements retrieve.Retriever: one search under
// filter.Merge(Scope, Filter). A filter that cannot match sends no
// request; passages are checked against the filter again in process, so a
// scope holds whatever the service returns.
func (ix *Index) Retrieve(ctx context.Context, req retrieve.Request) ([]*document.Document, error) {
	if err := ix.Check(); err != nil {
		return nil, err
	}
	merged := filter.Merge(req.Scope, req.Filter)
	if err := filter.Check(merged); err != nil {
		return nil, fmt.Errorf("azure search: %w", err)
	}
	m, err := filter.NewMatcher(withoutRaw(merged))
	if err != nil {
		return nil, fmt.Errorf("azure search: %w", err)
	}
	f, err := ix.compile(merged)
	if err != nil {
		return nil, fmt.Errorf("azure search: %w", err)
	}
	if f.t == filter.Never || strings.TrimSpace(req.Query) == "" {
		return nil, nil
	}
	key, err := httpx.Key(ix.APIKey, "azure search", "AZURE_SEARCH_API_KEY", "AZURE_SEARCH_KEY")
	if err != nil {
		return nil, err
	}
	topK := req.TopK
	if topK <= 0 {
		topK = 10
	}
	body := request{Search: escapeSimple(strings.TrimSpace(req.Query)), SearchMode: "any", QueryType: "simple", Filter: f.expr,
		Select: strings.Join(ix.selectFields(), ","), Top: min(topK, MaxTop)}
	if ix.Embedder != nil && ix.VectorField != "" {
		vecs, err := embed.EmbedQuery(ctx, ix.Embedder, []string{req.Query})
		if err != nil {
			return nil, fmt.Errorf("azure search: embed the query: %w", err)
		}
		// Twice top-k from the vector ranking, as Quarry's own hybrid
		// takes from each branch; the filter applies before the
		// nearest neighbours are chosen.
		body.VectorQueries = []vectorQuery{{Kind: "vector", Vector: vecs[0], Fields: ix.VectorField, K: min(2*topK, MaxTop)}}
		body.VectorFilterMode = "preFilter"
	}
	if ix.Semantic != "" {
		body.QueryType, body.SemanticConfiguration, body.Captions = "semantic", ix.Semantic, "extractive"
	}
	var resp struct {
		Value []result `json:"value"`
	}
	hc := ix.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	retries := ix.MaxRetries
	if retries == 0 {
		retries = 1
	}
	client := httpx.New(httpx.Options{Client: hc, MaxRetries: retries})
	if err := client.PostJSON(ctx, ix.SearchURL(), map[string]string{"api-key": key, "Accept": "application/json"}, body, &resp); err != nil {
		return nil, fmt.Errorf("azure search %s: %w", ix.Name, err)
	}
	var out []*document.Document
	for _, r := range resp.Value {
		d, err := ix.passage(r)
		if err != nil {
			return nil, fmt.Errorf("azure search %s: %w", ix.Name, err)
		}
		if d == nil || !m.MatchDocument(d) {
			continue
		}
		out = append(out, d)
		if len(out) == topK {
			break
		}
	}
	return out, nil
}

// withoutRaw is the filter the in-process check can evaluate: raw
// fragments are the service's to apply (the matcher refuses them), so
// they stand for true there.
func withoutRaw(e filter.Expr) filter.Expr {
	switch x := e.(type) {
	case *filter.Raw:
		return nil
	case *filter.Group:
		var kept []filter.Expr
		for _, c := range x.Conditions {
			if c := withoutRaw(c); c != nil {
				kept = append(kept, c)
			} else if x.Op == filter.OpOr {
				return nil // an or with a raw branch may hold for anything
			}
		}
		switch {
		case len(kept) == 0:
			return nil
		case x.Op == filter.OpAnd:
			return filter.And(kept...)
		}
		return filter.Or(kept...)
	}
	return e
}

// selectFields are the fields a search returns: key, text, title,
// source and the filterable fields, each once.
func (ix *Index) selectFields() []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range []string{ix.keyField(), ix.contentField(), ix.TitleField, ix.SourceField} {
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, f := range ix.Fields {
		if !seen[f.Name] {
			seen[f.Name] = true
			out = append(out, f.Name)
		}
	}
	return out
}

// passage turns a result into a passage; nil for a result without a key.
func (ix *Index) passage(r result) (*document.Document, error) {
	key, _ := r[ix.keyField()].(string)
	if key == "" {
		return nil, nil
	}
	text, _ := r[ix.contentField()].(string)
	caption := ""
	if cs, ok := r["@search.captions"].([]any); ok && len(cs) > 0 {
		if c, ok := cs[0].(map[string]any); ok {
			caption, _ = c["text"].(string)
		}
	}
	if strings.TrimSpace(text) == "" {
		text = caption // a content field left out of the index's retrievable fields
	}
	if title, _ := r[ix.TitleField].(string); ix.TitleField != "" && title != "" {
		text = title + "\n" + text
	}
	source := key
	if ix.SourceField != "" {
		if s, _ := r[ix.SourceField].(string); s != "" {
			source = s
		}
	}
	d := &document.Document{ID: ix.Name + "/" + key, SourceType: SourceType, SourceName: source,
		Content: cutRunes(strings.TrimSpace(text), cmpInt(ix.MaxChars, 4000)), Metadata: map[string]any{},
		Provenance: document.Provenance{Source: source}}
	for _, f := range ix.Fields {
		v, ok := r[f.Name]
		if !ok || v == nil {
			continue
		}
		mv, err := metadataValue(f, v)
		if err != nil {
			return nil, fmt.Errorf("result %s: %w", key, err)
		}
		d.Metadata[f.Name] = mv
	}
	if caption != "" {
		if _, taken := d.Metadata["caption"]; !taken {
			d.Metadata["caption"] = caption
		}
	}
	score, ok := r["@search.rerankerScore"].(float64)
	if !ok {
		score, _ = r["@search.score"].(float64)
	}
	d.SetScore(score)
	return d, nil
}

// metadataValue is a field's JSON value in Quarry's type for it.
func metadataValue(f document.Field, v any) (any, error) {
	bad := fmt.Errorf("field %s: %v is not a %s", f.Name, v, f.Type)
	switch f.Type {
	case document.TypeString:
		if s, ok := v.(string); ok {
			return s, nil
		}
	case document.TypeBoolean:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case document.TypeInteger:
		if x, ok := v.(float64); ok && x == float64(int64(x)) {
			return int64(x), nil
		}
	case document.TypeFloat:
		if x, ok := v.(float64); ok {
			return x, nil
		}
	case document.TypeStringList:
		xs, ok := v.([]any)
		if !ok {
			return nil, bad
		}
		out := make([]any, 0, len(xs))
		for _, x := range xs {
			s, ok := x.(string)
			if !ok {
				return nil, bad
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, bad
}

// escapeSimple escapes the operators of the simple query syntax, so a
// question is searched as words: "C++ (and C#)?" must not become a
// required term and a group.
func escapeSimple(q string) string {
	var b strings.Builder
	for _, r := range q {
		if strings.ContainsRune(`+|-"*()\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func cmpInt(n, def int) int {
	if n > 0 {
		return n
	}
	return def
}

func cutRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}
