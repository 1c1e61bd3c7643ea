// Package typesensetest is a fake Typesense server for tests: collections
// with typed schemas and metadata, documents imported and exported as
// JSON lines, deleted by filter, fetched by id, and searched through
// multi_search — text queries with every token required and tokens
// dropped from the right while fewer results than drop_tokens_threshold
// match, exact vector search under cosine distance, and rank fusion for
// hybrid queries. Every request and every answer is validated against
// Typesense's published OpenAPI document (openapi.yml here:
// typesense/typesense-api-spec at 9963d6c, 2026-03-25, API 30.0).
//
// What it does not imitate: Typesense's text_match score (here the count
// of query tokens a document holds, then how often it holds them), typo
// tolerance and prefix search (the fake refuses searches that do not turn
// them off), its tokenizer beyond spaces, and HNSW (vector search is
// exact). The document's one slip is mended when it is loaded:
// SearchResultHit.document declares every field an object, while every
// Typesense answer holds strings, numbers and lists there.
package typesensetest

import (
	"bufio"
	"bytes"
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

	"github.com/pb33f/libopenapi"
	"github.com/quarry-rag/quarry/internal/openapicheck"
)

//go:embed openapi.yml
var spec []byte

// Version is the Typesense version the fake reports.
const Version = "30.0"

var checker = sync.OnceValues(func() (*openapicheck.Checker, error) {
	doc, err := mend(spec)
	if err != nil {
		return nil, err
	}
	return openapicheck.New(doc)
})

// mend reads the document as JSON with its slip corrected (see the
// package comment).
func mend(yml []byte) ([]byte, error) {
	doc, err := libopenapi.NewDocument(yml)
	if err != nil {
		return nil, err
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("typesensetest: %w", err)
	}
	raw, err := model.Model.RenderJSON("  ")
	if err != nil {
		return nil, err
	}
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	hit := v["components"].(map[string]any)["schemas"].(map[string]any)["SearchResultHit"].(map[string]any)
	hit["properties"].(map[string]any)["document"] = map[string]any{"type": "object", "additionalProperties": true}
	return json.Marshal(v)
}

// field is a field of a collection's schema.
type field struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Optional bool   `json:"optional,omitempty"`
	Index    *bool  `json:"index,omitempty"`
	NumDim   int    `json:"num_dim,omitempty"`
	VecDist  string `json:"vec_dist,omitempty"`
}

type collection struct {
	Name     string         `json:"name"`
	Fields   []field        `json:"fields"`
	Metadata map[string]any `json:"metadata,omitempty"`
	created  int64
	docs     map[string]map[string]any
	seq      map[string]int // insertion order, for ties
	next     int
	toks     map[string]map[string]map[string]int // id → field → token counts, as searched
}

// tokens are a document's tokens in a string field, counted.
func (c *collection) tokens(d map[string]any, f string) map[string]int {
	id := d["id"].(string)
	if t, ok := c.toks[id][f]; ok {
		return t
	}
	t := map[string]int{}
	if s, ok := d[f].(string); ok {
		for _, w := range strings.Fields(s) {
			t[w]++
		}
	}
	if c.toks[id] == nil {
		c.toks[id] = map[string]map[string]int{}
	}
	c.toks[id][f] = t
	return t
}

// forget drops a document's cached tokens.
func (c *collection) forget(id string) { delete(c.toks, id) }

func (c *collection) fieldMap() map[string]field {
	m := map[string]field{}
	for _, f := range c.Fields {
		m[f.Name] = f
	}
	return m
}

// Server is a fake Typesense.
type Server struct {
	*httptest.Server
	// Key is the API key the server wants; empty takes any.
	Key string
	v   *openapicheck.Checker

	mu      sync.Mutex
	colls   map[string]*collection
	calls   map[string]int
	invalid []string // requests and answers outside the specification
}

// New starts a fake Typesense; it is closed when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	v, err := checker()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{v: v, colls: map[string]*collection{}, calls: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		s.Close()
		for _, msg := range s.TakeInvalid() {
			t.Errorf("typesensetest: %s", msg)
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

// StoreURL is the store URL of the fake (typesense://:KEY@HOST:PORT), with the
// query params when given.
func (s *Server) StoreURL(params string) string {
	u := "typesense://"
	if s.Key != "" {
		u += ":" + s.Key + "@"
	}
	u += s.Listener.Addr().String()
	if params != "" {
		u += "?" + params
	}
	return u
}

// Calls returns how many requests each operation ("POST /multi_search")
// received.
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
	collPath = regexp.MustCompile(`\A/collections/([^/]+)\z`)
	docsPath = regexp.MustCompile(`\A/collections/([^/]+)/documents(/import|/export|/[^/]+)?\z`)
)

