// Package qdranttest is a fake Qdrant server for tests: it keeps
// collections of points in memory and answers the part of Qdrant's REST
// API that Quarry's qdrant store uses, with Qdrant's semantics where they
// shape results (cosine vectors normalised on upload, filter conditions
// as Qdrant's condition checker evaluates them, the idf modifier's
// ln((N − df + 0.5)/(df + 0.5) + 1), RRF as 1/(rank/weight + k − 1)).
//
// Every request is validated against Qdrant's published OpenAPI document
// (openapi.json here: qdrant/qdrant docs/redoc/master/openapi.json at
// commit c34acc1, Qdrant 1.19.0-dev, 2026-08-04) before it is served, and
// every answer against the same document; a request that does not
// conform is answered 400 and recorded, and Invalid reports them. Like a
// Qdrant collection in strict mode with unindexed filtering off, a filter
// on a payload key without an index is refused. Answers follow the
// document's shapes and the examples of Qdrant's documentation.
//
// No Qdrant server runs here (it is Rust, and no build of it can be
// fetched), so this fake is how Quarry checks its Qdrant wire format.
package qdranttest

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/quarry-rag/quarry/internal/openapicheck"
)

//go:embed openapi.json
var spec []byte

// Version is the Qdrant version the fake reports.
const Version = "1.19.0"

// Server is a fake Qdrant.
type Server struct {
	*httptest.Server
	v *openapicheck.Checker

	mu      sync.Mutex
	colls   map[string]*coll
	invalid []string
	calls   map[string]int // by operation, "POST /collections/{c}/points/query"
	// Ops records each request's method, path and body, in order, when
	// Record is set.
	Record bool
	Ops    []Op
	apiKey string
}

// Op is one recorded request.
type Op struct {
	Method, Path string
	Body         json.RawMessage
}

type coll struct {
	dense   map[string]vecParams
	sparse  map[string]string // name → modifier
	meta    map[string]any
	indexed map[string]string
	points  map[string]*pt
	version int
	inv     map[string]*inverted // by sparse vector, as of version
}

// inverted is a sparse vector's postings over a collection's points, so a
// keyword query scores only the points that hold its terms.
type inverted struct {
	version  int
	n        int // points that have the vector
	postings map[uint32][]posting
}

type posting struct {
	p   *pt
	val float64
}

// inverted returns the postings of a sparse vector, rebuilt when the
// collection changed since they were made.
func (c *coll) inverted(name string) *inverted {
	if inv := c.inv[name]; inv != nil && inv.version == c.version {
		return inv
	}
	inv := &inverted{version: c.version, postings: map[uint32][]posting{}}
	for _, p := range c.points {
		sv, ok := p.sparse[name]
		if !ok {
			continue
		}
		inv.n++
		for n, i := range sv.idx {
			inv.postings[i] = append(inv.postings[i], posting{p, sv.vals[n]})
		}
	}
	if c.inv == nil {
		c.inv = map[string]*inverted{}
	}
	c.inv[name] = inv
	return inv
}

type vecParams struct {
	size     int
	distance string
}

type pt struct {
	id      string
	payload map[string]any
	dense   map[string][]float64
	sparse  map[string]sparseVec
	version int
}

type sparseVec struct {
	idx  []uint32
	vals []float64
}

// Option configures a Server.
type Option func(*Server)

// WithAPIKey makes the fake refuse requests without this api-key header,
// as Qdrant does when service.api_key is set.
func WithAPIKey(key string) Option { return func(s *Server) { s.apiKey = key } }

// New starts a fake; Close stops it.
func New(opts ...Option) (*Server, error) {
	v, err := openapicheck.New(spec)
	if err != nil {
		return nil, fmt.Errorf("qdranttest: %w", err)
	}
	s := &Server{v: v, colls: map[string]*coll{}, calls: map[string]int{}}
	for _, o := range opts {
		o(s)
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s, nil
}

// URL returns the qdrant:// URL of the fake, with extra query parameters.
func (s *Server) StoreURL(query string) string {
	u := "qdrant://" + strings.TrimPrefix(s.Server.URL, "http://")
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

// Calls returns how many requests each operation got.
func (s *Server) Calls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.calls))
	for k, v := range s.calls {
		out[k] = v
	}
	return out
}

