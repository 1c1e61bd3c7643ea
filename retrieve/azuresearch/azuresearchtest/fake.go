// Package azuresearchtest is a fake Azure AI Search service holding one
// index, for tests: it answers Documents_SearchPost (text, vector and
// hybrid queries, the OData $filter subset Quarry writes, the Semantic
// Ranker's rerankerScore and captions) and checks every request, and every
// answer it gives, against Azure's published REST specification
// (searchindex.json here: an extract of api-version 2024-07-01's, converted
// to OpenAPI 3.0 when loaded).
//
// What it does not imitate: Azure's analyzers and BM25 (a result's
// @search.score is the count of query words it holds, or the vector
// similarity), its HNSW (vector search is exact) and the Semantic
// Ranker's model (rerankerScore is 4 × the share of query words found).
// Those ranks are the service's own; the fake checks the wire format, the
// filters and the fusion's shape, not Azure's relevance.
package azuresearchtest

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/quarry-rag/quarry/internal/openapicheck"
)

//go:embed searchindex.json
var swagger []byte

var checker = sync.OnceValues(func() (*openapicheck.Checker, error) {
	doc, err := openAPI3(swagger)
	if err != nil {
		return nil, err
	}
	return openapicheck.New(doc)
})

// Index describes the fake's index.
type Index struct {
	Name string
	// Key is the api-key the service wants; empty accepts any request.
	Key string
	// KeyField names the key ("id" when empty); Searchable the fields a
	// text query searches; VectorField the vector field, if any.
	KeyField    string
	Searchable  []string
	VectorField string
	// Filterable fields, each marked true when it is a collection.
	Filterable map[string]bool
	// Semantic names the index's semantic configuration; empty for none.
	Semantic string
	// Docs are the documents, by field.
	Docs []map[string]any
}

// Server is the fake service.
type Server struct {
	*httptest.Server
	ix Index
	t  testing.TB

	mu       sync.Mutex
	requests []map[string]any
}

// New starts a fake service with one index.
func New(t testing.TB, ix Index) *Server {
	t.Helper()
	s := &Server{ix: ix, t: t}
	s.Server = httptest.NewServer(s)
	t.Cleanup(s.Close)
	return s
}

// Requests returns the bodies of the searches received so far.
func (s *Server) Requests() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

var searchPath = regexp.MustCompile(`\A/indexes(?:\('([^']*)'\)|/([^/]+))/docs/search\.post\.search\z`)

// ServeHTTP answers one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	Serve(s.t, w, r, s.ix, func(body map[string]any) {
		s.mu.Lock()
		s.requests = append(s.requests, body)
		s.mu.Unlock()
	})
}