type answer struct {
	code  int
	ctype string
	body  []byte
}

func jsonAnswer(code int, v any) answer {
	b, _ := json.Marshal(v)
	return answer{code, "application/json", b}
}

func failure(code int, msg string) answer { return jsonAnswer(code, map[string]string{"message": msg}) }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if s.Key != "" && r.Header.Get("X-TYPESENSE-API-KEY") != s.Key {
		a := failure(http.StatusUnauthorized, "Forbidden - a valid `x-typesense-api-key` header must be sent.")
		w.Header().Set("Content-Type", a.ctype)
		w.WriteHeader(a.code)
		_, _ = w.Write(a.body)
		return
	}
	if err := s.v.Request(r, body); err != nil {
		s.mu.Lock()
		s.invalid = append(s.invalid, "request outside the specification: "+err.Error())
		s.mu.Unlock()
		a := failure(http.StatusBadRequest, err.Error())
		w.WriteHeader(a.code)
		_, _ = w.Write(a.body)
		return
	}
	s.mu.Lock()
	op := r.Method + " " + collPath.ReplaceAllString(docsPath.ReplaceAllString(r.URL.Path, "/collections/C/documents$2"), "/collections/C")
	s.calls[op]++
	a := s.route(r, body)
	s.mu.Unlock()
	if a.code/100 == 2 {
		if err := s.v.Response(r, a.code, a.ctype, a.body); err != nil {
			s.mu.Lock()
			s.invalid = append(s.invalid, "answer outside the specification: "+err.Error())
			s.mu.Unlock()
		}
	}
	w.Header().Set("Content-Type", a.ctype)
	w.WriteHeader(a.code)
	_, _ = w.Write(a.body)
}

func (s *Server) route(r *http.Request, body []byte) answer {
	p := r.URL.Path
	switch {
	case p == "/debug" && r.Method == http.MethodGet:
		return jsonAnswer(200, map[string]any{"state": 1, "version": Version})
	case p == "/collections" && r.Method == http.MethodPost:
		return s.createCollection(body)
	case p == "/collections" && r.Method == http.MethodGet:
		var out []any
		names := make([]string, 0, len(s.colls))
		for n := range s.colls {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			out = append(out, s.describe(s.colls[n]))
		}
		if out == nil {
			out = []any{}
		}
		return jsonAnswer(200, out)
	case p == "/multi_search" && r.Method == http.MethodPost:
		return s.multiSearch(body)
	}
	if m := collPath.FindStringSubmatch(p); m != nil {
		c := s.colls[m[1]]
		if c == nil {
			return failure(404, "Not Found")
		}
		switch r.Method {
		case http.MethodGet:
			return jsonAnswer(200, s.describe(c))
		case http.MethodDelete:
			delete(s.colls, m[1])
			return jsonAnswer(200, s.describe(c))
		}
	}
	if m := docsPath.FindStringSubmatch(p); m != nil {
		c := s.colls[m[1]]
		if c == nil {
			return failure(404, "Not Found")
		}
		q := r.URL.Query()
		switch {
		case m[2] == "/import" && r.Method == http.MethodPost:
			return s.importDocs(c, q, body)
		case m[2] == "/export" && r.Method == http.MethodGet:
			return s.export(c, q)
		case m[2] == "" && r.Method == http.MethodDelete:
			return s.deleteDocs(c, q)
		case m[2] != "" && r.Method == http.MethodGet:
			d := c.docs[m[2][1:]]
			if d == nil {
				return failure(404, "Could not find a document with id: "+m[2][1:])
			}
			return jsonAnswer(200, d)
		case m[2] != "" && r.Method == http.MethodDelete:
			id := m[2][1:]
			d := c.docs[id]
			if d == nil {
				return failure(404, "Could not find a document with id: "+id)
			}
			delete(c.docs, id)
			c.forget(id)
			return jsonAnswer(200, d)
		}
	}
	return failure(404, "Not Found")
}

func (s *Server) describe(c *collection) map[string]any {
	out := map[string]any{"name": c.Name, "fields": c.Fields, "num_documents": len(c.docs), "created_at": c.created}
	if c.Metadata != nil {
		out["metadata"] = c.Metadata
	}
	return out
}

var types = map[string]bool{"string": true, "string[]": true, "int32": true, "int64": true, "float": true,
	"bool": true, "float[]": true, "int64[]": true, "int32[]": true, "bool[]": true}