// status is an error answer.
type status struct {
	code int
	msg  string
}

func fail(code int, format string, args ...any) *status {
	return &status{code: code, msg: fmt.Sprintf(format, args...)}
}

// maxBody is Qdrant's default limit on a request body (service.max_request_size_mb = 32).
const maxBody = 32 << 20

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil || len(body) > maxBody {
		s.reply(w, r, nil, fail(http.StatusRequestEntityTooLarge, "Payload too large"))
		return
	}
	if s.apiKey != "" && r.Header.Get("api-key") != s.apiKey {
		s.reply(w, r, nil, fail(http.StatusUnauthorized, "Must provide an API key or an Authorization bearer token"))
		return
	}
	if err := s.v.Request(r, body); err != nil {
		msg := err.Error()
		s.mu.Lock()
		s.invalid = append(s.invalid, msg)
		s.mu.Unlock()
		s.reply(w, r, nil, fail(http.StatusBadRequest, "Format error in JSON body: %s", msg))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Record {
		s.Ops = append(s.Ops, Op{Method: r.Method, Path: r.URL.RequestURI(), Body: json.RawMessage(slices.Clone(body))})
	}
	res, st := s.route(r, body)
	s.reply(w, r, res, st)
}

// reply writes an answer in Qdrant's envelope and validates it against
// the document. It is called with s.mu held, except for early refusals.
func (s *Server) reply(w http.ResponseWriter, r *http.Request, result any, st *status) {
	code := http.StatusOK
	var out any
	if st != nil {
		code = st.code
		out = map[string]any{"status": map[string]any{"error": st.msg}, "time": 0.000012}
	} else if r.URL.Path == "/" {
		out = result
	} else {
		out = map[string]any{"result": result, "status": "ok", "time": 0.000012}
	}
	data, err := json.Marshal(out)
	if err != nil {
		code, data = http.StatusInternalServerError, []byte(`{"status":{"error":"encode"},"time":0}`)
	}
	if code < 300 { // error answers are checked for their envelope only by the client
		if err := s.v.Response(r, code, "application/json", data); err != nil {
			s.invalid = append(s.invalid, err.Error())
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(data)
}

func decode(body []byte, v any) *status {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fail(http.StatusBadRequest, "Format error in JSON body: %v", err)
	}
	return nil
}

func (s *Server) route(r *http.Request, body []byte) (any, *status) {
	path := strings.Trim(r.URL.Path, "/")
	parts := strings.Split(path, "/")
	op := r.Method + " /" + path
	if len(parts) >= 2 && parts[0] == "collections" {
		op = r.Method + " /collections/{c}"
		if len(parts) > 2 {
			op += "/" + strings.Join(parts[2:], "/")
		}
	}
	s.calls[op]++
	if path == "" && r.Method == http.MethodGet {
		return map[string]any{"title": "qdrant - vector search engine", "version": Version, "commit": "c34acc1a36c0c0b139f680f84d3cafb4180e98db"}, nil
	}
	if path == "collections" && r.Method == http.MethodGet {
		names := make([]string, 0, len(s.colls))
		for n := range s.colls {
			names = append(names, n)
		}
		sort.Strings(names)
		list := make([]any, len(names))
		for i, n := range names {
			list[i] = map[string]any{"name": n}
		}
		return map[string]any{"collections": list}, nil
	}
	if len(parts) < 2 || parts[0] != "collections" {
		return nil, fail(http.StatusNotFound, "Not found")
	}
	name := parts[1]
	rest := strings.Join(parts[2:], "/")
	if rest == "" && r.Method == http.MethodPut {
		return s.createCollection(name, body)
	}
	c := s.colls[name]
	if c == nil {
		return nil, fail(http.StatusNotFound, "Not found: Collection `%s` doesn't exist!", name)
	}
	switch r.Method + " " + rest {
	case "GET ":
		return s.info(name, c), nil
	case "DELETE ":
		delete(s.colls, name)
		return true, nil
	case "PUT index":
		var req struct {
			FieldName   string `json:"field_name"`
			FieldSchema any    `json:"field_schema"`
		}
		if st := decode(body, &req); st != nil {
			return nil, st
		}
		t, _ := req.FieldSchema.(string)
		c.indexed[req.FieldName] = t
		return s.updated(c), nil
	case "PUT points":
		var req struct {
			Points []json.RawMessage `json:"points"`
		}
		if st := decode(body, &req); st != nil {
			return nil, st
		}
		if st := s.upsert(c, req.Points); st != nil {
			return nil, st
		}
		return s.updated(c), nil
	case "POST points/delete":
		var sel map[string]json.RawMessage
		if st := decode(body, &sel); st != nil {
			return nil, st
		}
		if st := s.delete(c, sel); st != nil {
			return nil, st
		}
		return s.updated(c), nil
	case "POST points/batch":
		return s.batch(c, body)
	case "POST points":
		return s.retrieve(c, body)
	case "POST points/count":
		var req struct {
			Filter map[string]any `json:"filter"`
		}
		if st := decode(body, &req); st != nil {
			return nil, st
		}
		if st := checkIndexed(c, req.Filter); st != nil {
			return nil, st
		}
		n := 0
		for _, p := range c.points {
			if matchFilter(p, req.Filter) {
				n++
			}
		}
		return map[string]any{"count": n}, nil
	case "POST points/scroll":
		return s.scroll(c, body)
	case "POST points/query":
		var q map[string]any
		if st := decode(body, &q); st != nil {
			return nil, st
		}
		pts, st := s.query(c, q)
		if st != nil {
			return nil, st
		}
		return map[string]any{"points": pts}, nil
	case "POST points/query/batch":
		var req struct {
			Searches []map[string]any `json:"searches"`
		}
		if st := decode(body, &req); st != nil {
			return nil, st
		}
		out := make([]any, len(req.Searches))
		for i, q := range req.Searches {
			pts, st := s.query(c, q)
			if st != nil {
				return nil, st
			}
			out[i] = map[string]any{"points": pts}
		}
		return out, nil
	}
	return nil, fail(http.StatusNotFound, "the fake does not serve %s /collections/{name}/%s", r.Method, rest)
}

func (s *Server) updated(c *coll) any {
	c.version++
	return map[string]any{"operation_id": c.version, "status": "completed"}
}

func (s *Server) createCollection(name string, body []byte) (any, *status) {
	if _, ok := s.colls[name]; ok {
		return nil, fail(http.StatusConflict, "Wrong input: Collection `%s` already exists!", name)
	}
	var req struct {
		Vectors       map[string]json.RawMessage `json:"vectors"`
		SparseVectors map[string]struct {
			Modifier string `json:"modifier"`
		} `json:"sparse_vectors"`
		Metadata map[string]any `json:"metadata"`
	}
	if st := decode(body, &req); st != nil {
		return nil, st
	}
	c := &coll{dense: map[string]vecParams{}, sparse: map[string]string{}, meta: req.Metadata, indexed: map[string]string{}, points: map[string]*pt{}}
	for n, raw := range req.Vectors {
		var vp struct {
			Size     int    `json:"size"`
			Distance string `json:"distance"`
		}
		if err := json.Unmarshal(raw, &vp); err != nil || vp.Size == 0 {
			return nil, fail(http.StatusBadRequest, "Wrong input: the fake serves named vectors only")
		}
		c.dense[n] = vecParams{size: vp.Size, distance: vp.Distance}
	}
	for n, sp := range req.SparseVectors {
		c.sparse[n] = sp.Modifier
	}
	s.colls[name] = c
	return true, nil
}

func (s *Server) info(name string, c *coll) any {
	vectors := map[string]any{}
	for n, vp := range c.dense {
		vectors[n] = map[string]any{"size": vp.size, "distance": vp.distance}
	}
	sparse := map[string]any{}
	for n, m := range c.sparse {
		sparse[n] = map[string]any{"modifier": m}
	}
	schema := map[string]any{}
	for k, t := range c.indexed {
		schema[k] = map[string]any{"data_type": t, "points": 0}
	}
	return map[string]any{
		"status": "green", "optimizer_status": "ok", "segments_count": 1,
		"points_count": len(c.points), "indexed_vectors_count": 0,
		"config": map[string]any{
			"params":           map[string]any{"vectors": vectors, "sparse_vectors": sparse, "shard_number": 1, "replication_factor": 1, "write_consistency_factor": 1, "on_disk_payload": true},
			"hnsw_config":      map[string]any{"m": 16, "ef_construct": 100, "full_scan_threshold": 10000, "max_indexing_threads": 0, "on_disk": false},
			"optimizer_config": map[string]any{"deleted_threshold": 0.2, "vacuum_min_vector_number": 1000, "default_segment_number": 0, "flush_interval_sec": 5},
			"wal_config":       map[string]any{"wal_capacity_mb": 32, "wal_segments_ahead": 0, "wal_retain_closed": 1},
			"metadata":         c.meta,
		},
		"payload_schema": schema,
	}
}

// upsert writes points; a point with an id that exists replaces it.
func (s *Server) upsert(c *coll, raws []json.RawMessage) *status {
	pts := make([]*pt, 0, len(raws))
	for _, raw := range raws {
		var in struct {
			ID      any                        `json:"id"`
			Vector  map[string]json.RawMessage `json:"vector"`
			Payload map[string]any             `json:"payload"`
		}
		if st := decode(raw, &in); st != nil {
			return st
		}
		p := &pt{id: fmt.Sprint(in.ID), payload: in.Payload, dense: map[string][]float64{}, sparse: map[string]sparseVec{}}
		for n, v := range in.Vector {
			if vp, ok := c.dense[n]; ok {
				var vec []float64
				if err := json.Unmarshal(v, &vec); err != nil || len(vec) != vp.size {
					return fail(http.StatusBadRequest, "Wrong input: Vector dimension error: expected dim: %d, got %d", vp.size, len(vec))
				}
				if vp.distance == "Cosine" {
					vec = normalized(vec)
				}
				p.dense[n] = vec
				continue
			}
			if _, ok := c.sparse[n]; ok {
				var sv struct {
					Indices []uint32  `json:"indices"`
					Values  []float64 `json:"values"`
				}
				if err := json.Unmarshal(v, &sv); err != nil || len(sv.Indices) != len(sv.Values) {
					return fail(http.StatusBadRequest, "Wrong input: sparse vector %s: indices and values differ in length", n)
				}
				seen := map[uint32]bool{}
				for _, i := range sv.Indices {
					if seen[i] {
						return fail(http.StatusBadRequest, "Validation error in JSON body: [points[0].vector.%s: must be unique]", n)
					}
					seen[i] = true
				}
				p.sparse[n] = sparseVec{idx: sv.Indices, vals: sv.Values}
				continue
			}
			return fail(http.StatusBadRequest, "Wrong input: Not existing vector name error: %s", n)
		}
		pts = append(pts, p)
	}
	for _, p := range pts {
		c.version++
		p.version = c.version
		c.points[p.id] = p
	}
	return nil
}

func normalized(v []float64) []float64 {
	var n float64
	for _, x := range v {
		n += x * x
	}
	n = math.Sqrt(n)
	if n == 0 {
		return v
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(float32(x / n))
	}
	return out
}

func (s *Server) delete(c *coll, sel map[string]json.RawMessage) *status {
	if raw, ok := sel["points"]; ok {
		var ids []any
		if err := json.Unmarshal(raw, &ids); err != nil {
			return fail(http.StatusBadRequest, "Format error in JSON body: %v", err)
		}
		for _, id := range ids {
			delete(c.points, fmt.Sprint(id))
		}
		return nil
	}
	var f map[string]any
	if st := decode(sel["filter"], &f); st != nil {
		return st
	}
	if st := checkIndexed(c, f); st != nil {
		return st
	}
	for id, p := range c.points {
		if matchFilter(p, f) {
			delete(c.points, id)
		}
	}
	return nil
}

// batch applies update operations in order; like Qdrant, an operation
// that fails stops the batch with the earlier ones applied.
func (s *Server) batch(c *coll, body []byte) (any, *status) {
	var req struct {
		Operations []map[string]json.RawMessage `json:"operations"`
	}
	if st := decode(body, &req); st != nil {
		return nil, st
	}
	var results []any
	for _, op := range req.Operations {
		switch {
		case op["upsert"] != nil:
			var up struct {
				Points []json.RawMessage `json:"points"`
			}
			if st := decode(op["upsert"], &up); st != nil {
				return nil, st
			}
			if st := s.upsert(c, up.Points); st != nil {
				return nil, st
			}
		case op["delete"] != nil:
			var sel map[string]json.RawMessage
			if st := decode(op["delete"], &sel); st != nil {
				return nil, st
			}
			if st := s.delete(c, sel); st != nil {
				return nil, st
			}
		default:
			return nil, fail(http.StatusBadRequest, "the fake serves upsert and delete operations only")
		}
		results = append(results, s.updated(c))
	}
	return results, nil
}

// selection is with_payload or with_vector: a bool or a list of names.
func selection(v any) (all bool, names []string) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case []any:
		for _, n := range x {
			if s, ok := n.(string); ok {
				names = append(names, s)
			}
		}
	case map[string]any:
		if inc, ok := x["include"].([]any); ok {
			return selection(inc)
		}
		return true, nil
	}
	return false, names
}

