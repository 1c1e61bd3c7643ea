// Package opensearchtest is a fake OpenSearch, or Elasticsearch, for
// tests: it keeps indices of JSON documents in memory and answers the part
// of the REST API that Quarry's opensearch store uses, with the engine's
// semantics where they shape results: the query DSL's bool, term, terms,
// range, exists, match_all and match_none clauses as Lucene evaluates
// them, match as Lucene's BM25 (k1 = 1.2, b = 0.75, idf = ln(1 + (N − df +
// 0.5)/(df + 0.5))), knn as an exact search with the engine's scores
// (cosine: (1 + cos)/2 on both) and its filter applied inside, and the
// engine's fusion: OpenSearch's hybrid query with a search pipeline's
// score-ranker (RRF) or min-max normalisation, Elasticsearch's rrf
// retriever.
//
// Every request is validated against the engine's published OpenAPI
// document before it is served, and every answer against the same
// document; a request that does not conform is answered 400 and recorded,
// and Invalid reports them. NDJSON bodies (_bulk, _msearch) are validated
// as the arrays of lines the document describes. The documents, pruned to
// the endpoints the store calls by prune.go, are:
//
//   - openapi.json: opensearch-project/opensearch-api-specification at
//     commit fbe9ede (2026-08-21), merged for OpenSearch 3.5.0;
//   - elasticsearch.json: elastic/elasticsearch-specification at commit
//     9d9b9a5 (2026-08-20), output/openapi/elasticsearch-serverless-openapi.json.
//     The repository's document for self-managed clusters is not
//     published in a form that could be fetched here; the serverless one
//     describes the same endpoints, bodies and query DSL for everything
//     the store sends, and leaves out only parameters the store does not
//     use.
//
// Text analysis is approximated by Quarry's own analyzer of the index's
// language (the engines' built-in language analyzers use the same stop
// word lists' idea and Porter-family stemmers, but not exactly Quarry's),
// so keyword rankings here are Lucene's formula over Quarry's terms.
//
// No OpenSearch or Elasticsearch server runs here (each needs a JVM
// distribution that cannot be fetched), so this fake is how Quarry checks
// its wire format for both.
package opensearchtest

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/internal/openapicheck"
)

//go:embed openapi.json
var spec []byte

//go:embed elasticsearch.json
var esSpec []byte

// Version is the OpenSearch version the fake reports.
const Version = "3.5.0"

// ElasticsearchVersion is the version the Elasticsearch flavour reports.
const ElasticsearchVersion = "9.5.0"

// Server is a fake OpenSearch.
type Server struct {
	*httptest.Server
	v *openapicheck.Checker

	mu        sync.Mutex
	indices   map[string]*index
	pipelines map[string]map[string]any
	invalid   []string
	calls     map[string]int
	user, pw  string
	apiKey    string
	elastic   bool // the Elasticsearch flavour
}

type index struct {
	elastic   bool
	mappings  map[string]any
	props     map[string]prop
	docs      map[string]*doc
	seq       int                       // bumped by every write, as Lucene's doc ids grow
	anz       map[string]*bm25.Analyzer // by text field
	stats     map[string]*fieldStats    // by text field, as of statsAt
	statsAt   int
	queries   map[string][]string // analysed query texts
	byWrite   []*doc              // docs in write order, as of byWriteAt
	byWriteAt int
}

// fieldStats are a text field's BM25 statistics over the index.
type fieldStats struct {
	n, avg float64
	df     map[string]float64
}

// stats returns a text field's statistics, counted again after a write.
func (ix *index) fieldStats(field string) *fieldStats {
	if ix.statsAt != ix.seq {
		ix.stats, ix.statsAt = map[string]*fieldStats{}, ix.seq
	}
	if st := ix.stats[field]; st != nil {
		return st
	}
	st := &fieldStats{df: map[string]float64{}}
	total := 0.0
	for _, d := range ix.docs {
		tf, ok := d.tf[field]
		if !ok {
			continue
		}
		st.n++
		total += float64(len(d.terms[field]))
		for t := range tf {
			st.df[t]++
		}
	}
	if st.n > 0 {
		st.avg = total / st.n
	}
	ix.stats[field] = st
	return st
}

// prop is a mapped field.
type prop struct {
	typ      string // keyword, long, double, boolean, text, knn_vector, dense_vector
	space    string // a knn_vector's space_type, a dense_vector's similarity
	dims     int    // a vector's dimension
	analyzer string
}

type doc struct {
	id     string
	seq    int
	source map[string]any
	raw    json.RawMessage
	terms  map[string][]string        // analysed text fields
	tf     map[string]map[string]int  // their term frequencies
	vecs   map[string][]float64       // knn_vector fields
	lean   map[string]json.RawMessage // the source without some fields, by their names
}

// Option configures a Server.
type Option func(*Server)

// Elasticsearch makes the fake an Elasticsearch: requests and answers are
// validated against Elasticsearch's OpenAPI document, vectors are
// dense_vector fields searched by Elasticsearch's knn query, and hybrid
// search is the rrf retriever; OpenSearch's knn_vector, hybrid query and
// search pipelines are unknown to it.
func Elasticsearch() Option { return func(s *Server) { s.elastic = true } }

// WithAPIKey makes the fake refuse requests without this Elasticsearch API
// key ("Authorization: ApiKey KEY").
func WithAPIKey(key string) Option { return func(s *Server) { s.apiKey = key } }

// WithBasicAuth makes the fake refuse requests without these credentials,
// as a cluster with the security plugin does.
func WithBasicAuth(user, password string) Option {
	return func(s *Server) { s.user, s.pw = user, password }
}