func (s *Server) createCollection(body []byte) answer {
	var c collection
	if err := json.Unmarshal(body, &c); err != nil {
		return failure(400, "Bad JSON.")
	}
	if _, ok := s.colls[c.Name]; ok {
		return failure(409, fmt.Sprintf("A collection with name `%s` already exists.", c.Name))
	}
	seen := map[string]bool{}
	for _, f := range c.Fields {
		if !types[f.Type] || seen[f.Name] || f.Name == "" || f.Name == "id" {
			return failure(400, fmt.Sprintf("Field `%s` has an invalid data type or name.", f.Name))
		}
		seen[f.Name] = true
		if f.NumDim > 0 && f.Type != "float[]" {
			return failure(400, "Property `num_dim` is only allowed on a float array field.")
		}
	}
	c.created = time.Now().Unix()
	c.docs, c.seq, c.toks = map[string]map[string]any{}, map[string]int{}, map[string]map[string]map[string]int{}
	s.colls[c.Name] = &c
	return jsonAnswer(201, s.describe(&c))
}

// check validates a document against the schema, as an import does.
func check(c *collection, d map[string]any) error {
	id, ok := d["id"].(string)
	if !ok || id == "" {
		return fmt.Errorf("document's `id` field should be a string")
	}
	for _, f := range c.Fields {
		v, ok := d[f.Name]
		if !ok || v == nil {
			if !f.Optional {
				return fmt.Errorf("field `%s` has been declared in the schema, but is not found in the document", f.Name)
			}
			continue
		}
		bad := fmt.Errorf("field `%s` must be a %s", f.Name, f.Type)
		switch f.Type {
		case "string":
			if _, ok := v.(string); !ok {
				return bad
			}
		case "bool":
			if _, ok := v.(bool); !ok {
				return bad
			}
		case "int32", "int64":
			if x, ok := v.(float64); !ok || x != math.Trunc(x) {
				return bad
			}
		case "float":
			if _, ok := v.(float64); !ok {
				return bad
			}
		case "string[]", "float[]":
			l, ok := v.([]any)
			if !ok {
				return bad
			}
			for _, e := range l {
				if _, isS := e.(string); f.Type == "string[]" && !isS {
					return bad
				}
				if _, isF := e.(float64); f.Type == "float[]" && !isF {
					return bad
				}
			}
			if f.NumDim > 0 && len(l) != f.NumDim {
				return fmt.Errorf("field `%s` must have %d dimensions", f.Name, f.NumDim)
			}
		}
	}
	return nil
}

func (s *Server) importDocs(c *collection, q map[string][]string, body []byte) answer {
	if a := strings.Join(q["action"], ""); a != "upsert" {
		return failure(400, "the fake imports with action=upsert only")
	}
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 64<<20)
	first := true
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if !first {
			out.WriteByte('\n')
		}
		first = false
		var d map[string]any
		err := json.Unmarshal(line, &d)
		if err == nil {
			err = check(c, d)
		} else {
			err = fmt.Errorf("bad JSON")
		}
		if err != nil {
			b, _ := json.Marshal(map[string]any{"success": false, "error": err.Error(), "document": string(line)})
			out.Write(b)
			continue
		}
		id := d["id"].(string)
		if _, ok := c.seq[id]; !ok {
			c.next++
			c.seq[id] = c.next
		}
		c.docs[id] = d
		c.forget(id)
		out.WriteString(`{"success":true}`)
	}
	return answer{200, "application/octet-stream", out.Bytes()}
}

// matching lists the documents a filter_by matches, in insertion order.
func (c *collection) matching(fb string) ([]map[string]any, error) {
	var p pred
	if strings.TrimSpace(fb) != "" {
		var err error
		if p, err = parseFilter(fb, c.fieldMap()); err != nil {
			return nil, err
		}
	}
	var out []map[string]any
	for _, d := range c.docs {
		if p == nil || p.match(d) {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return c.seq[out[i]["id"].(string)] < c.seq[out[j]["id"].(string)] })
	return out, nil
}

func project(d map[string]any, include string) map[string]any {
	if include == "" {
		return d
	}
	out := map[string]any{}
	for _, f := range strings.Split(include, ",") {
		if v, ok := d[strings.TrimSpace(f)]; ok {
			out[strings.TrimSpace(f)] = v
		}
	}
	return out
}