func (s *Server) render(c *coll, p *pt, withPayload, withVector any, score *float64) map[string]any {
	out := map[string]any{"id": p.id, "version": p.version}
	if score != nil {
		out["score"] = float32(*score)
	}
	if withPayload == nil {
		withPayload = true // the default of retrieve and scroll
	}
	if all, names := selection(withPayload); all {
		out["payload"] = p.payload
	} else if names != nil {
		pl := map[string]any{}
		for _, n := range names {
			if v, ok := p.payload[n]; ok {
				pl[n] = v
			}
		}
		out["payload"] = pl
	}
	all, names := selection(withVector)
	if all || names != nil {
		vec := map[string]any{}
		for n, v := range p.dense {
			if all || slices.Contains(names, n) {
				f := make([]float32, len(v))
				for i, x := range v {
					f[i] = float32(x)
				}
				vec[n] = f
			}
		}
		for n, v := range p.sparse {
			if all || slices.Contains(names, n) {
				vals := make([]float32, len(v.vals))
				for i, x := range v.vals {
					vals[i] = float32(x)
				}
				vec[n] = map[string]any{"indices": v.idx, "values": vals}
			}
		}
		out["vector"] = vec
	}
	return out
}

func (s *Server) retrieve(c *coll, body []byte) (any, *status) {
	var req struct {
		IDs         []any `json:"ids"`
		WithPayload any   `json:"with_payload"`
		WithVector  any   `json:"with_vector"`
	}
	if st := decode(body, &req); st != nil {
		return nil, st
	}
	out := []any{}
	for _, id := range req.IDs {
		if p := c.points[fmt.Sprint(id)]; p != nil {
			out = append(out, s.render(c, p, req.WithPayload, req.WithVector, nil))
		}
	}
	return out, nil
}