// New starts a fake; Close stops it.
func New(opts ...Option) (*Server, error) {
	s := &Server{indices: map[string]*index{}, pipelines: map[string]map[string]any{}, calls: map[string]int{}}
	for _, o := range opts {
		o(s)
	}
	check := openSearchChecker
	if s.elastic {
		check = elasticsearchChecker
	}
	var err error
	if s.v, err = check(); err != nil {
		return nil, fmt.Errorf("opensearchtest: %w", err)
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s, nil
}

// The checkers are built once per test binary: reading a document takes
// seconds, and a Checker is immutable and safe for concurrent use.
var (
	openSearchChecker = sync.OnceValues(func() (*openapicheck.Checker, error) {
		doc, err := anyOf(spec)
		if err != nil {
			return nil, err
		}
		return openapicheck.New(doc)
	})
	elasticsearchChecker = sync.OnceValues(func() (*openapicheck.Checker, error) {
		raw, err := shortcuts(esSpec)
		if err != nil {
			return nil, err
		}
		doc, err := anyOf(raw)
		if err != nil {
			return nil, err
		}
		return openapicheck.New(doc)
	})
)

// anyOf reads the document's unions as anyOf. It writes them as oneOf,
// but their alternatives overlap (an _msearch header and a search body
// both match {}; a sort {"id": "asc"} is both a field with a direction and
// sort options), so oneOf would refuse every request OpenSearch accepts;
// OpenSearch itself takes the first alternative a value parses as.
func anyOf(doc []byte) ([]byte, error) {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return nil, err
	}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if one, ok := x["oneOf"]; ok {
				delete(x, "oneOf")
				x["anyOf"] = one
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(v)
	return json.Marshal(v)
}

// shortcutProperties are the query clauses whose class in
// elasticsearch-specification's TypeScript source (specification/_types/
// query_dsl/term.ts and fulltext.ts at the commit of elasticsearch.json)
// carries @shortcut_property: Elasticsearch takes the property's value
// alone for the whole clause ({"term": {"f": "v"}} for {"term": {"f":
// {"value": "v"}}}), but the OpenAPI output drops the annotation.
var shortcutProperties = map[string]string{
	"FuzzyQuery": "value", "PrefixQuery": "value", "RegexpQuery": "value", "TermQuery": "value", "WildcardQuery": "value",
	"CommonTermsQuery": "query", "MatchQuery": "query", "MatchBoolPrefixQuery": "query",
	"MatchPhraseQuery": "query", "MatchPhrasePrefixQuery": "query",
}

// shortcuts puts the shortcut forms back into Elasticsearch's document:
// each such clause is the property's own schema or the full object.
func shortcuts(doc []byte) ([]byte, error) {
	var d map[string]any
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, err
	}
	comps, _ := d["components"].(map[string]any)
	schemas, _ := comps["schemas"].(map[string]any)
	for class, prop := range shortcutProperties {
		name := "_types.query_dsl." + class
		full, ok := schemas[name].(map[string]any)
		if !ok {
			continue // a clause the pruned document does not reach
		}
		var short any
		for _, part := range clauses(full["allOf"]) {
			if props, ok := part.(map[string]any)["properties"].(map[string]any); ok && props[prop] != nil {
				short = props[prop]
			}
		}
		if short == nil {
			return nil, fmt.Errorf("%s has no property %q", name, prop)
		}
		schemas[name] = map[string]any{"anyOf": []any{short, full}}
	}
	return json.Marshal(d)
}

// StoreURL returns the opensearch:// (or elasticsearch://) URL of the
// fake, with extra query parameters.
func (s *Server) StoreURL(query string) string {
	scheme := "opensearch://"
	if s.elastic {
		scheme = "elasticsearch://"
	}
	u := scheme + strings.TrimPrefix(s.Server.URL, "http://")
	if query != "" {
		u += "?" + query
	}
	return u
}

// Invalid returns the requests and answers that did not conform to the
// OpenAPI document, each with the validator's reasons.
func (s *Server) Invalid() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.invalid)
}

// Calls returns how many requests each endpoint got, by method and path
// pattern ("POST /{index}/_search").
func (s *Server) Calls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.calls))
	for k, v := range s.calls {
		out[k] = v
	}
	return out
}

// failure is an error answer in OpenSearch's shape.
type failure struct {
	code int
	typ  string
	msg  string
}

func fail(code int, typ, format string, args ...any) *failure {
	return &failure{code: code, typ: typ, msg: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) *failure {
	return fail(http.StatusBadRequest, "parsing_exception", format, args...)
}

// maxBody is OpenSearch's default http.max_content_length.
const maxBody = 100 << 20

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil || len(body) > maxBody {
		s.reply(w, r, nil, fail(http.StatusRequestEntityTooLarge, "content_too_long_exception", "request too large"))
		return
	}
	if s.user != "" {
		if u, p, ok := r.BasicAuth(); !ok || u != s.user || p != s.pw {
			s.reply(w, r, nil, fail(http.StatusUnauthorized, "security_exception", "missing authentication credentials"))
			return
		}
	}
	if s.apiKey != "" && r.Header.Get("Authorization") != "ApiKey "+s.apiKey {
		s.reply(w, r, nil, fail(http.StatusUnauthorized, "security_exception", "unable to authenticate with provided credentials"))
		return
	}
	check := body
	if ct := r.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/x-ndjson") {
		arr, err := ndjsonArray(body)
		if err != nil {
			s.reply(w, r, nil, badRequest("%v", err))
			return
		}
		check = arr
	}
	vr := r
	if s.elastic && check != nil && !bytes.Equal(check, body) {
		// Elasticsearch's document gives _bulk and _msearch bodies as
		// JSON arrays of their lines, under application/json only.
		vr = r.Clone(r.Context())
		vr.Header.Set("Content-Type", "application/json")
	}
	err = s.v.Request(vr, check)
	if err == nil && strings.HasSuffix(r.URL.Path, "/_msearch") {
		err = s.checkSearches(r, body)
	}
	if err != nil {
		s.mu.Lock()
		s.invalid = append(s.invalid, err.Error())
		s.mu.Unlock()
		s.reply(w, r, nil, badRequest("%v", err))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	res, st := s.route(r, body)
	s.reply(w, r, res, st)
}

// checkSearches validates each body of an _msearch as the body of a
// _search on the same index: the document's item union (header or body)
// matches any object, so it checks nothing by itself.
func (s *Server) checkSearches(r *http.Request, body []byte) error {
	var lines [][]byte
	for _, l := range bytes.Split(body, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			lines = append(lines, l)
		}
	}
	for i := 1; i < len(lines); i += 2 {
		u := *r.URL
		u.Path = strings.TrimSuffix(u.Path, "/_msearch") + "/_search"
		u.RawQuery = ""
		sr, err := http.NewRequestWithContext(r.Context(), http.MethodPost, u.String(), nil)
		if err != nil {
			return err
		}
		sr.Header.Set("Content-Type", "application/json")
		if err := s.v.Request(sr, lines[i]); err != nil {
			return fmt.Errorf("_msearch body %d: %w", i/2+1, err)
		}
	}
	return nil
}