func (s *Server) export(c *collection, q map[string][]string) answer {
	docs, err := c.matching(strings.Join(q["filter_by"], ""))
	if err != nil {
		return failure(400, err.Error())
	}
	var out bytes.Buffer
	for i, d := range docs {
		if i > 0 {
			out.WriteByte('\n')
		}
		b, _ := json.Marshal(project(d, strings.Join(q["include_fields"], "")))
		out.Write(b)
	}
	return answer{200, "application/octet-stream", out.Bytes()}
}

func (s *Server) deleteDocs(c *collection, q map[string][]string) answer {
	fb := strings.Join(q["filter_by"], "")
	if strings.TrimSpace(fb) == "" {
		return failure(400, "Parameter `filter_by` must be provided.")
	}
	docs, err := c.matching(fb)
	if err != nil {
		return failure(400, err.Error())
	}
	for _, d := range docs {
		delete(c.docs, d["id"].(string))
		c.forget(d["id"].(string))
	}
	return jsonAnswer(200, map[string]any{"num_deleted": len(docs)})
}

// searchParams are the search parameters the fake reads.
type searchParams struct {
	Collection          string `json:"collection"`
	Q                   string `json:"q"`
	QueryBy             string `json:"query_by"`
	FilterBy            string `json:"filter_by"`
	VectorQuery         string `json:"vector_query"`
	Prefix              string `json:"prefix"`
	NumTypos            string `json:"num_typos"`
	DropTokensThreshold *int   `json:"drop_tokens_threshold"`
	Page                int    `json:"page"`
	PerPage             *int   `json:"per_page"`
	IncludeFields       string `json:"include_fields"`
}