// Serve answers one request for ix, reporting a request or an answer the
// specification refuses with t.Errorf; seen, when set, gets each search
// body.
func Serve(t testing.TB, w http.ResponseWriter, r *http.Request, ix Index, seen func(map[string]any)) {
	v, err := checker()
	if err != nil {
		t.Errorf("azuresearchtest: specification: %v", err)
		fail(w, http.StatusInternalServerError, "InternalServerError", err.Error())
		return
	}
	m := searchPath.FindStringSubmatch(r.URL.Path)
	if m == nil || r.Method != http.MethodPost {
		fail(w, http.StatusNotFound, "ResourceNotFound", "no such operation: "+r.Method+" "+r.URL.Path)
		return
	}
	if name := m[1] + m[2]; name != ix.Name {
		fail(w, http.StatusNotFound, "IndexNotFound", fmt.Sprintf("The index '%s' for service was not found.", name))
		return
	}
	if ix.Key != "" && r.Header.Get("api-key") != ix.Key {
		fail(w, http.StatusForbidden, "Forbidden", "Access denied: a valid api-key is required.")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	if err != nil {
		fail(w, http.StatusBadRequest, "InvalidRequest", err.Error())
		return
	}
	// The specification's paths are relative to the host template
	// {endpoint}/indexes('{indexName}').
	vr := r.Clone(r.Context())
	vr.URL.Path = "/docs/search.post.search"
	vr.URL.RawPath = ""
	if err := v.Request(vr, body); err != nil {
		t.Errorf("azuresearchtest: request outside the specification: %v", err)
		fail(w, http.StatusBadRequest, "InvalidRequestParameter", err.Error())
		return
	}
	var req searchRequest
	if err := json.Unmarshal(body, &req); err != nil {
		fail(w, http.StatusBadRequest, "InvalidRequestParameter", err.Error())
		return
	}
	if seen != nil {
		var raw map[string]any
		_ = json.Unmarshal(body, &raw)
		seen(raw)
	}
	out, code, msg := search(ix, req)
	if code != 0 {
		fail(w, code, "InvalidRequestParameter", msg)
		return
	}
	answer, _ := json.Marshal(out)
	if err := v.Response(vr, http.StatusOK, "application/json; odata.metadata=none", answer); err != nil {
		t.Errorf("azuresearchtest: answer outside the specification: %v", err)
	}
	w.Header().Set("Content-Type", "application/json; odata.metadata=none")
	_, _ = w.Write(answer)
}

// CheckSearch validates the body of a search against the specification.
func CheckSearch(body []byte) error {
	v, err := checker()
	if err != nil {
		return err
	}
	r := httptest.NewRequest(http.MethodPost, "/docs/search.post.search?api-version=2024-07-01", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	return v.Request(r, body)
}

// fail answers as the service does: {"error": {"code", "message"}}.
func fail(w http.ResponseWriter, code int, errCode, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": errCode, "message": msg}})
}

type searchRequest struct {
	Search                string `json:"search"`
	SearchMode            string `json:"searchMode"`
	QueryType             string `json:"queryType"`
	Filter                string `json:"filter"`
	Select                string `json:"select"`
	SearchFields          string `json:"searchFields"`
	Top                   *int   `json:"top"`
	SemanticConfiguration string `json:"semanticConfiguration"`
	Captions              string `json:"captions"`
	VectorFilterMode      string `json:"vectorFilterMode"`
	VectorQueries         []struct {
		Kind   string    `json:"kind"`
		Vector []float64 `json:"vector"`
		Fields string    `json:"fields"`
		K      int       `json:"k"`
	} `json:"vectorQueries"`
}

type scored struct {
	doc         map[string]any
	score       float64
	text, vec   int // ranks, from 1; 0 when absent
	reranker    float64
	caption     string
	hasReranker bool
}

// search runs a request against the index: the filter first (pre-filter
// for vectors, as Quarry asks), then the text and vector rankings, fused
// by RRF when both are present, then the semantic reranking.
func search(ix Index, req searchRequest) (map[string]any, int, string) {
	keyField := ix.KeyField
	if keyField == "" {
		keyField = "id"
	}
	top := 50
	if req.Top != nil {
		top = *req.Top
	}
	if top < 0 || top > 1000 {
		return nil, http.StatusBadRequest, "top must be between 0 and 1000"
	}
	var pred node
	if strings.TrimSpace(req.Filter) != "" {
		var err error
		if pred, err = parseFilter(req.Filter, ix.Filterable); err != nil {
			return nil, http.StatusBadRequest, "Invalid expression: " + err.Error()
		}
	}
	fields := map[string]bool{keyField: true, ix.VectorField: ix.VectorField != ""}
	for _, f := range ix.Searchable {
		fields[f] = true
	}
	for f := range ix.Filterable {
		fields[f] = true
	}
	var sel []string
	if req.Select != "" {
		for _, f := range strings.Split(req.Select, ",") {
			f = strings.TrimSpace(f)
			if !fields[f] {
				return nil, http.StatusBadRequest, fmt.Sprintf("Invalid expression: Could not find a property named '%s' on type 'search.document'.", f)
			}
			sel = append(sel, f)
		}
	}
	var pool []map[string]any
	for _, d := range ix.Docs {
		if pred == nil || pred.eval(d, nil) {
			pool = append(pool, d)
		}
	}
	words := queryWords(req.Search)
	byKey := map[string]*scored{}
	var textRank []*scored
	if len(words) > 0 {
		for _, d := range pool {
			n := 0
			for _, w := range words {
				if slices.Contains(docWords(d, ix.Searchable), w) {
					n++
				}
			}
			if n == 0 {
				continue
			}
			sd := &scored{doc: d, score: float64(n)}
			byKey[d[keyField].(string)] = sd
			textRank = append(textRank, sd)
		}
		sort.SliceStable(textRank, func(i, j int) bool { return textRank[i].score > textRank[j].score })
		for i, sd := range textRank {
			sd.text = i + 1
		}
	} else if req.Search == "*" || req.Search == "" {
		for _, d := range pool {
			sd := &scored{doc: d, score: 1}
			byKey[d[keyField].(string)] = sd
			textRank = append(textRank, sd)
		}
	}
	var vecRank []*scored
	for _, vq := range req.VectorQueries {
		if vq.Kind != "vector" || vq.Fields != ix.VectorField || ix.VectorField == "" {
			return nil, http.StatusBadRequest, fmt.Sprintf("vector query on field %q: not a vector field of the index", vq.Fields)
		}
		if req.VectorFilterMode != "" && req.VectorFilterMode != "preFilter" {
			return nil, http.StatusBadRequest, "the fake filters vector queries before the search only"
		}
		type hit struct {
			d   map[string]any
			sim float64
		}
		var hits []hit
		for _, d := range pool {
			if v, ok := d[ix.VectorField].([]float64); ok && len(v) == len(vq.Vector) {
				hits = append(hits, hit{d, cosine(v, vq.Vector)})
			} else if ok {
				return nil, http.StatusBadRequest, fmt.Sprintf("The vector field '%s' expects %d dimensions, not %d", ix.VectorField, len(v), len(vq.Vector))
			}
		}
		sort.SliceStable(hits, func(i, j int) bool { return hits[i].sim > hits[j].sim })
		for i, h := range hits[:min(len(hits), vq.K)] {
			key := h.d[keyField].(string)
			sd := byKey[key]
			if sd == nil {
				sd = &scored{doc: h.d}
				byKey[key] = sd
			}
			sd.vec = i + 1
			// Azure's score for cosine: 1 / (1 + distance).
			sd.score = 1 / (1 + (1 - h.sim))
			vecRank = append(vecRank, sd)
		}
	}
	var all []*scored
	switch {
	case len(req.VectorQueries) > 0 && len(words) > 0: // hybrid: RRF with k = 60
		for _, sd := range byKey {
			sd.score = 0
			if sd.text > 0 {
				sd.score += 1 / float64(60+sd.text)
			}
			if sd.vec > 0 {
				sd.score += 1 / float64(60+sd.vec)
			}
			all = append(all, sd)
		}
	case len(req.VectorQueries) > 0:
		all = vecRank
	default:
		all = textRank
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].score != all[j].score {
			return all[i].score > all[j].score
		}
		return all[i].doc[keyField].(string) < all[j].doc[keyField].(string)
	})
	if req.QueryType == "semantic" {
		if ix.Semantic == "" || req.SemanticConfiguration != ix.Semantic {
			return nil, http.StatusBadRequest, fmt.Sprintf("semantic configuration %q is not defined on the index", req.SemanticConfiguration)
		}
		all = all[:min(len(all), 50)] // the ranker reorders the top 50
		for _, sd := range all {
			found := 0
			for _, w := range words {
				if slices.Contains(docWords(sd.doc, ix.Searchable), w) {
					found++
				}
			}
			sd.hasReranker = true
			if len(words) > 0 {
				sd.reranker = 4 * float64(found) / float64(len(words))
			}
			if strings.HasPrefix(req.Captions, "extractive") {
				sd.caption = bestSentence(sd.doc, ix.Searchable, words)
			}
		}
		sort.SliceStable(all, func(i, j int) bool { return all[i].reranker > all[j].reranker })
	} else if req.SemanticConfiguration != "" || req.Captions != "" {
		return nil, http.StatusBadRequest, "captions and semanticConfiguration are only valid with queryType semantic"
	}
	value := []any{}
	for _, sd := range all[:min(len(all), top)] {
		r := map[string]any{"@search.score": sd.score}
		if sd.hasReranker {
			r["@search.rerankerScore"] = sd.reranker
			if sd.caption != "" {
				r["@search.captions"] = []any{map[string]any{"text": sd.caption, "highlights": nil}}
			}
		}
		for k, v := range sd.doc {
			if k == ix.VectorField {
				continue // vector fields are not retrievable here
			}
			if sel == nil || slices.Contains(sel, k) {
				r[k] = v
			}
		}
		value = append(value, r)
	}
	return map[string]any{"value": value}, 0, ""
}

// queryWords are the words of a simple-syntax query, escapes undone.
func queryWords(q string) []string {
	q = strings.ReplaceAll(q, `\`, "")
	if strings.TrimSpace(q) == "*" {
		return nil
	}
	return words(q)
}

func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

func docWords(d map[string]any, searchable []string) []string {
	var out []string
	for _, f := range searchable {
		if s, ok := d[f].(string); ok {
			out = append(out, words(s)...)
		}
	}
	return out
}

// bestSentence is the sentence of the searchable text holding the most
// query words: the fake's extractive caption.
func bestSentence(d map[string]any, searchable []string, q []string) string {
	best, most := "", -1
	for _, f := range searchable {
		s, _ := d[f].(string)
		for _, sent := range strings.SplitAfter(s, ". ") {
			n := 0
			for _, w := range words(sent) {
				if slices.Contains(q, w) {
					n++
				}
			}
			if n > most {
				best, most = strings.TrimSpace(sent), n
			}
		}
	}
	return best
}

func cosine(a, b []float64) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += a[i] * b[i]
		na += a[i] * a[i]
		nb += b[i] * b[i]
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}