// ndjsonArray turns newline-delimited JSON into one JSON array.
func ndjsonArray(body []byte) ([]byte, error) {
	var items []json.RawMessage
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), maxBody)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if !json.Valid(line) {
			return nil, fmt.Errorf("NDJSON line %d is not JSON", len(items)+1)
		}
		items = append(items, slices.Clone(line))
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !bytes.HasSuffix(body, []byte("\n")) {
		return nil, errors.New("the bulk request must be terminated by a newline [\\n]")
	}
	return json.Marshal(items)
}

// reply writes an answer and validates a successful one against the
// document. It is called with s.mu held, except for early refusals.
func (s *Server) reply(w http.ResponseWriter, r *http.Request, result any, f *failure) {
	code := http.StatusOK
	out := result
	if f != nil {
		code = f.code
		cause := map[string]any{"type": f.typ, "reason": f.msg}
		out = map[string]any{"error": map[string]any{"root_cause": []any{cause}, "type": f.typ, "reason": f.msg}, "status": f.code}
	}
	if c, ok := result.(created); ok {
		code, out = http.StatusCreated, c.v
	}
	var data []byte
	if out != nil {
		var err error
		if data, err = json.Marshal(out); err != nil {
			code, data = http.StatusInternalServerError, []byte(`{"error":"encode","status":500}`)
		}
	}
	if code < 300 && r.Method != http.MethodHead {
		if err := s.v.Response(r, code, "application/json", data); err != nil {
			s.invalid = append(s.invalid, err.Error())
		}
	}
	if data != nil {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	}
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		w.Write(data)
	}
}

// created is a result answered 201.
type created struct{ v any }

func decode(body []byte, v any) *failure {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return badRequest("failed to parse the request body: %v", err)
	}
	return nil
}

func (s *Server) route(r *http.Request, body []byte) (any, *failure) {
	p := strings.Trim(r.URL.Path, "/")
	parts := strings.Split(p, "/")
	pattern := "/" + p
	if p != "" && !strings.HasPrefix(parts[0], "_") {
		pattern = "/{index}" + strings.TrimPrefix("/"+p, "/"+parts[0])
	}
	if strings.HasPrefix(p, "_search/pipeline/") {
		pattern = "/_search/pipeline/{id}"
	}
	s.calls[r.Method+" "+pattern]++
	switch {
	case p == "" && r.Method == http.MethodGet && s.elastic:
		return map[string]any{
			"name": "fake-node", "cluster_name": "quarry-fake", "cluster_uuid": "00000000000000000000aa",
			"version": map[string]any{
				"number": ElasticsearchVersion, "build_flavor": "default", "build_type": "tar", "build_hash": "fake",
				"build_date": "2026-08-01T00:00:00.000Z", "build_snapshot": false, "lucene_version": "10.3.0",
				"minimum_wire_compatibility_version": "8.19.0", "minimum_index_compatibility_version": "8.0.0",
			},
			"tagline": "You Know, for Search",
		}, nil
	case p == "" && r.Method == http.MethodGet:
		return map[string]any{
			"name": "fake-node", "cluster_name": "quarry-fake", "cluster_uuid": "00000000000000000000aa",
			"version": map[string]any{
				"distribution": "opensearch", "number": Version, "build_type": "tar", "build_hash": "fake",
				"build_date": "2026-08-01T00:00:00.000Z", "build_snapshot": false, "lucene_version": "10.2.2",
				"minimum_wire_compatibility_version": "2.19.0", "minimum_index_compatibility_version": "2.0.0",
			},
			"tagline": "The OpenSearch Project: https://opensearch.org/",
		}, nil
	case pattern == "/_search/pipeline/{id}" && r.Method == http.MethodPut:
		var pl map[string]any
		if f := decode(body, &pl); f != nil {
			return nil, f
		}
		s.pipelines[parts[2]] = pl
		return map[string]any{"acknowledged": true}, nil
	case pattern == "/_search/pipeline/{id}" && r.Method == http.MethodGet:
		pl, ok := s.pipelines[parts[2]]
		if !ok {
			return nil, fail(http.StatusNotFound, "resource_not_found_exception", "Search pipeline [%s] not found", parts[2])
		}
		return map[string]any{parts[2]: pl}, nil
	case p == "_bulk":
		return s.bulk(r, body)
	case len(parts) == 1 && r.Method == http.MethodPut:
		return s.createIndex(parts[0], body)
	}
	if len(parts) == 0 || strings.HasPrefix(parts[0], "_") {
		return nil, fail(http.StatusNotFound, "illegal_argument_exception", "the fake does not serve %s %s", r.Method, r.URL.Path)
	}
	names := s.resolve(parts[0])
	if len(parts) == 1 && r.Method == http.MethodDelete && r.URL.Query().Get("ignore_unavailable") == "true" {
		for _, n := range names {
			delete(s.indices, n)
		}
		return map[string]any{"acknowledged": true}, nil
	}
	if len(names) == 0 && !(len(parts) == 2 && parts[1] == "_mapping" && strings.Contains(parts[0], "*")) {
		return nil, fail(http.StatusNotFound, "index_not_found_exception", "no such index [%s]", parts[0])
	}
	rest := strings.Join(parts[1:], "/")
	if rest == "_mapping" && r.Method == http.MethodGet {
		out := map[string]any{}
		for _, n := range names {
			out[n] = map[string]any{"mappings": s.indices[n].mappings}
		}
		return out, nil
	}
	if len(names) != 1 {
		return nil, badRequest("the fake serves one index at a time, not [%s]", parts[0])
	}
	name, ix := names[0], s.indices[names[0]]
	switch r.Method + " " + rest {
	case "HEAD ":
		return nil, nil
	case "GET ":
		return map[string]any{name: map[string]any{"aliases": map[string]any{}, "mappings": ix.mappings,
			"settings": map[string]any{"index": map[string]any{"knn": "true", "number_of_shards": "1", "number_of_replicas": "1"}}}}, nil
	case "DELETE ":
		delete(s.indices, name)
		return map[string]any{"acknowledged": true}, nil
	case "POST _refresh", "GET _refresh":
		return map[string]any{"_shards": shards()}, nil
	case "POST _bulk":
		return s.bulk(r, body)
	case "POST _search", "GET _search":
		var q map[string]any
		if f := decode(body, &q); f != nil {
			return nil, f
		}
		return s.search(name, ix, q, r.URL.Query().Get("search_pipeline"))
	case "POST _msearch":
		return s.msearch(name, ix, body)
	case "POST _count", "GET _count":
		var q map[string]any
		if f := decode(body, &q); f != nil {
			return nil, f
		}
		ms, f := ix.matching(q["query"])
		if f != nil {
			return nil, f
		}
		return map[string]any{"count": len(ms), "_shards": shards()}, nil
	case "POST _delete_by_query":
		var q map[string]any
		if f := decode(body, &q); f != nil {
			return nil, f
		}
		ms, f := ix.matching(q["query"])
		if f != nil {
			return nil, f
		}
		for _, d := range ms {
			delete(ix.docs, d.id)
		}
		ix.seq++
		return map[string]any{"took": 1, "timed_out": false, "total": len(ms), "deleted": len(ms), "batches": 1,
			"version_conflicts": 0, "noops": 0, "retries": map[string]any{"bulk": 0, "search": 0},
			"throttled_millis": 0, "requests_per_second": -1.0, "throttled_until_millis": 0, "failures": []any{}}, nil
	case "POST _mget", "GET _mget":
		var q struct {
			IDs []string `json:"ids"`
		}
		if f := decode(body, &q); f != nil {
			return nil, f
		}
		docs := make([]any, len(q.IDs))
		for i, id := range q.IDs {
			d, ok := ix.docs[id]
			if !ok {
				docs[i] = map[string]any{"_index": name, "_id": id, "found": false}
				continue
			}
			docs[i] = map[string]any{"_index": name, "_id": id, "_version": 1, "_seq_no": d.seq, "_primary_term": 1,
				"found": true, "_source": d.raw}
		}
		return map[string]any{"docs": docs}, nil
	}
	return nil, fail(http.StatusNotFound, "illegal_argument_exception", "the fake does not serve %s %s", r.Method, r.URL.Path)
}

