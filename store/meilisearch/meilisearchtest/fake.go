// Package meilisearchtest is a fake Meilisearch server for tests: indexes
// with settings (filterable and searchable attributes, typo tolerance,
// prefix search, pagination, user-provided embedders), documents added,
// fetched and deleted by id or filter through tasks, and searches through
// multi-search — keyword queries over the first ten words with matching
// strategy "last" or "all", exact vector search, and hybrid merging.
// Every request and every answer is validated against Meilisearch's
// published OpenAPI document (openapi.json here, minified:
// meilisearch/documentation assets/open-api/meilisearch-openapi.json at
// 52a04d8, 2026-08-20, Meilisearch 1.53.0).
//
// Tasks are applied when they are enqueued, so a task the store waits for
// has always ended; a task that fails fails whole, as Meilisearch's do.
//
// What it does not imitate: Meilisearch's ranking rules and its ranking
// score (here a keyword hit scores by how many of the query's words it
// holds, then how often; a semantic hit (1+cosine)/2; a hybrid merge
// orders by the score weighted by the semantic ratio, which it reports as
// the hit's score), its tokenizer beyond spaces (the fake refuses
// searches while typo tolerance or prefix search is on), arroy or hannoy
// (vector search is exact) and the asynchrony of tasks. The document's one
// slip is mended when it is loaded: /multi-search declares only the
// federated answer, while a multi-search without federation answers
// {"results": [...]}, which the document describes as SearchResults.
package meilisearchtest

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/internal/openapicheck"
)

//go:embed openapi.json
var spec []byte

// Version is the Meilisearch version the fake reports.
const Version = "1.53.0"

var checker = sync.OnceValues(func() (*openapicheck.Checker, error) {
	doc, err := mend(spec)
	if err != nil {
		return nil, err
	}
	return openapicheck.New(doc)
})

// mend corrects the document's slip (see the package comment).
func mend(doc []byte) ([]byte, error) {
	var v map[string]any
	if err := json.Unmarshal(doc, &v); err != nil {
		return nil, fmt.Errorf("meilisearchtest: %w", err)
	}
	ok, _ := v["paths"].(map[string]any)["/multi-search"].(map[string]any)["post"].(map[string]any)["responses"].(map[string]any)["200"].(map[string]any)
	ct, _ := ok["content"].(map[string]any)["application/json"].(map[string]any)
	if ct == nil {
		return nil, fmt.Errorf("meilisearchtest: the document's /multi-search answer has changed")
	}
	ct["schema"] = map[string]any{"oneOf": []any{
		map[string]any{"$ref": "#/components/schemas/FederatedSearchResult"},
		map[string]any{"$ref": "#/components/schemas/SearchResults"},
	}}
	delete(ct, "example")
	return json.Marshal(v)
}

type index struct {
	uid        string
	primaryKey string
	created    time.Time
	docs       map[string]map[string]any
	seq        map[string]int // insertion order, for ties
	next       int
	filterable map[string]bool
	searchable []string // nil: every attribute
	typos      bool
	prefix     bool
	dims       map[string]int            // user-provided embedders
	words      map[string]map[string]int // id → "attr word" → count, as searched
}

// count is how often each word is in a document's searchable attributes.
func (ix *index) count(d map[string]any, attrs []string) map[string]int {
	id, _ := d[ix.primaryKey].(string)
	key := strings.Join(attrs, "\x00")
	if c, ok := ix.words[id+"\x00"+key]; ok {
		return c
	}
	c := map[string]int{}
	for _, a := range attrs {
		if v, ok := d[a].(string); ok {
			for _, w := range strings.Fields(v) {
				c[w]++
			}
		}
	}
	ix.words[id+"\x00"+key] = c
	return c
}

// Server is a fake Meilisearch.
type Server struct {
	*httptest.Server
	// Key is the API key the server wants; empty takes any.
	Key string
	v   *openapicheck.Checker

	mu      sync.Mutex
	indexes map[string]*index
	tasks   []map[string]any
	calls   map[string]int
	invalid []string
}