func (s *Server) multiSearch(body []byte) answer {
	var req struct {
		Searches []json.RawMessage `json:"searches"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return failure(400, "Bad JSON.")
	}
	results := []any{}
	for _, raw := range req.Searches {
		var sp searchParams
		if err := json.Unmarshal(raw, &sp); err != nil {
			results = append(results, map[string]any{"code": 400, "error": "Bad JSON."})
			continue
		}
		res, code, msg := s.search(sp)
		if code != 0 {
			results = append(results, map[string]any{"code": code, "error": msg})
			continue
		}
		results = append(results, res)
	}
	return jsonAnswer(200, map[string]any{"results": results})
}

type scored struct {
	doc       map[string]any
	textMatch int64
	textRank  int
	dist      float64
	vecRank   int
	fusion    float64
}

var vectorQueryRE = regexp.MustCompile(`\A(\w+):\(\[([^\]]*)\]((?:\s*,\s*\w+\s*:\s*[0-9.eE+-]+)*)\)\z`)

func (s *Server) search(sp searchParams) (map[string]any, int, string) {
	c := s.colls[sp.Collection]
	if c == nil {
		return nil, 404, fmt.Sprintf("Collection `%s` not found.", sp.Collection)
	}
	perPage := 10
	if sp.PerPage != nil {
		perPage = *sp.PerPage
	}
	if perPage > 250 || perPage < 0 {
		return nil, 422, "Only upto 250 hits can be fetched per page."
	}
	page := max(sp.Page, 1)
	pool, err := c.matching(sp.FilterBy)
	if err != nil {
		return nil, 400, err.Error()
	}
	fields := c.fieldMap()
	byID := map[string]*scored{}
	var textHits, vecHits []*scored
	text := strings.TrimSpace(sp.Q) != "" && sp.Q != "*"
	if text {
		if sp.Prefix != "false" || sp.NumTypos != "0" {
			return nil, 400, "the fake matches whole tokens only: send prefix false and num_typos 0"
		}
		var qby []string
		for _, f := range strings.Split(sp.QueryBy, ",") {
			f = strings.TrimSpace(f)
			fd, ok := fields[f]
			if !ok || fd.Type != "string" || (fd.Index != nil && !*fd.Index) {
				return nil, 404, fmt.Sprintf("Could not find a field named `%s` in the schema.", f)
			}
			qby = append(qby, f)
		}
		tokens := strings.Fields(sp.Q)
		threshold := 1
		if sp.DropTokensThreshold != nil {
			threshold = *sp.DropTokensThreshold
		}
		// Every token first; then, while fewer documents than the
		// threshold match, the rightmost token is dropped.
		for n := len(tokens); n > 0; n-- {
			want := tokens[:n]
			for _, d := range pool {
				id := d["id"].(string)
				if byID[id] != nil {
					continue
				}
				all, freq := true, 0
				for _, t := range want {
					n := 0
					for _, f := range qby {
						n += c.tokens(d, f)[t]
					}
					if n == 0 {
						all = false
						break
					}
					freq += n
				}
				if !all {
					continue
				}
				sd := &scored{doc: d, textMatch: int64(n)<<32 | int64(min(freq, 1<<31))}
				byID[id] = sd
				textHits = append(textHits, sd)
			}
			if len(textHits) >= threshold || n == 1 {
				break
			}
		}
		sort.SliceStable(textHits, func(i, j int) bool { return textHits[i].textMatch > textHits[j].textMatch })
		for i, sd := range textHits {
			sd.textRank = i + 1
		}
	}
	alpha := 0.3 // Typesense's default weight of the vector ranking
	if sp.VectorQuery != "" {
		m := vectorQueryRE.FindStringSubmatch(strings.TrimSpace(sp.VectorQuery))
		if m == nil {
			return nil, 400, "Malformed vector query string."
		}
		vf, ok := fields[m[1]]
		if !ok || vf.Type != "float[]" || vf.NumDim == 0 {
			return nil, 400, fmt.Sprintf("Field `%s` does not have a vector query index.", m[1])
		}
		var vec []float64
		for _, x := range strings.Split(m[2], ",") {
			f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
			if err != nil {
				return nil, 400, "Malformed vector query string."
			}
			vec = append(vec, f)
		}
		if len(vec) != vf.NumDim {
			return nil, 400, fmt.Sprintf("Query field `%s` must have %d dimensions.", m[1], vf.NumDim)
		}
		k := 10
		for _, kv := range strings.Split(m[3], ",") {
			key, val, ok := strings.Cut(kv, ":")
			if !ok {
				continue
			}
			switch strings.TrimSpace(key) {
			case "k":
				k, _ = strconv.Atoi(strings.TrimSpace(val))
			case "alpha":
				alpha, _ = strconv.ParseFloat(strings.TrimSpace(val), 64)
			default:
				return nil, 400, "the fake takes k and alpha in a vector query"
			}
		}
		for _, d := range pool {
			v, ok := d[m[1]].([]any)
			if !ok || len(v) != len(vec) {
				continue
			}
			dist := 1 - cosine(v, vec)
			id := d["id"].(string)
			sd := byID[id]
			if sd == nil {
				sd = &scored{doc: d}
			}
			sd.dist = dist
			vecHits = append(vecHits, sd)
		}
		sort.SliceStable(vecHits, func(i, j int) bool { return vecHits[i].dist < vecHits[j].dist })
		if len(vecHits) > k {
			vecHits = vecHits[:k]
		}
		for i, sd := range vecHits {
			sd.vecRank = i + 1
			byID[sd.doc["id"].(string)] = sd
		}
	}
	var all []*scored
	switch {
	case text && sp.VectorQuery != "":
		for _, sd := range byID {
			if sd.textRank > 0 {
				sd.fusion += (1 - alpha) / float64(sd.textRank)
			}
			if sd.vecRank > 0 {
				sd.fusion += alpha / float64(sd.vecRank)
			}
			all = append(all, sd)
		}
		sort.Slice(all, func(i, j int) bool {
			if all[i].fusion != all[j].fusion {
				return all[i].fusion > all[j].fusion
			}
			return c.seq[all[i].doc["id"].(string)] < c.seq[all[j].doc["id"].(string)]
		})
	case sp.VectorQuery != "":
		all = vecHits
	case text:
		all = textHits
	default:
		for _, d := range pool {
			all = append(all, &scored{doc: d})
		}
	}
	hits := []any{}
	start := (page - 1) * perPage
	for i := start; i < min(len(all), start+perPage); i++ {
		sd := all[i]
		h := map[string]any{"document": project(sd.doc, sp.IncludeFields)}
		if sd.textRank > 0 {
			h["text_match"] = sd.textMatch
		}
		if sd.vecRank > 0 {
			h["vector_distance"] = sd.dist
		}
		if text && sp.VectorQuery != "" {
			h["hybrid_search_info"] = map[string]any{"rank_fusion_score": sd.fusion}
		}
		hits = append(hits, h)
	}
	return map[string]any{"found": len(all), "out_of": len(c.docs), "page": page, "search_time_ms": 0, "hits": hits,
		"request_params": map[string]any{"collection_name": c.Name, "q": sp.Q, "per_page": perPage}}, 0, ""
}

func cosine(a []any, b []float64) float64 {
	var dot, na, nb float64
	for i := range b {
		x, _ := a[i].(float64)
		dot += x * b[i]
		na += x * x
		nb += b[i] * b[i]
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}