func shards() map[string]any {
	return map[string]any{"total": 1, "successful": 1, "skipped": 0, "failed": 0}
}

// resolve lists the indices a name or wildcard pattern names.
func (s *Server) resolve(pattern string) []string {
	var out []string
	for _, pat := range strings.Split(pattern, ",") {
		for n := range s.indices {
			if ok, _ := path.Match(pat, n); ok {
				out = append(out, n)
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// vectorProp reads a vector field's mapping as the flavour does: each
// engine knows its own vector type only.
func (s *Server) vectorProp(field string, m map[string]any, p *prop) *failure {
	switch {
	case p.typ == "knn_vector" && s.elastic, p.typ == "dense_vector" && !s.elastic:
		return fail(http.StatusBadRequest, "mapper_parsing_exception", "No handler for type [%s] declared on field [%s]", p.typ, field)
	case p.typ == "dense_vector":
		p.space, _ = m["similarity"].(string)
		if p.space == "" {
			p.space = "cosine"
		}
		p.dims, _ = strconv.Atoi(fmt.Sprint(m["dims"]))
	case p.typ == "knn_vector":
		p.dims, _ = strconv.Atoi(fmt.Sprint(m["dimension"]))
	}
	return nil
}

func (s *Server) createIndex(name string, body []byte) (any, *failure) {
	if _, ok := s.indices[name]; ok {
		return nil, fail(http.StatusBadRequest, "resource_already_exists_exception", "index [%s/fake] already exists", name)
	}
	if name != strings.ToLower(name) || strings.HasPrefix(name, "_") || strings.ContainsAny(name, `\/*?"<>| ,#:`) {
		return nil, fail(http.StatusBadRequest, "invalid_index_name_exception", "Invalid index name [%s]", name)
	}
	var req struct {
		Settings map[string]any `json:"settings"`
		Mappings map[string]any `json:"mappings"`
	}
	if f := decode(body, &req); f != nil {
		return nil, f
	}
	if idx, ok := req.Settings["index"].(map[string]any); s.elastic && ok && idx["knn"] != nil {
		return nil, fail(http.StatusBadRequest, "illegal_argument_exception", "unknown setting [index.knn] please check that any required plugins are installed")
	}
	ix := &index{elastic: s.elastic, mappings: req.Mappings, props: map[string]prop{}, docs: map[string]*doc{}, anz: map[string]*bm25.Analyzer{}}
	if ix.mappings == nil {
		ix.mappings = map[string]any{}
	}
	props, _ := ix.mappings["properties"].(map[string]any)
	for field, raw := range props {
		m, _ := raw.(map[string]any)
		p := prop{}
		p.typ, _ = m["type"].(string)
		p.analyzer, _ = m["analyzer"].(string)
		if method, ok := m["method"].(map[string]any); ok {
			p.space, _ = method["space_type"].(string)
		}
		if st, ok := m["space_type"].(string); ok {
			p.space = st
		}
		if f := s.vectorProp(field, m, &p); f != nil {
			return nil, f
		}
		if p.typ == "knn_vector" {
			knn := false
			if idx, ok := req.Settings["index"].(map[string]any); ok {
				knn = idx["knn"] == true || idx["knn"] == "true"
			}
			if v, ok := req.Settings["index.knn"]; ok {
				knn = v == true || v == "true"
			}
			if !knn {
				return nil, fail(http.StatusBadRequest, "mapper_parsing_exception", "knn_vector field [%s] needs index.knn: true", field)
			}
		}
		if p.typ == "text" {
			lang := p.analyzer
			if lang == "" || lang == "standard" {
				lang = "english"
			}
			a, err := bm25.NewAnalyzer(bm25.AnalyzerConfig{Language: lang})
			if err != nil {
				return nil, fail(http.StatusBadRequest, "mapper_parsing_exception", "analyzer [%s] has not been configured in mappings", p.analyzer)
			}
			ix.anz[field] = a
		}
		ix.props[field] = p
	}
	s.indices[name] = ix
	return map[string]any{"acknowledged": true, "shards_acknowledged": true, "index": name}, nil
}

// bulk applies index and delete actions in order; an action that fails is
// reported in its item and the others still apply, as OpenSearch does.
func (s *Server) bulk(r *http.Request, body []byte) (any, *failure) {
	def := ""
	if parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/"); len(parts) == 2 {
		def = parts[0]
	}
	var lines [][]byte
	for _, l := range bytes.Split(body, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			lines = append(lines, l)
		}
	}
	var items []any
	hadErrors := false
	for i := 0; i < len(lines); i++ {
		var action map[string]struct {
			Index string `json:"_index"`
			ID    string `json:"_id"`
		}
		if f := decode(lines[i], &action); f != nil {
			return nil, f
		}
		for op, meta := range action {
			name := meta.Index
			if name == "" {
				name = def
			}
			item := map[string]any{"_index": name, "_id": meta.ID, "_version": 1, "_primary_term": 1}
			ix := s.indices[name]
			var failed *failure
			switch op {
			case "index", "create":
				i++
				if i >= len(lines) {
					return nil, badRequest("the bulk action on line %d has no document", i)
				}
				if ix == nil {
					failed = fail(http.StatusNotFound, "index_not_found_exception", "no such index [%s]", name)
					break
				}
				if failed = ix.put(meta.ID, lines[i]); failed == nil {
					item["result"], item["status"] = "created", 201
				}
			case "delete":
				if ix == nil {
					failed = fail(http.StatusNotFound, "index_not_found_exception", "no such index [%s]", name)
					break
				}
				if _, ok := ix.docs[meta.ID]; ok {
					delete(ix.docs, meta.ID)
					ix.seq++
					item["result"], item["status"] = "deleted", 200
				} else {
					item["result"], item["status"] = "not_found", 404
				}
			default:
				return nil, badRequest("Malformed action/metadata line [%d], expected one of [create, delete, index, update] but found [%s]", i+1, op)
			}
			if failed != nil {
				hadErrors = true
				item["status"] = failed.code
				item["error"] = map[string]any{"type": failed.typ, "reason": failed.msg}
			} else {
				item["_shards"] = map[string]any{"total": 1, "successful": 1, "failed": 0}
				item["_seq_no"] = 0
			}
			items = append(items, map[string]any{op: item})
		}
	}
	return map[string]any{"took": 1, "errors": hadErrors, "items": items}, nil
}

// put writes a document, checking its fields against the mapping (the
// store maps every field it writes and sets dynamic: strict).
func (ix *index) put(id string, raw []byte) *failure {
	var src map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&src); err != nil {
		return fail(http.StatusBadRequest, "mapper_parsing_exception", "failed to parse: %v", err)
	}
	d := &doc{id: id, source: src, raw: slices.Clone(raw), terms: map[string][]string{}, tf: map[string]map[string]int{}, vecs: map[string][]float64{}}
	strict := ix.mappings["dynamic"] == "strict"
	for field, v := range src {
		p, ok := ix.props[field]
		if !ok {
			if strict {
				return fail(http.StatusBadRequest, "strict_dynamic_mapping_exception", "mapping set to strict, dynamic introduction of [%s] within [_doc] is not allowed", field)
			}
			continue
		}
		if f := p.check(field, v); f != nil {
			return f
		}
		if p.typ == "knn_vector" || p.typ == "dense_vector" {
			d.vecs[field] = floats(v)
			if f := p.checkVector(field, d.vecs[field]); f != nil {
				return f
			}
		}
		if p.typ == "text" {
			s, _ := v.(string)
			d.terms[field] = ix.anz[field].Analyze(s)
			tf := map[string]int{}
			for _, t := range d.terms[field] {
				tf[t]++
			}
			d.tf[field] = tf
		}
	}
	ix.seq++
	d.seq = ix.seq
	ix.docs[id] = d
	return nil
}

// checkVector refuses a vector of the wrong dimension and, for cosine, a
// zero vector, whose direction is undefined.
func (p prop) checkVector(field string, v []float64) *failure {
	if p.dims > 0 && len(v) != p.dims {
		return fail(http.StatusBadRequest, "document_parsing_exception",
			"The [%s] field [%s] in doc has a different number of dimensions [%d] than defined in the mapping [%d]", p.typ, field, len(v), p.dims)
	}
	if p.space == "cosine" || p.space == "cosinesimil" {
		var n float64
		for _, x := range v {
			n += x * x
		}
		if n == 0 {
			return fail(http.StatusBadRequest, "document_parsing_exception", "The [cosine] similarity does not support vectors with zero magnitude")
		}
	}
	return nil
}

// check refuses a value a field of its type cannot hold.
func (p prop) check(field string, v any) *failure {
	bad := func() *failure {
		return fail(http.StatusBadRequest, "mapper_parsing_exception", "failed to parse field [%s] of type [%s]", field, p.typ)
	}
	vals := []any{v}
	if l, ok := v.([]any); ok && p.typ != "knn_vector" && p.typ != "dense_vector" {
		vals = l
	}
	for _, x := range vals {
		switch p.typ {
		case "keyword", "text":
			if _, ok := x.(string); !ok {
				return bad()
			}
		case "long":
			n, ok := x.(json.Number)
			if _, err := n.Int64(); !ok || err != nil {
				return bad()
			}
		case "double":
			if _, ok := x.(json.Number); !ok {
				return bad()
			}
		case "boolean":
			if _, ok := x.(bool); !ok {
				return bad()
			}
		case "knn_vector", "dense_vector":
			if _, ok := x.([]any); !ok {
				return bad()
			}
		}
	}
	return nil
}

// hit is a scored document.
type hit struct {
	d     *doc
	score float64
}

// matching lists the documents a query matches, in write order.
func (ix *index) matching(q any) ([]*doc, *failure) {
	var out []*doc
	for _, d := range ix.ordered() {
		ok, _, f := ix.eval(q, d)
		if f != nil {
			return nil, f
		}
		if ok {
			out = append(out, d)
		}
	}
	return out, nil
}

func (ix *index) ordered() []*doc {
	if ix.byWrite != nil && ix.byWriteAt == ix.seq {
		return ix.byWrite
	}
	out := make([]*doc, 0, len(ix.docs))
	for _, d := range ix.docs {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	ix.byWrite, ix.byWriteAt = out, ix.seq
	return out
}

// eval reports whether d matches a query clause and its score. A knn
// clause is not evaluated here: search runs it over the whole index.
func (ix *index) eval(q any, d *doc) (bool, float64, *failure) {
	if q == nil {
		return true, 1, nil
	}
	c, ok := q.(map[string]any)
	if !ok || len(c) != 1 {
		return false, 0, badRequest("a query clause is an object with one key, got %v", q)
	}
	for kind, body := range c {
		b, _ := body.(map[string]any)
		switch kind {
		case "match_all":
			return true, 1, nil
		case "match_none":
			return false, 0, nil
		case "bool":
			return ix.evalBool(b, d)
		case "term", "terms":
			for field, want := range b {
				if field == "boost" {
					continue
				}
				wants := []any{want}
				if kind == "terms" {
					l, ok := want.([]any)
					if !ok {
						return false, 0, badRequest("[terms] query does not support [%s]", field)
					}
					wants = l
				} else if m, ok := want.(map[string]any); ok {
					wants = []any{m["value"]}
				}
				if _, ok := ix.props[field]; !ok {
					return false, 0, nil // an unmapped field matches nothing
				}
				for _, got := range values(d.source[field]) {
					for _, w := range wants {
						if equalTerm(ix.props[field].typ, got, w) {
							return true, 1, nil
						}
					}
				}
			}
			return false, 0, nil
		case "range":
			for field, bounds := range b {
				bm, _ := bounds.(map[string]any)
				for _, got := range values(d.source[field]) {
					if inRange(got, bm) {
						return true, 1, nil
					}
				}
			}
			return false, 0, nil
		case "exists":
			field, _ := b["field"].(string)
			return len(values(d.source[field])) > 0, 1, nil
		case "match":
			return ix.evalMatch(b, d)
		case "knn", "hybrid":
			return false, 0, badRequest("[%s] must be the top-level query", kind)
		}
		return false, 0, badRequest("the fake does not know the [%s] query", kind)
	}
	return false, 0, nil
}

func (ix *index) evalBool(b map[string]any, d *doc) (bool, float64, *failure) {
	score := 0.0
	for _, key := range []string{"must", "filter"} {
		for _, c := range clauses(b[key]) {
			ok, sc, f := ix.eval(c, d)
			if f != nil || !ok {
				return false, 0, f
			}
			if key == "must" {
				score += sc
			}
		}
	}
	for _, c := range clauses(b["must_not"]) {
		ok, _, f := ix.eval(c, d)
		if f != nil || ok {
			return false, 0, f
		}
	}
	should := clauses(b["should"])
	matched := 0
	for _, c := range should {
		ok, sc, f := ix.eval(c, d)
		if f != nil {
			return false, 0, f
		}
		if ok {
			matched++
			score += sc
		}
	}
	min := 0
	if len(should) > 0 && len(clauses(b["must"])) == 0 && len(clauses(b["filter"])) == 0 {
		min = 1
	}
	if m, ok := b["minimum_should_match"]; ok {
		n, _ := strconv.Atoi(fmt.Sprint(m))
		min = n
	}
	return matched >= min, score, nil
}

// clauses reads a bool section: one clause or a list of them.
func clauses(v any) []any {
	switch x := v.(type) {
	case nil:
		return nil
	case []any:
		return x
	}
	return []any{v}
}

// values lists a field's values: none when missing or null.
func values(v any) []any {
	switch x := v.(type) {
	case nil:
		return nil
	case []any:
		return x
	}
	return []any{v}
}

func equalTerm(typ string, got, want any) bool {
	switch typ {
	case "long", "double":
		g, err1 := strconv.ParseFloat(fmt.Sprint(got), 64)
		w, err2 := strconv.ParseFloat(fmt.Sprint(want), 64)
		return err1 == nil && err2 == nil && g == w
	case "boolean":
		return fmt.Sprint(got) == fmt.Sprint(want)
	}
	gs, ok1 := got.(string)
	ws, ok2 := want.(string)
	return ok1 && ok2 && gs == ws
}

func inRange(got any, bounds map[string]any) bool {
	g, err := strconv.ParseFloat(fmt.Sprint(got), 64)
	if err != nil {
		return false
	}
	for op, bv := range bounds {
		b, err := strconv.ParseFloat(fmt.Sprint(bv), 64)
		if err != nil {
			return false
		}
		switch op {
		case "gt":
			if !(g > b) {
				return false
			}
		case "gte":
			if !(g >= b) {
				return false
			}
		case "lt":
			if !(g < b) {
				return false
			}
		case "lte":
			if !(g <= b) {
				return false
			}
		}
	}
	return true
}

// evalMatch scores a match query with Lucene's BM25 over the index's
// current documents.
func (ix *index) evalMatch(b map[string]any, d *doc) (bool, float64, *failure) {
	for field, v := range b {
		text, _ := v.(string)
		if m, ok := v.(map[string]any); ok {
			text, _ = m["query"].(string)
		}
		a := ix.anz[field]
		if a == nil {
			return false, 0, nil
		}
		terms := ix.queryTerms(a, text)
		st := ix.fieldStats(field)
		if st.n == 0 {
			return false, 0, nil
		}
		dl := float64(len(d.terms[field]))
		score, hit := 0.0, false
		for _, t := range terms {
			tf := float64(d.tf[field][t])
			if tf == 0 {
				continue
			}
			hit = true
			df := st.df[t]
			idf := math.Log(1 + (st.n-df+0.5)/(df+0.5))
			score += idf * tf / (tf + 1.2*(1-0.75+0.75*dl/st.avg))
		}
		return hit, score, nil
	}
	return false, 0, nil
}

// queryTerms are a query text's distinct terms, kept while one query is
// evaluated against every document.
func (ix *index) queryTerms(a *bm25.Analyzer, text string) []string {
	if ts, ok := ix.queries[text]; ok {
		return ts
	}
	ts := a.Analyze(text)
	slices.Sort(ts)
	ts = slices.Compact(ts)
	if len(ix.queries) > 64 {
		clear(ix.queries)
	}
	if ix.queries == nil {
		ix.queries = map[string][]string{}
	}
	ix.queries[text] = ts
	return ts
}

// knnHits runs a knn clause: the k nearest documents matching its filter,
// scored as the k-NN plugin scores its space.
func (ix *index) knnHits(body map[string]any) ([]hit, *failure) {
	if ix.elastic {
		return ix.esKNN(body)
	}
	for field, v := range body {
		spec, _ := v.(map[string]any)
		p, ok := ix.props[field]
		if !ok || p.typ != "knn_vector" {
			return nil, badRequest("field [%s] is not a knn_vector", field)
		}
		qv := floats(spec["vector"])
		k, _ := strconv.Atoi(fmt.Sprint(spec["k"]))
		var out []hit
		for _, d := range ix.ordered() {
			if f, ok := spec["filter"]; ok {
				m, _, fl := ix.eval(f, d)
				if fl != nil {
					return nil, fl
				}
				if !m {
					continue
				}
			}
			dv := d.vecs[field]
			if len(dv) == 0 {
				continue
			}
			if len(dv) != len(qv) {
				return nil, badRequest("query vector has %d dimensions, the field %d", len(qv), len(dv))
			}
			out = append(out, hit{d, knnScore(p.space, qv, dv)})
		}
		rank(out)
		if len(out) > k {
			out = out[:k]
		}
		return out, nil
	}
	return nil, badRequest("[knn] names no field")
}

// esKNN runs Elasticsearch's knn query (or a knn retriever, which has the
// same properties): the k nearest of the documents matching its filter,
// with num_candidates checked as Elasticsearch checks it. The fake
// searches exactly, so the walk's width changes nothing here.
func (ix *index) esKNN(body map[string]any) ([]hit, *failure) {
	field, _ := body["field"].(string)
	p, ok := ix.props[field]
	if !ok || p.typ != "dense_vector" {
		return nil, badRequest("[knn] queries are only supported on [dense_vector] fields, not [%s]", field)
	}
	k, _ := strconv.Atoi(fmt.Sprint(body["k"]))
	cands, _ := strconv.Atoi(fmt.Sprint(body["num_candidates"]))
	switch {
	case k < 1:
		return nil, badRequest("[k] must be greater than 0")
	case cands < k:
		return nil, badRequest("[num_candidates] cannot be less than [k]")
	case cands > 10000:
		return nil, badRequest("[num_candidates] cannot exceed [10000]")
	}
	qv := floats(body["query_vector"])
	if len(qv) != p.dims {
		return nil, badRequest("the query vector has a different number of dimensions [%d] than the document vectors [%d]", len(qv), p.dims)
	}
	var out []hit
docs:
	for _, d := range ix.ordered() {
		for _, f := range clauses(body["filter"]) {
			m, _, fl := ix.eval(f, d)
			if fl != nil {
				return nil, fl
			}
			if !m {
				continue docs
			}
		}
		if dv := d.vecs[field]; len(dv) > 0 {
			out = append(out, hit{d, knnScore(p.space, qv, dv)})
		}
	}
	rank(out)
	if len(out) > k {
		out = out[:k]
	}
	return out, nil
}

// rrf runs Elasticsearch's rrf retriever over standard and knn
// retrievers: each finds rank_window_size documents, and a document
// scores Σ 1/(rank_constant + rank) over the lists it is in.
func (ix *index) rrf(body map[string]any, size int) ([]hit, *failure) {
	k, window := 60.0, 10
	if v, ok := body["rank_constant"]; ok {
		k, _ = strconv.ParseFloat(fmt.Sprint(v), 64)
	}
	if v, ok := body["rank_window_size"]; ok {
		window, _ = strconv.Atoi(fmt.Sprint(v))
	}
	if k < 1 {
		return nil, badRequest("[rank_constant] must be greater or equal to [1] for [rrf]")
	}
	if window < size {
		return nil, badRequest("[rank_window_size] must be greater than or equal to [size]")
	}
	sum := map[*doc]float64{}
	for _, entry := range clauses(body["retrievers"]) {
		e, _ := entry.(map[string]any)
		var hs []hit
		var f *failure
		switch {
		case e["standard"] != nil:
			std, _ := e["standard"].(map[string]any)
			hs, f = ix.run(std["query"], nil)
		case e["knn"] != nil:
			knn, _ := e["knn"].(map[string]any)
			hs, f = ix.esKNN(knn)
		default:
			return nil, badRequest("the fake fuses standard and knn retrievers only")
		}
		if f != nil {
			return nil, f
		}
		if len(hs) > window {
			hs = hs[:window]
		}
		for i, h := range hs {
			sum[h.d] += 1 / (k + float64(i+1))
		}
	}
	return fromMap(sum), nil
}

func knnScore(space string, q, v []float64) float64 {
	var dot, nq, nv, l2 float64
	for i := range q {
		dot += q[i] * v[i]
		nq += q[i] * q[i]
		nv += v[i] * v[i]
		l2 += (q[i] - v[i]) * (q[i] - v[i])
	}
	switch space {
	case "innerproduct":
		if dot >= 0 {
			return dot + 1
		}
		return 1 / (1 - dot)
	case "l2", "l2_norm":
		return 1 / (1 + l2)
	}
	if nq == 0 || nv == 0 {
		return 0
	}
	return (1 + dot/math.Sqrt(nq*nv)) / 2
}

func floats(v any) []float64 {
	l, _ := v.([]any)
	out := make([]float64, len(l))
	for i, x := range l {
		out[i], _ = strconv.ParseFloat(fmt.Sprint(x), 64)
	}
	return out
}

// rank orders hits by score, then by write order (Lucene's doc id order).
func rank(hs []hit) {
	sort.SliceStable(hs, func(i, j int) bool {
		if hs[i].score != hs[j].score {
			return hs[i].score > hs[j].score
		}
		return hs[i].d.seq < hs[j].d.seq
	})
}

// run scores a top-level query.
func (ix *index) run(q any, pipeline map[string]any) ([]hit, *failure) {
	if c, ok := q.(map[string]any); ok && len(c) == 1 {
		if body, ok := c["knn"].(map[string]any); ok {
			return ix.knnHits(body)
		}
		if body, ok := c["hybrid"].(map[string]any); ok {
			return ix.hybrid(body, pipeline)
		}
	}
	var out []hit
	for _, d := range ix.ordered() {
		ok, sc, f := ix.eval(q, d)
		if f != nil {
			return nil, f
		}
		if ok {
			out = append(out, hit{d, sc})
		}
	}
	rank(out)
	return out, nil
}

// hybrid runs each sub-query and combines them as the pipeline's
// processor says: score-ranker RRF, 1/(rank_constant + rank), or
// normalization (min_max, arithmetic_mean).
func (ix *index) hybrid(body map[string]any, pipeline map[string]any) ([]hit, *failure) {
	if pipeline == nil {
		return nil, badRequest("a hybrid query needs a search pipeline with a normalization or score-ranker processor")
	}
	var results [][]hit
	for _, sub := range clauses(body["queries"]) {
		hs, f := ix.run(sub, nil)
		if f != nil {
			return nil, f
		}
		if flt, ok := body["filter"]; ok {
			hs = slices.DeleteFunc(hs, func(h hit) bool {
				m, _, _ := ix.eval(flt, h.d)
				return !m
			})
		}
		results = append(results, hs)
	}
	procs, _ := pipeline["phase_results_processors"].([]any)
	for _, p := range procs {
		pm, _ := p.(map[string]any)
		if sr, ok := pm["score-ranker-processor"].(map[string]any); ok {
			comb, _ := sr["combination"].(map[string]any)
			k := 60.0
			if v, ok := comb["rank_constant"]; ok {
				k, _ = strconv.ParseFloat(fmt.Sprint(v), 64)
			}
			fused := map[*doc]float64{}
			for _, hs := range results {
				for i, h := range hs {
					fused[h.d] += 1 / (k + float64(i+1))
				}
			}
			return fromMap(fused), nil
		}
		if nm, ok := pm["normalization-processor"].(map[string]any); ok {
			comb, _ := nm["combination"].(map[string]any)
			weights := []float64{}
			if params, ok := comb["parameters"].(map[string]any); ok {
				weights = floats(params["weights"])
			}
			fused := map[*doc]float64{}
			for qi, hs := range results {
				if len(hs) == 0 {
					continue
				}
				lo, hi := hs[len(hs)-1].score, hs[0].score
				w := 1.0 / float64(len(results))
				if qi < len(weights) {
					w = weights[qi]
				}
				for _, h := range hs {
					norm := 1.0
					if hi > lo {
						norm = (h.score - lo) / (hi - lo)
					}
					fused[h.d] += w * norm
				}
			}
			return fromMap(fused), nil
		}
	}
	return nil, badRequest("the search pipeline has no processor the fake knows")
}

func fromMap(m map[*doc]float64) []hit {
	out := make([]hit, 0, len(m))
	for d, s := range m {
		out = append(out, hit{d, s})
	}
	rank(out)
	return out
}

func (s *Server) search(name string, ix *index, q map[string]any, pipelineName string) (any, *failure) {
	var pipeline map[string]any
	if pipelineName != "" {
		var ok bool
		if pipeline, ok = s.pipelines[pipelineName]; !ok {
			return nil, fail(http.StatusNotFound, "resource_not_found_exception", "Pipeline %s is not defined", pipelineName)
		}
	}
	size := 10
	if v, ok := q["size"]; ok {
		size, _ = strconv.Atoi(fmt.Sprint(v))
	}
	if size > 10000 {
		return nil, fail(http.StatusBadRequest, "illegal_argument_exception",
			"Result window is too large, from + size must be less than or equal to: [10000] but was [%d]", size)
	}
	var hs []hit
	var f *failure
	switch ret, ok := q["retriever"].(map[string]any); {
	case ok && !ix.elastic:
		return nil, badRequest("request does not support [retriever]")
	case ok && q["query"] != nil:
		return nil, badRequest("cannot specify [retriever] and [query]")
	case ok && ret["rrf"] != nil:
		body, _ := ret["rrf"].(map[string]any)
		hs, f = ix.rrf(body, size)
	case ok:
		return nil, badRequest("the fake serves the rrf retriever only")
	default:
		hs, f = ix.run(q["query"], pipeline)
	}
	if f != nil {
		return nil, f
	}
	if sortSpec, ok := q["sort"]; ok {
		if hs, f = sortHits(hs, sortSpec, q["search_after"]); f != nil {
			return nil, f
		}
	}
	total := len(hs)
	if len(hs) > size {
		hs = hs[:size]
	}
	excludes := sourceExcludes(q["_source"])
	out := make([]any, len(hs))
	maxScore := 0.0
	for i, h := range hs {
		src := h.d.raw
		if len(excludes) > 0 {
			src = h.d.without(excludes)
		}
		item := map[string]any{"_index": name, "_id": h.d.id, "_score": h.score, "_source": src}
		if field := sortField(q["sort"]); field != "" {
			item["_score"] = nil
			item["sort"] = []any{h.d.source[field]}
		}
		out[i] = item
		maxScore = max(maxScore, h.score)
	}
	return map[string]any{"took": 1, "timed_out": false, "_shards": shards(),
		"hits": map[string]any{"total": map[string]any{"value": total, "relation": "eq"}, "max_score": maxScore, "hits": out}}, nil
}

// sortField is the field of a one-field sort.
func sortField(spec any) string {
	l := clauses(spec)
	if len(l) != 1 {
		return ""
	}
	switch x := l[0].(type) {
	case string:
		return x
	case map[string]any:
		for k := range x {
			return k
		}
	}
	return ""
}

// sortHits orders hits by one keyword field ascending, after a
// search_after value: what a scan by id needs.
func sortHits(hs []hit, spec, after any) ([]hit, *failure) {
	field := sortField(spec)
	if field == "" || len(clauses(spec)) != 1 {
		return nil, badRequest("the fake sorts by one field")
	}
	if x, ok := clauses(spec)[0].(map[string]any); ok {
		for _, v := range x {
			if o, ok := v.(map[string]any); ok && o["order"] != nil && o["order"] != "asc" {
				return nil, badRequest("the fake sorts ascending")
			}
			if o, ok := v.(string); ok && o != "asc" {
				return nil, badRequest("the fake sorts ascending")
			}
		}
	}
	key := func(h hit) string { s, _ := h.d.source[field].(string); return s }
	sort.SliceStable(hs, func(i, j int) bool { return key(hs[i]) < key(hs[j]) })
	if a := clauses(after); len(a) == 1 {
		start, _ := a[0].(string)
		hs = slices.DeleteFunc(hs, func(h hit) bool { return key(h) <= start })
	}
	return hs, nil
}

// without is the document's source without some fields.
func (d *doc) without(fields []string) json.RawMessage {
	key := strings.Join(fields, "\x00")
	if src, ok := d.lean[key]; ok {
		return src
	}
	m := map[string]json.RawMessage{}
	json.Unmarshal(d.raw, &m)
	for _, f := range fields {
		delete(m, f)
	}
	src, _ := json.Marshal(m)
	if d.lean == nil {
		d.lean = map[string]json.RawMessage{}
	}
	d.lean[key] = src
	return src
}

func sourceExcludes(v any) []string {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	var out []string
	for _, e := range clauses(m["excludes"]) {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// msearch runs header/body pairs against one index.
func (s *Server) msearch(name string, ix *index, body []byte) (any, *failure) {
	var lines [][]byte
	for _, l := range bytes.Split(body, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			lines = append(lines, l)
		}
	}
	if len(lines)%2 != 0 {
		return nil, badRequest("an msearch body is pairs of header and body lines")
	}
	var responses []any
	for i := 0; i < len(lines); i += 2 {
		var q map[string]any
		if f := decode(lines[i+1], &q); f != nil {
			return nil, f
		}
		res, f := s.search(name, ix, q, "")
		if f != nil {
			responses = append(responses, map[string]any{"error": map[string]any{"type": f.typ, "reason": f.msg}, "status": f.code})
			continue
		}
		m := res.(map[string]any)
		m["status"] = 200
		responses = append(responses, m)
	}
	return map[string]any{"took": 1, "responses": responses}, nil
}