func (s *Server) sortedIDs(c *coll) []string {
	ids := make([]string, 0, len(c.points))
	for id := range c.points {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func (s *Server) scroll(c *coll, body []byte) (any, *status) {
	var req struct {
		Filter      map[string]any `json:"filter"`
		Limit       *int           `json:"limit"`
		Offset      any            `json:"offset"`
		WithPayload any            `json:"with_payload"`
		WithVector  any            `json:"with_vector"`
	}
	if st := decode(body, &req); st != nil {
		return nil, st
	}
	if st := checkIndexed(c, req.Filter); st != nil {
		return nil, st
	}
	limit := 10
	if req.Limit != nil {
		limit = *req.Limit
	}
	out := []any{}
	var next any
	for _, id := range s.sortedIDs(c) {
		if req.Offset != nil && id < fmt.Sprint(req.Offset) {
			continue
		}
		p := c.points[id]
		if !matchFilter(p, req.Filter) {
			continue
		}
		if len(out) == limit {
			next = id
			break
		}
		out = append(out, s.render(c, p, req.WithPayload, req.WithVector, nil))
	}
	return map[string]any{"points": out, "next_page_offset": next}, nil
}

type scored struct {
	p     *pt
	score float64
}

// query serves the Query API: a nearest query on a dense or sparse
// vector, or RRF over prefetches.
func (s *Server) query(c *coll, q map[string]any) ([]any, *status) {
	res, st := s.run(c, q)
	if st != nil {
		return nil, st
	}
	out := make([]any, len(res))
	for i, r := range res {
		out[i] = s.render(c, r.p, q["with_payload"], q["with_vector"], &r.score)
	}
	return out, nil
}

func limitOf(q map[string]any) int {
	if n, ok := q["limit"].(json.Number); ok {
		if i, err := n.Int64(); err == nil {
			return int(i)
		}
	}
	return 10
}

func (s *Server) run(c *coll, q map[string]any) ([]scored, *status) {
	f, _ := q["filter"].(map[string]any)
	if st := checkIndexed(c, f); st != nil {
		return nil, st
	}
	limit := limitOf(q)
	var res []scored
	if pre, ok := q["prefetch"].([]any); ok {
		rrf, _ := q["query"].(map[string]any)["rrf"].(map[string]any)
		if rrf == nil {
			return nil, fail(http.StatusBadRequest, "the fake fuses prefetches by rrf only")
		}
		k := 2.0
		if n, ok := rrf["k"].(json.Number); ok {
			k, _ = n.Float64()
		}
		fused := map[*pt]float64{}
		for _, sub := range pre {
			sq, _ := sub.(map[string]any)
			if f != nil && sq["filter"] == nil {
				sq["filter"] = f
			}
			rs, st := s.run(c, sq)
			if st != nil {
				return nil, st
			}
			for pos, r := range rs {
				fused[r.p] += 1 / (float64(pos+1) + k - 1)
			}
		}
		for p, sc := range fused {
			if matchFilter(p, f) {
				res = append(res, scored{p, sc})
			}
		}
	} else {
		using, _ := q["using"].(string)
		switch qv := q["query"].(type) {
		case []any:
			vp, ok := c.dense[using]
			if !ok || len(qv) != vp.size {
				return nil, fail(http.StatusBadRequest, "Wrong input: Not existing vector name error: %s", using)
			}
			vec := make([]float64, len(qv))
			for i, x := range qv {
				vec[i], _ = x.(json.Number).Float64()
			}
			if vp.distance == "Cosine" {
				vec = normalized(vec)
			}
			for _, p := range c.points {
				pv, ok := p.dense[using]
				if !ok || !matchFilter(p, f) {
					continue
				}
				var dot float64
				for i := range vec {
					dot += vec[i] * pv[i]
				}
				res = append(res, scored{p, dot})
			}
		case map[string]any:
			mod, ok := c.sparse[using]
			if !ok {
				return nil, fail(http.StatusBadRequest, "Wrong input: Not existing vector name error: %s", using)
			}
			idx, _ := qv["indices"].([]any)
			vals, _ := qv["values"].([]any)
			qw := map[uint32]float64{}
			for i := range idx {
				n, _ := idx[i].(json.Number).Int64()
				v, _ := vals[i].(json.Number).Float64()
				qw[uint32(n)] = v
			}
			inv := c.inverted(using)
			if mod == "idf" {
				for i := range qw {
					df := float64(len(inv.postings[i]))
					qw[i] *= math.Log((float64(inv.n)-df+0.5)/(df+0.5) + 1)
				}
			}
			acc := map[*pt]float64{}
			for i, w := range qw {
				for _, ps := range inv.postings[i] {
					acc[ps.p] += w * ps.val
				}
			}
			for p, score := range acc {
				if matchFilter(p, f) {
					res = append(res, scored{p, score})
				}
			}
		default:
			return nil, fail(http.StatusBadRequest, "the fake serves nearest queries on a vector only")
		}
	}
	sort.Slice(res, func(i, j int) bool {
		if res[i].score != res[j].score {
			return res[i].score > res[j].score
		}
		return res[i].p.id < res[j].p.id
	})
	if len(res) > limit {
		res = res[:limit]
	}
	return res, nil
}

// checkIndexed refuses a filter on a payload key without an index, as a
// strict-mode collection does.
func checkIndexed(c *coll, f map[string]any) *status {
	var missing string
	walkKeys(f, func(k string) {
		if _, ok := c.indexed[k]; !ok && missing == "" {
			missing = k
		}
	})
	if missing != "" {
		return fail(http.StatusBadRequest, "Bad request: Index required but not found for \"%s\" of one of the following types: [keyword]. Help: Create an index for this key or use a different filter.", missing)
	}
	return nil
}

func walkKeys(v any, fn func(string)) {
	switch x := v.(type) {
	case map[string]any:
		if k, ok := x["key"].(string); ok {
			fn(k)
		}
		for _, c := range x {
			walkKeys(c, fn)
		}
	case []any:
		for _, c := range x {
			walkKeys(c, fn)
		}
	}
}

// matchFilter evaluates a filter as Qdrant does: every must, at least one
// should when there are any, no must_not.
func matchFilter(p *pt, f map[string]any) bool {
	if f == nil {
		return true
	}
	for _, c := range list(f["must"]) {
		if !matchCond(p, c) {
			return false
		}
	}
	if should := list(f["should"]); len(should) > 0 {
		ok := false
		for _, c := range should {
			if matchCond(p, c) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	for _, c := range list(f["must_not"]) {
		if matchCond(p, c) {
			return false
		}
	}
	return true
}

func list(v any) []any {
	switch x := v.(type) {
	case []any:
		return x
	case map[string]any:
		return []any{x}
	}
	return nil
}

func matchCond(p *pt, v any) bool {
	c, _ := v.(map[string]any)
	if c == nil {
		return false
	}
	if _, ok := c["key"]; !ok {
		if ie, ok := c["is_empty"].(map[string]any); ok {
			val, ok := p.payload[ie["key"].(string)]
			return !ok || val == nil || isEmptyArray(val)
		}
		if ids, ok := c["has_id"].([]any); ok {
			for _, id := range ids {
				if fmt.Sprint(id) == p.id {
					return true
				}
			}
			return false
		}
		return matchFilter(p, c) // a nested filter
	}
	val, ok := p.payload[c["key"].(string)]
	if !ok || val == nil {
		return false // Qdrant's check_empty: no value, no match
	}
	check := func(x any) bool { return checkValue(c, x) }
	if arr, ok := val.([]any); ok {
		return slices.ContainsFunc(arr, check)
	}
	return check(val)
}

func isEmptyArray(v any) bool {
	a, ok := v.([]any)
	return ok && len(a) == 0
}

// checkValue is Qdrant's ValueChecker for one stored value.
func checkValue(c map[string]any, stored any) bool {
	if m, ok := c["match"].(map[string]any); ok {
		if want, ok := m["value"]; ok {
			switch w := want.(type) {
			case bool:
				return stored == w
			case string:
				return stored == w
			case json.Number:
				got, ok := asInt(stored)
				wi, err := w.Int64()
				return ok && err == nil && got == wi
			}
			return false
		}
		if any, ok := m["any"].([]any); ok {
			for _, w := range any {
				if equalScalar(stored, w) {
					return true
				}
			}
			return false
		}
		if exc, ok := m["except"].([]any); ok {
			switch stored.(type) {
			case string, json.Number:
				for _, w := range exc {
					if equalScalar(stored, w) {
						return false
					}
				}
			}
			return true
		}
		return false
	}
	if r, ok := c["range"].(map[string]any); ok {
		n, ok := stored.(json.Number)
		if !ok {
			return false
		}
		x, err := n.Float64()
		if err != nil {
			return false
		}
		for op, b := range r {
			bn, ok := b.(json.Number)
			if !ok {
				continue
			}
			bf, _ := bn.Float64()
			switch op {
			case "gt":
				ok = x > bf
			case "gte":
				ok = x >= bf
			case "lt":
				ok = x < bf
			case "lte":
				ok = x <= bf
			}
			if !ok {
				return false
			}
		}
		return true
	}
	return false
}

// asInt is serde_json's as_i64: only a number written without a fraction
// or exponent.
func asInt(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok || strings.ContainsAny(string(n), ".eE") {
		return 0, false
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	return i, err == nil
}

func equalScalar(stored, want any) bool {
	switch w := want.(type) {
	case string:
		return stored == w
	case json.Number:
		got, ok := asInt(stored)
		wi, err := w.Int64()
		return ok && err == nil && got == wi
	}
	return false
}