// New starts a fake Meilisearch; it is closed when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	v, err := checker()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{v: v, indexes: map[string]*index{}, calls: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		s.Close()
		for _, msg := range s.TakeInvalid() {
			t.Errorf("meilisearchtest: %s", msg)
		}
	})
	return s
}

// TakeInvalid returns the requests and answers the specification refused
// so far and forgets them; those left when the test ends fail it.
func (s *Server) TakeInvalid() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.invalid
	s.invalid = nil
	return out
}

// StoreURL is the store URL of the fake, with the query params when given.
func (s *Server) StoreURL(params string) string {
	u := "meilisearch://"
	if s.Key != "" {
		u += ":" + s.Key + "@"
	}
	u += s.Listener.Addr().String()
	if params != "" {
		u += "?" + params
	}
	return u
}

// Calls returns how many requests each operation ("POST /multi-search")
// received, index names replaced by I.
func (s *Server) Calls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.calls {
		out[k] = v
	}
	return out
}

var (
	idxPath  = regexp.MustCompile(`\A/indexes/([^/]+)(/.*)?\z`)
	taskPath = regexp.MustCompile(`\A/tasks/(\d+)\z`)
	docIDRE  = regexp.MustCompile(`\A[a-zA-Z0-9_-]{1,511}\z`)
)

type answer struct {
	code int
	body []byte
}

func jsonAnswer(code int, v any) answer {
	b, _ := json.Marshal(v)
	return answer{code, b}
}

func errorBody(code, msg string) map[string]any {
	typ := "invalid_request"
	if code == "missing_authorization_header" || code == "invalid_api_key" {
		typ = "auth"
	}
	return map[string]any{"message": msg, "code": code, "type": typ, "link": "https://docs.meilisearch.com/errors#" + code}
}

func failure(status int, code, msg string) answer { return jsonAnswer(status, errorBody(code, msg)) }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if s.Key != "" && r.Header.Get("Authorization") != "Bearer "+s.Key {
		a := failure(http.StatusUnauthorized, "invalid_api_key", "The provided API key is invalid.")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.code)
		_, _ = w.Write(a.body)
		return
	}
	if err := s.v.Request(r, body); err != nil {
		s.mu.Lock()
		s.invalid = append(s.invalid, "request outside the specification: "+err.Error())
		s.mu.Unlock()
		a := failure(http.StatusBadRequest, "bad_request", err.Error())
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.code)
		_, _ = w.Write(a.body)
		return
	}
	s.mu.Lock()
	s.calls[r.Method+" "+idxPath.ReplaceAllString(r.URL.Path, "/indexes/I$2")]++
	a := s.route(r, body)
	s.mu.Unlock()
	if a.code/100 == 2 {
		if err := s.v.Response(r, a.code, "application/json", a.body); err != nil {
			s.mu.Lock()
			s.invalid = append(s.invalid, "answer outside the specification: "+err.Error())
			s.mu.Unlock()
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.code)
	_, _ = w.Write(a.body)
}

func now() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// enqueue records a task that apply ran, and answers as Meilisearch does
// on enqueueing it.
func (s *Server) enqueue(uid, kind string, apply func() (map[string]any, map[string]any)) answer {
	details, fail := apply()
	t := map[string]any{"uid": len(s.tasks), "batchUid": len(s.tasks), "indexUid": uid, "type": kind, "canceledBy": nil,
		"details": details, "error": nil, "duration": "PT0S", "enqueuedAt": now(), "startedAt": now(), "finishedAt": now(), "status": "succeeded"}
	if fail != nil {
		t["status"], t["error"] = "failed", fail
	}
	s.tasks = append(s.tasks, t)
	return jsonAnswer(http.StatusAccepted, map[string]any{"taskUid": t["uid"], "indexUid": uid, "status": "enqueued", "type": kind, "enqueuedAt": t["enqueuedAt"]})
}

func (s *Server) route(r *http.Request, body []byte) answer {
	p := r.URL.Path
	switch {
	case p == "/version" && r.Method == http.MethodGet:
		return jsonAnswer(200, map[string]any{"commitSha": "fake", "commitDate": "2026-08-20", "pkgVersion": Version})
	case p == "/health" && r.Method == http.MethodGet:
		return jsonAnswer(200, map[string]any{"status": "available"})
	case p == "/indexes" && r.Method == http.MethodPost:
		var req struct {
			UID        string  `json:"uid"`
			PrimaryKey *string `json:"primaryKey"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return failure(400, "bad_request", err.Error())
		}
		return s.enqueue(req.UID, "indexCreation", func() (map[string]any, map[string]any) {
			if s.indexes[req.UID] != nil {
				return nil, errorBody("index_already_exists", fmt.Sprintf("Index `%s` already exists.", req.UID))
			}
			ix := s.newIndex(req.UID)
			if req.PrimaryKey != nil {
				ix.primaryKey = *req.PrimaryKey
			}
			return map[string]any{"primaryKey": req.PrimaryKey}, nil
		})
	case p == "/indexes" && r.Method == http.MethodGet:
		q := r.URL.Query()
		offset, _ := strconv.Atoi(q.Get("offset"))
		limit := 20
		if l := q.Get("limit"); l != "" {
			limit, _ = strconv.Atoi(l)
		}
		uids := make([]string, 0, len(s.indexes))
		for uid := range s.indexes {
			uids = append(uids, uid)
		}
		sort.Strings(uids)
		results := []any{}
		for i := offset; i < min(len(uids), offset+limit); i++ {
			ix := s.indexes[uids[i]]
			results = append(results, map[string]any{"uid": ix.uid, "primaryKey": ix.primaryKey,
				"createdAt": ix.created.Format(time.RFC3339Nano), "updatedAt": ix.created.Format(time.RFC3339Nano)})
		}
		return jsonAnswer(200, map[string]any{"results": results, "offset": offset, "limit": limit, "total": len(uids)})
	case p == "/multi-search" && r.Method == http.MethodPost:
		return s.multiSearch(body)
	}
	if m := taskPath.FindStringSubmatch(p); m != nil {
		n, _ := strconv.Atoi(m[1])
		if n >= len(s.tasks) {
			return failure(404, "task_not_found", fmt.Sprintf("Task `%d` not found.", n))
		}
		return jsonAnswer(200, s.tasks[n])
	}
	m := idxPath.FindStringSubmatch(p)
	if m == nil {
		return failure(404, "not_found", "not found")
	}
	uid, rest := m[1], m[2]
	ix := s.indexes[uid]
	missing := failure(404, "index_not_found", fmt.Sprintf("Index `%s` not found.", uid))
	switch {
	case rest == "" && r.Method == http.MethodDelete:
		return s.enqueue(uid, "indexDeletion", func() (map[string]any, map[string]any) {
			if ix == nil {
				return nil, errorBody("index_not_found", fmt.Sprintf("Index `%s` not found.", uid))
			}
			n := len(ix.docs)
			delete(s.indexes, uid)
			return map[string]any{"deletedDocuments": n}, nil
		})
	case rest == "/settings" && r.Method == http.MethodPatch:
		var set map[string]json.RawMessage
		if err := json.Unmarshal(body, &set); err != nil {
			return failure(400, "bad_request", err.Error())
		}
		return s.enqueue(uid, "settingsUpdate", func() (map[string]any, map[string]any) {
			if ix == nil {
				ix = s.newIndex(uid)
			}
			return nil, ix.apply(set)
		})
	case rest == "/documents" && r.Method == http.MethodPost:
		var docs []map[string]any
		if err := json.Unmarshal(body, &docs); err != nil {
			return failure(400, "malformed_payload", err.Error())
		}
		return s.enqueue(uid, "documentAdditionOrUpdate", func() (map[string]any, map[string]any) {
			if ix == nil {
				ix = s.newIndex(uid)
			}
			if fail := ix.add(docs); fail != nil {
				return map[string]any{"receivedDocuments": len(docs), "indexedDocuments": 0}, fail
			}
			return map[string]any{"receivedDocuments": len(docs), "indexedDocuments": len(docs)}, nil
		})
	}
	if ix == nil {
		return missing
	}
	switch {
	case rest == "/documents/fetch" && r.Method == http.MethodPost:
		return ix.fetch(body)
	case rest == "/documents/delete" && r.Method == http.MethodPost:
		var req struct {
			Filter string `json:"filter"`
		}
		if err := json.Unmarshal(body, &req); err != nil || strings.TrimSpace(req.Filter) == "" {
			return failure(400, "invalid_document_filter", "the fake takes a filter string")
		}
		pred, err := ix.parseFilter(req.Filter)
		if err != nil {
			return failure(400, "invalid_document_filter", err.Error())
		}
		return s.enqueue(uid, "documentDeletion", func() (map[string]any, map[string]any) {
			n := 0
			for id, d := range ix.docs {
				if pred.match(d) {
					delete(ix.docs, id)
					n++
				}
			}
			return map[string]any{"providedIds": 0, "deletedDocuments": n, "originalFilter": strconv.Quote(req.Filter)}, nil
		})
	case strings.HasPrefix(rest, "/documents/") && r.Method == http.MethodGet:
		d := ix.docs[strings.TrimPrefix(rest, "/documents/")]
		if d == nil {
			return failure(404, "document_not_found", "Document `"+strings.TrimPrefix(rest, "/documents/")+"` not found.")
		}
		return jsonAnswer(200, project(d, nil, r.URL.Query().Get("retrieveVectors") == "true"))
	case strings.HasPrefix(rest, "/documents/") && r.Method == http.MethodDelete:
		id := strings.TrimPrefix(rest, "/documents/")
		return s.enqueue(uid, "documentDeletion", func() (map[string]any, map[string]any) {
			n := 0
			if ix.docs[id] != nil {
				delete(ix.docs, id)
				n = 1
			}
			return map[string]any{"providedIds": 1, "deletedDocuments": n}, nil
		})
	}
	return failure(404, "not_found", "not found")
}

func (s *Server) newIndex(uid string) *index {
	ix := &index{uid: uid, created: time.Now().UTC(), docs: map[string]map[string]any{}, seq: map[string]int{},
		filterable: map[string]bool{}, typos: true, prefix: true, dims: map[string]int{}, words: map[string]map[string]int{}}
	s.indexes[uid] = ix
	return ix
}

// apply applies settings; nil when they are valid.
func (ix *index) apply(set map[string]json.RawMessage) map[string]any {
	bad := func(code string, err error) map[string]any { return errorBody(code, err.Error()) }
	for k, raw := range set {
		switch k {
		case "filterableAttributes":
			var attrs []string
			if err := json.Unmarshal(raw, &attrs); err != nil {
				return bad("invalid_settings_filterable_attributes", err)
			}
			ix.filterable = map[string]bool{}
			for _, a := range attrs {
				ix.filterable[a] = true
			}
		case "searchableAttributes":
			clear(ix.words)
			if err := json.Unmarshal(raw, &ix.searchable); err != nil {
				return bad("invalid_settings_searchable_attributes", err)
			}
		case "typoTolerance":
			var t struct {
				Enabled *bool `json:"enabled"`
			}
			if err := json.Unmarshal(raw, &t); err != nil {
				return bad("invalid_settings_typo_tolerance", err)
			}
			if t.Enabled != nil {
				ix.typos = *t.Enabled
			}
		case "prefixSearch":
			var p string
			if err := json.Unmarshal(raw, &p); err != nil {
				return bad("invalid_settings_prefix_search", err)
			}
			ix.prefix = p != "disabled"
		case "embedders":
			var es map[string]struct {
				Source     string `json:"source"`
				Dimensions int    `json:"dimensions"`
			}
			if err := json.Unmarshal(raw, &es); err != nil {
				return bad("invalid_settings_embedders", err)
			}
			for name, e := range es {
				if e.Source != "userProvided" || e.Dimensions <= 0 {
					return bad("invalid_settings_embedders", fmt.Errorf("the fake takes userProvided embedders with dimensions"))
				}
				ix.dims[name] = e.Dimensions
			}
		case "pagination":
		default:
			return bad("bad_request", fmt.Errorf("the fake does not take the setting %q", k))
		}
	}
	return nil
}

// add checks every document, then adds or replaces them all; a document
// that fails fails the whole addition.
func (ix *index) add(docs []map[string]any) map[string]any {
	pk := ix.primaryKey
	if pk == "" {
		pk = "id"
	}
	for _, d := range docs {
		id, ok := d[pk].(string)
		if !ok || !docIDRE.MatchString(id) {
			return errorBody("invalid_document_id", fmt.Sprintf("Document identifier `%v` is invalid.", d[pk]))
		}
		if vs, ok := d["_vectors"]; ok {
			m, ok := vs.(map[string]any)
			if !ok {
				return errorBody("invalid_vectors_type", "_vectors must be an object")
			}
			for name, v := range m {
				dims, known := ix.dims[name]
				if !known {
					return errorBody("invalid_vectors_type", fmt.Sprintf("no embedder %q", name))
				}
				if v == nil {
					continue
				}
				l, ok := v.([]any)
				if !ok || len(l) != dims {
					return errorBody("invalid_vector_dimensions", fmt.Sprintf("expected a vector of %d dimensions", dims))
				}
			}
		}
	}
	for _, d := range docs {
		id := d[pk].(string)
		if _, ok := ix.seq[id]; !ok {
			ix.next++
			ix.seq[id] = ix.next
		}
		ix.docs[id] = d
	}
	clear(ix.words)
	return nil
}

// vectorOf is a document's vector for an embedder, nil when it has none.
func vectorOf(d map[string]any, emb string) []float64 {
	vs, _ := d["_vectors"].(map[string]any)
	l, _ := vs[emb].([]any)
	if len(l) == 0 {
		return nil
	}
	out := make([]float64, len(l))
	for i, x := range l {
		out[i], _ = x.(float64)
	}
	return out
}

// project returns a document's fields (all when nil), with _vectors as
// retrieveVectors shows them or without them.
func project(d map[string]any, fields []string, vectors bool) map[string]any {
	out := map[string]any{}
	if fields == nil {
		for k, v := range d {
			out[k] = v
		}
	} else {
		for _, f := range fields {
			if v, ok := d[f]; ok {
				out[f] = v
			}
		}
	}
	delete(out, "_vectors")
	if vectors {
		vs := map[string]any{}
		m, _ := d["_vectors"].(map[string]any)
		for name, v := range m {
			embs := []any{}
			if v != nil {
				embs = append(embs, v)
			}
			vs[name] = map[string]any{"embeddings": embs, "regenerate": false}
		}
		out["_vectors"] = vs
	}
	return out
}

// ordered lists the documents a filter matches, in insertion order.
func (ix *index) ordered(f string) ([]map[string]any, error) {
	var p pred = always{}
	if strings.TrimSpace(f) != "" {
		var err error
		if p, err = ix.parseFilter(f); err != nil {
			return nil, err
		}
	}
	var out []map[string]any
	for _, d := range ix.docs {
		if p.match(d) {
			out = append(out, d)
		}
	}
	pk := ix.primaryKey
	sort.Slice(out, func(i, j int) bool { return ix.seq[out[i][pk].(string)] < ix.seq[out[j][pk].(string)] })
	return out, nil
}

func (ix *index) fetch(body []byte) answer {
	var req struct {
		Offset          int      `json:"offset"`
		Limit           *int     `json:"limit"`
		Fields          []string `json:"fields"`
		RetrieveVectors bool     `json:"retrieveVectors"`
		IDs             []string `json:"ids"`
		Filter          string   `json:"filter"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return failure(400, "bad_request", err.Error())
	}
	docs, err := ix.ordered(req.Filter)
	if err != nil {
		return failure(400, "invalid_document_filter", err.Error())
	}
	if req.IDs != nil {
		want := map[string]bool{}
		for _, id := range req.IDs {
			want[id] = true
		}
		var kept []map[string]any
		for _, d := range docs {
			if want[d[ix.primaryKey].(string)] {
				kept = append(kept, d)
			}
		}
		docs = kept
	}
	limit := 20
	if req.Limit != nil {
		limit = *req.Limit
	}
	results := []any{}
	for i := req.Offset; i < min(len(docs), req.Offset+limit); i++ {
		results = append(results, project(docs[i], req.Fields, req.RetrieveVectors))
	}
	return jsonAnswer(200, map[string]any{"results": results, "offset": req.Offset, "limit": limit, "total": len(docs)})
}

// query is the part of a search query the fake reads.
type query struct {
	IndexUID             string          `json:"indexUid"`
	Q                    *string         `json:"q"`
	Offset               int             `json:"offset"`
	Limit                *int            `json:"limit"`
	Page                 *int            `json:"page"`
	HitsPerPage          *int            `json:"hitsPerPage"`
	AttributesToRetrieve []string        `json:"attributesToRetrieve"`
	Filter               json.RawMessage `json:"filter"`
	MatchingStrategy     string          `json:"matchingStrategy"`
	AttributesToSearchOn []string        `json:"attributesToSearchOn"`
	Vector               []float64       `json:"vector"`
	Hybrid               *struct {
		Embedder      string   `json:"embedder"`
		SemanticRatio *float64 `json:"semanticRatio"`
	} `json:"hybrid"`
	RetrieveVectors  bool `json:"retrieveVectors"`
	ShowRankingScore bool `json:"showRankingScore"`
}

func (s *Server) multiSearch(body []byte) answer {
	var req struct {
		Queries    []query         `json:"queries"`
		Federation json.RawMessage `json:"federation"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return failure(400, "bad_request", err.Error())
	}
	if len(req.Federation) > 0 && string(req.Federation) != "null" {
		return failure(400, "bad_request", "the fake does not federate")
	}
	results := []any{}
	for i, q := range req.Queries {
		ix := s.indexes[q.IndexUID]
		if ix == nil {
			return failure(404, "index_not_found", fmt.Sprintf("Inside `.queries[%d]`: Index `%s` not found.", i, q.IndexUID))
		}
		res, fail := ix.search(q)
		if fail != nil {
			return jsonAnswer(400, fail)
		}
		results = append(results, res)
	}
	return jsonAnswer(200, map[string]any{"results": results})
}

type scored struct {
	doc   map[string]any
	score float64
}

func (ix *index) search(q query) (map[string]any, map[string]any) {
	var f string
	if len(q.Filter) > 0 && string(q.Filter) != "null" {
		if err := json.Unmarshal(q.Filter, &f); err != nil {
			return nil, errorBody("invalid_search_filter", "the fake takes a filter string")
		}
	}
	pool, err := ix.ordered(f)
	if err != nil {
		return nil, errorBody("invalid_search_filter", err.Error())
	}
	text := q.Q != nil && strings.TrimSpace(*q.Q) != ""
	ratio := 0.0
	if q.Hybrid != nil {
		ratio = 0.5
		if q.Hybrid.SemanticRatio != nil {
			ratio = *q.Hybrid.SemanticRatio
		}
		if _, ok := ix.dims[q.Hybrid.Embedder]; !ok {
			return nil, errorBody("invalid_search_embedder", fmt.Sprintf("Cannot find embedder with name `%s`.", q.Hybrid.Embedder))
		}
		if len(q.Vector) != ix.dims[q.Hybrid.Embedder] {
			return nil, errorBody("invalid_vector_dimensions", "the query vector's dimensions do not match the embedder's")
		}
	} else if q.Vector != nil {
		return nil, errorBody("missing_search_hybrid", "`vector` needs `hybrid`")
	}
	var kw, sem []scored
	if text && ratio < 1 {
		if ix.typos || ix.prefix {
			return nil, errorBody("bad_request", "the fake matches whole words only: turn typo tolerance and prefix search off")
		}
		attrs := ix.searchable
		if q.AttributesToSearchOn != nil {
			attrs = q.AttributesToSearchOn
		}
		words := strings.Fields(*q.Q)
		if len(words) > 10 {
			words = words[:10] // Meilisearch considers the first ten words
		}
		for _, d := range pool {
			count := ix.count(d, attrs)
			n, occ := 0, 0
			for _, w := range words {
				if count[w] == 0 {
					break
				}
				n++
				occ += count[w]
			}
			if n == 0 || (q.MatchingStrategy == "all" && n < len(words)) {
				continue
			}
			// Documents holding more of the first words come first, then
			// those holding them more often.
			kw = append(kw, scored{d, (float64(n) + float64(occ)/float64(occ+1)) / float64(len(words)+1)})
		}
		sort.SliceStable(kw, func(i, j int) bool { return kw[i].score > kw[j].score })
	}
	if q.Hybrid != nil && ratio > 0 {
		var without []scored
		for _, d := range pool {
			v := vectorOf(d, q.Hybrid.Embedder)
			if v == nil {
				without = append(without, scored{d, 0}) // returned last
				continue
			}
			sem = append(sem, scored{d, (1 + cosine(v, q.Vector)) / 2})
		}
		sort.SliceStable(sem, func(i, j int) bool { return sem[i].score > sem[j].score })
		sem = append(sem, without...)
	}
	var all []scored
	switch {
	case kw != nil && sem != nil:
		seen := map[string]bool{}
		for _, x := range kw {
			x.score *= 1 - ratio
			all = append(all, x)
		}
		for _, x := range sem {
			x.score *= ratio
			all = append(all, x)
		}
		sort.SliceStable(all, func(i, j int) bool { return all[i].score > all[j].score })
		kept := all[:0]
		for _, x := range all {
			id := x.doc[ix.primaryKey].(string)
			if !seen[id] {
				seen[id] = true
				kept = append(kept, x)
			}
		}
		all = kept
	case sem != nil:
		all = sem
	case text:
		all = kw
	default:
		for _, d := range pool {
			all = append(all, scored{d, 1})
		}
	}
	offset, limit := q.Offset, 20
	if q.Limit != nil {
		limit = *q.Limit
	}
	paged := q.Page != nil || q.HitsPerPage != nil
	if paged {
		page, per := 1, 20
		if q.Page != nil {
			page = *q.Page
		}
		if q.HitsPerPage != nil {
			per = *q.HitsPerPage
		}
		offset, limit = max(page-1, 0)*per, per
	}
	hits := []any{}
	for i := offset; i < min(len(all), offset+limit); i++ {
		h := project(all[i].doc, q.AttributesToRetrieve, q.RetrieveVectors)
		if q.ShowRankingScore {
			h["_rankingScore"] = all[i].score
		}
		hits = append(hits, h)
	}
	qs := ""
	if q.Q != nil {
		qs = *q.Q
	}
	res := map[string]any{"indexUid": ix.uid, "hits": hits, "query": qs, "processingTimeMs": 0}
	if paged {
		per := limit
		pages := 0
		if per > 0 {
			pages = (len(all) + per - 1) / per
		}
		res["page"], res["hitsPerPage"], res["totalHits"], res["totalPages"] = max(offset/max(per, 1)+1, 1), per, len(all), pages
	} else {
		res["offset"], res["limit"], res["estimatedTotalHits"] = offset, limit, len(all)
	}
	return res, nil
}

func cosine(a, b []float64) float64 {
	var dot, na, nb float64
	for i := range b {
		dot += a[i] * b[i]
		na += a[i] * a[i]
		nb += b[i] * b[i]
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}
