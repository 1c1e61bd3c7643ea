// Package pineconetest is a fake Pinecone for tests: a control plane that
// creates, describes, lists and deletes serverless indexes, and for each
// index a data plane on a host of its own, as Pinecone gives each index,
// with namespaces (created implicitly or with a metadata schema), upsert,
// fetch by id and by metadata, delete by id, filter or namespace, index
// statistics, and queries — exact cosine similarity on a dense index,
// dot product on a sparse one, which returns only records sharing a
// dimension with the query. Metadata filters follow Pinecone's documented
// operators ($eq, $ne, $gt, $gte, $lt, $lte, $in, $nin, $exists, $and,
// $or), equality on a list of strings holding the value, and refuse a
// field outside the namespace's schema. Pinecone's operation limits are
// enforced: 1,000 records and 2 MB an upsert, 40 KB of metadata a record,
// 1,000 values a sparse vector, 1,000 ids a fetch or delete, top_k up to
// 10,000, and 4 MB a query answer.
//
// Every request and every answer is validated against Pinecone's
// published OpenAPI documents for API version 2026-04 (kept here:
// pinecone-io/pinecone-api at 068bdf7, 2026-05-20).
//
// What it does not imitate: Pinecone's approximate search (vector search
// here is exact), its eventual consistency (a write is seen at once),
// pod-based indexes, and index creation taking time (an index is ready
// at its first description).
package pineconetest

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/quarry-rag/quarry/internal/openapicheck"
)

var (
	//go:embed db_control_2026-04.oas.yaml
	controlSpec []byte
	//go:embed db_data_2026-04.oas.yaml
	dataSpec []byte
)

var (
	controlChecker = sync.OnceValues(func() (*openapicheck.Checker, error) { return openapicheck.New(controlSpec) })
	dataChecker    = sync.OnceValues(func() (*openapicheck.Checker, error) { return openapicheck.New(dataSpec) })
)

// Pinecone's operation limits.
const (
	maxUpsertRecords = 1000
	maxUpsertBytes   = 2 << 20
	maxMetadataBytes = 40 << 10
	maxSparseValues  = 1000
	maxIDs           = 1000
	maxTopK          = 10000
	maxAnswerBytes   = 4 << 20
)

// record is a stored record.
type record struct {
	ID           string         `json:"id"`
	Values       []float64      `json:"values,omitempty"`
	SparseValues *sparseValues  `json:"sparseValues,omitempty"`
	Metadata     map[string]any `json:"metadata,omitempty"`
	norm         float64        // of Values, kept for cosine
}

type sparseValues struct {
	Indices []int64   `json:"indices"`
	Values  []float64 `json:"values"`
}

type namespace struct {
	records map[string]*record
	indexed map[string]bool // the schema's filterable fields; nil: all
	// postings are a sparse index's records by dimension, with their
	// values, so a query reads only the records it shares a dimension with.
	postings map[int64]map[string]float64
}

// put stores a record in place of one with its id.
func (ns *namespace) put(r *record) {
	ns.remove(r.ID)
	r.norm = norm(r.Values)
	ns.records[r.ID] = r
	if sv := r.SparseValues; sv != nil {
		for i, d := range sv.Indices {
			p := ns.postings[d]
			if p == nil {
				p = map[string]float64{}
				ns.postings[d] = p
			}
			p[r.ID] = sv.Values[i]
		}
	}
}

// remove deletes a record, if there is one.
func (ns *namespace) remove(id string) {
	r := ns.records[id]
	if r == nil {
		return
	}
	delete(ns.records, id)
	if sv := r.SparseValues; sv != nil {
		for _, d := range sv.Indices {
			delete(ns.postings[d], id)
			if len(ns.postings[d]) == 0 {
				delete(ns.postings, d)
			}
		}
	}
}

type index struct {
	name   string
	dim    int
	sparse bool
	srv    *httptest.Server
	spaces map[string]*namespace
}

// Server is a fake Pinecone.
type Server struct {
	*httptest.Server // the control plane
	// Key is the API key the server wants; empty takes any.
	Key string

	control, data *openapicheck.Checker

	mu      sync.Mutex
	failN   int // data-plane requests still to fail with failing
	failing int
	indexes map[string]*index
	calls   map[string]int
	invalid []string
}

// New starts a fake Pinecone; it and its index hosts are closed when the
// test ends.
func New(t testing.TB) *Server {
	t.Helper()
	cc, err := controlChecker()
	if err != nil {
		t.Fatal(err)
	}
	dc, err := dataChecker()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{control: cc, data: dc, indexes: map[string]*index{}, calls: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.serve(w, r, s.control, s.serveControl)
	}))
	t.Cleanup(func() {
		s.Close()
		for _, msg := range s.TakeInvalid() {
			t.Errorf("pineconetest: %s", msg)
		}
	})
	return s
}

// Close shuts down the control plane and every index's host, waiting for
// the requests under way.
func (s *Server) Close() {
	s.Server.Close()
	s.mu.Lock()
	hosts := make([]*httptest.Server, 0, len(s.indexes))
	for _, ix := range s.indexes {
		hosts = append(hosts, ix.srv)
	}
	s.mu.Unlock()
	for _, h := range hosts {
		h.Close()
	}
}

// StoreURL is the store URL of the fake, with the query params when
// given.
func (s *Server) StoreURL(params string) string {
	u := "pinecone://"
	if s.Key != "" {
		u += ":" + s.Key + "@"
	}
	u += s.Listener.Addr().String() + "?tls=false"
	if params != "" {
		u += "&" + params
	}
	return u
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

// Calls returns how many requests each operation ("POST /query")
// received, on every host.
func (s *Server) Calls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.calls {
		out[k] = v
	}
	return out
}

// Indexes lists the fake's index names.
func (s *Server) Indexes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for n := range s.indexes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// FailNext makes the next n data-plane requests fail with HTTP status
// code (429, 503, …) and Retry-After: 0, as Pinecone answers a project
// over its rate limits.
func (s *Server) FailNext(n, code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failN, s.failing = n, code
}

// Host is the data-plane address of an index, "" when there is none.
func (s *Server) Host(index string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ix := s.indexes[index]; ix != nil {
		return ix.srv.Listener.Addr().String()
	}
	return ""
}

// answer is a handler's reply.
type answer struct {
	code int
	body any
}

func ok(body any) answer { return answer{http.StatusOK, body} }

// rpcErr is the data plane's error body.
func rpcErr(code int, msg string) answer {
	return answer{code, map[string]any{"code": grpcCode(code), "message": msg, "details": []any{}}}
}

func grpcCode(status int) int {
	switch status {
	case http.StatusBadRequest:
		return 3 // INVALID_ARGUMENT
	case http.StatusNotFound:
		return 5
	case http.StatusConflict:
		return 6
	case http.StatusUnauthorized:
		return 16
	case http.StatusTooManyRequests:
		return 8 // RESOURCE_EXHAUSTED
	case http.StatusServiceUnavailable:
		return 14 // UNAVAILABLE
	}
	return 13
}

// ctlErr is the control plane's error body.
func ctlErr(code int, name, msg string) answer {
	return answer{code, map[string]any{"status": code, "error": map[string]any{"code": name, "message": msg}}}
}

// serve checks the key and the request, runs the handler under the lock,
// and checks its answer.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, check *openapicheck.Checker, h func(*http.Request, []byte) answer) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.calls[r.Method+" "+r.URL.Path]++
	s.mu.Unlock()
	if s.Key != "" && r.Header.Get("Api-Key") != s.Key {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	if err := check.Request(r, body); err != nil {
		s.note(err.Error())
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if r.Method == http.MethodPost && len(body) > maxUpsertBytes {
		s.reply(w, r, check, rpcErr(http.StatusRequestEntityTooLarge, "request larger than 2 MB"))
		return
	}
	s.mu.Lock()
	a := h(r, body)
	s.mu.Unlock()
	s.reply(w, r, check, a)
}

func (s *Server) reply(w http.ResponseWriter, r *http.Request, check *openapicheck.Checker, a answer) {
	out, err := json.Marshal(a.body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if a.code == http.StatusOK && len(out) > maxAnswerBytes {
		a = rpcErr(http.StatusBadRequest, "Response size exceeds the 4MB limit")
		out, _ = json.Marshal(a.body)
	}
	if err := check.Response(r, a.code, "application/json", out); err != nil {
		s.note(err.Error())
	}
	w.Header().Set("Content-Type", "application/json")
	if a.code == http.StatusTooManyRequests || a.code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "0")
	}
	w.WriteHeader(a.code)
	w.Write(out)
}

func (s *Server) note(msg string) {
	s.mu.Lock()
	s.invalid = append(s.invalid, msg)
	s.mu.Unlock()
}

// model is an index's IndexModel.
func (s *Server) model(ix *index) map[string]any {
	m := map[string]any{
		"name":                ix.name,
		"host":                ix.srv.Listener.Addr().String(),
		"deletion_protection": "disabled",
		"spec": map[string]any{"serverless": map[string]any{"cloud": "aws", "region": "us-east-1",
			"read_capacity": map[string]any{"mode": "OnDemand", "status": map[string]any{"state": "Ready"}}}},
		"status": map[string]any{"ready": true, "state": "Ready"},
	}
	if ix.sparse {
		m["metric"], m["vector_type"] = "dotproduct", "sparse"
	} else {
		m["metric"], m["vector_type"], m["dimension"] = "cosine", "dense", ix.dim
	}
	return m
}

func (s *Server) serveControl(r *http.Request, body []byte) answer {
	name, one := strings.CutPrefix(r.URL.Path, "/indexes/")
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/indexes":
		list := []any{}
		names := make([]string, 0, len(s.indexes))
		for n := range s.indexes {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			list = append(list, s.model(s.indexes[n]))
		}
		return ok(map[string]any{"indexes": list})
	case r.Method == http.MethodPost && r.URL.Path == "/indexes":
		var req struct {
			Name       string `json:"name"`
			Dimension  int    `json:"dimension"`
			Metric     string `json:"metric"`
			VectorType string `json:"vector_type"`
			Spec       struct {
				Serverless *struct{} `json:"serverless"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return ctlErr(http.StatusBadRequest, "INVALID_ARGUMENT", err.Error())
		}
		if s.indexes[req.Name] != nil {
			return ctlErr(http.StatusConflict, "ALREADY_EXISTS", "Resource already exists")
		}
		ix := &index{name: req.Name, dim: req.Dimension, spaces: map[string]*namespace{}}
		switch {
		case req.Spec.Serverless == nil:
			return ctlErr(http.StatusBadRequest, "INVALID_ARGUMENT", "the fake makes serverless indexes only")
		case req.VectorType == "sparse":
			if req.Metric != "dotproduct" || req.Dimension != 0 {
				return ctlErr(http.StatusBadRequest, "INVALID_ARGUMENT", "a sparse index takes metric dotproduct and no dimension")
			}
			ix.sparse = true
		case req.VectorType == "" || req.VectorType == "dense":
			if req.Dimension < 1 || req.Metric != "cosine" {
				return ctlErr(http.StatusBadRequest, "INVALID_ARGUMENT", "the fake's dense indexes take a dimension and metric cosine")
			}
		default:
			return ctlErr(http.StatusBadRequest, "INVALID_ARGUMENT", "vector_type "+req.VectorType)
		}
		ix.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.serve(w, r, s.data, func(r *http.Request, body []byte) answer {
				if s.failN > 0 {
					s.failN--
					return rpcErr(s.failing, "Too many requests, please retry shortly")
				}
				return s.serveData(ix, r, body)
			})
		}))
		s.indexes[req.Name] = ix
		return answer{http.StatusCreated, s.model(ix)}
	case one && r.Method == http.MethodGet:
		ix := s.indexes[name]
		if ix == nil {
			return ctlErr(http.StatusNotFound, "NOT_FOUND", "Resource "+name+" not found")
		}
		return ok(s.model(ix))
	case one && r.Method == http.MethodDelete:
		ix := s.indexes[name]
		if ix == nil {
			return ctlErr(http.StatusNotFound, "NOT_FOUND", "Resource "+name+" not found")
		}
		delete(s.indexes, name)
		go ix.srv.Close()
		return answer{http.StatusAccepted, nil}
	}
	return ctlErr(http.StatusNotFound, "NOT_FOUND", "the fake does not serve "+r.Method+" "+r.URL.Path)
}

// space returns a namespace, creating it when create is set.
func (ix *index) space(name string, create bool) *namespace {
	if name == "" {
		name = "__default__"
	}
	ns := ix.spaces[name]
	if ns == nil && create {
		ns = &namespace{records: map[string]*record{}, postings: map[int64]map[string]float64{}}
		ix.spaces[name] = ns
	}
	return ns
}

func (s *Server) serveData(ix *index, r *http.Request, body []byte) answer {
	var req map[string]any
	if len(body) > 0 {
		d := json.NewDecoder(bytes.NewReader(body))
		if err := d.Decode(&req); err != nil {
			return rpcErr(http.StatusBadRequest, err.Error())
		}
	}
	nsName, _ := req["namespace"].(string)
	switch {
	case r.URL.Path == "/vectors/upsert":
		return ix.upsert(body)
	case r.URL.Path == "/vectors/fetch":
		q := r.URL.Query()
		if len(q["ids"]) > maxIDs {
			return rpcErr(http.StatusBadRequest, "at most 1000 ids a fetch")
		}
		out := map[string]any{}
		if ns := ix.space(q.Get("namespace"), false); ns != nil {
			for _, id := range q["ids"] {
				if rec := ns.records[id]; rec != nil {
					out[id] = rec
				}
			}
		}
		return ok(map[string]any{"vectors": out, "namespace": q.Get("namespace"), "usage": map[string]any{"readUnits": 1}})
	case r.URL.Path == "/vectors/fetch_by_metadata":
		return ix.fetchByMetadata(req, nsName)
	case r.URL.Path == "/vectors/delete":
		return ix.delete(req, nsName)
	case r.URL.Path == "/query":
		return ix.query(body, nsName)
	case r.URL.Path == "/describe_index_stats":
		spaces, total := map[string]any{}, 0
		for n, ns := range ix.spaces {
			spaces[n] = map[string]any{"vectorCount": len(ns.records)}
			total += len(ns.records)
		}
		st := map[string]any{"namespaces": spaces, "totalVectorCount": total, "indexFullness": 0, "vectorType": "dense", "metric": "cosine", "dimension": ix.dim}
		if ix.sparse {
			st["vectorType"], st["metric"] = "sparse", "dotproduct"
		}
		return ok(st)
	case r.URL.Path == "/namespaces" && r.Method == http.MethodPost:
		name, _ := req["name"].(string)
		if name == "" {
			return rpcErr(http.StatusBadRequest, "a namespace needs a name")
		}
		if ix.space(name, false) != nil {
			return rpcErr(http.StatusConflict, "namespace "+name+" already exists")
		}
		ns := ix.space(name, true)
		if sc, ok := req["schema"].(map[string]any); ok {
			ns.indexed = map[string]bool{}
			fields, _ := sc["fields"].(map[string]any)
			for f, v := range fields {
				if m, _ := v.(map[string]any); m["filterable"] == true {
					ns.indexed[f] = true
				}
			}
		}
		return ok(describeNS(name, ns))
	case strings.HasPrefix(r.URL.Path, "/namespaces/"):
		name := strings.TrimPrefix(r.URL.Path, "/namespaces/")
		ns := ix.space(name, false)
		if ns == nil {
			return rpcErr(http.StatusNotFound, "Namespace not found")
		}
		if r.Method == http.MethodDelete {
			delete(ix.spaces, name)
			return ok(map[string]any{})
		}
		return ok(describeNS(name, ns))
	}
	return rpcErr(http.StatusNotFound, "the fake does not serve "+r.Method+" "+r.URL.Path)
}

func describeNS(name string, ns *namespace) map[string]any {
	d := map[string]any{"name": name, "record_count": len(ns.records)}
	if ns.indexed != nil {
		fields := map[string]any{}
		for f := range ns.indexed {
			fields[f] = map[string]any{"filterable": true}
		}
		d["schema"] = map[string]any{"fields": fields}
	}
	return d
}

func (ix *index) upsert(body []byte) answer {
	var req struct {
		Vectors   []*record `json:"vectors"`
		Namespace string    `json:"namespace"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return rpcErr(http.StatusBadRequest, err.Error())
	}
	if len(req.Vectors) == 0 || len(req.Vectors) > maxUpsertRecords {
		return rpcErr(http.StatusBadRequest, fmt.Sprintf("an upsert takes 1 to %d records, not %d", maxUpsertRecords, len(req.Vectors)))
	}
	for _, v := range req.Vectors {
		if err := ix.check(v); err != nil {
			return rpcErr(http.StatusBadRequest, "record "+v.ID+": "+err.Error())
		}
	}
	ns := ix.space(req.Namespace, true)
	for _, v := range req.Vectors {
		ns.put(v)
	}
	return ok(map[string]any{"upsertedCount": len(req.Vectors)})
}

// check refuses a record the index would refuse.
func (ix *index) check(v *record) error {
	if v.ID == "" || len(v.ID) > 512 {
		return fmt.Errorf("an id is 1 to 512 characters")
	}
	if ix.sparse {
		if v.Values != nil {
			return fmt.Errorf("a sparse index takes no dense values")
		}
		if v.SparseValues == nil || len(v.SparseValues.Indices) == 0 {
			return fmt.Errorf("a sparse index needs sparse values")
		}
	} else {
		if len(v.Values) != ix.dim {
			return fmt.Errorf("vector dimension %d does not match the dimension of the index %d", len(v.Values), ix.dim)
		}
		if v.SparseValues != nil {
			return fmt.Errorf("sparse values need an index under dotproduct")
		}
		if norm(v.Values) == 0 {
			return fmt.Errorf("dense vectors must contain at least one non-zero value")
		}
	}
	if sv := v.SparseValues; sv != nil {
		if len(sv.Indices) != len(sv.Values) || len(sv.Indices) > maxSparseValues {
			return fmt.Errorf("sparse vector: %d indices, %d values (at most %d)", len(sv.Indices), len(sv.Values), maxSparseValues)
		}
		seen := map[int64]bool{}
		for _, i := range sv.Indices {
			if i < 0 || i > math.MaxUint32 || seen[i] {
				return fmt.Errorf("sparse vector: index %d repeated or outside uint32", i)
			}
			seen[i] = true
		}
	}
	if b, _ := json.Marshal(v.Metadata); len(b) > maxMetadataBytes {
		return fmt.Errorf("metadata size is %d bytes, which exceeds the limit of %d bytes per vector", len(b), maxMetadataBytes)
	}
	for k, x := range v.Metadata {
		switch x := x.(type) {
		case string, float64, bool:
		case []any:
			for _, e := range x {
				if _, ok := e.(string); !ok {
					return fmt.Errorf("metadata %s: a list holds strings only", k)
				}
			}
		default:
			return fmt.Errorf("metadata %s: %s is not a string, number, boolean or list of strings", k, js(x))
		}
	}
	return nil
}

func norm(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

// filterOf compiles a request's filter (nil matches every record).
func (ns *namespace) filterOf(req map[string]any) (matcher, error) {
	f, has := req["filter"]
	if !has {
		return func(map[string]any) bool { return true }, nil
	}
	return compile(f, ns.indexed)
}

func (ix *index) fetchByMetadata(req map[string]any, name string) answer {
	limit := 100
	if l, ok := req["limit"].(float64); ok {
		limit = int(l)
	}
	after, _ := req["paginationToken"].(string)
	out := map[string]any{}
	res := map[string]any{"vectors": out, "namespace": name, "usage": map[string]any{"readUnits": 1}}
	ns := ix.space(name, false)
	if ns == nil {
		return ok(res)
	}
	m, err := ns.filterOf(req)
	if err != nil {
		return rpcErr(http.StatusBadRequest, err.Error())
	}
	ids := make([]string, 0, len(ns.records))
	for id := range ns.records {
		if id > after {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		if !m(ns.records[id].Metadata) {
			continue
		}
		if len(out) == limit {
			res["pagination"] = map[string]any{"next": last(out)}
			break
		}
		out[id] = ns.records[id]
	}
	return ok(res)
}

// last is the greatest id of a page, the token of the next.
func last(page map[string]any) string {
	l := ""
	for id := range page {
		l = max(l, id)
	}
	return l
}

func (ix *index) delete(req map[string]any, name string) answer {
	ns := ix.space(name, false)
	if ns == nil {
		return rpcErr(http.StatusNotFound, "Namespace not found")
	}
	if all, _ := req["deleteAll"].(bool); all {
		ns.records, ns.postings = map[string]*record{}, map[int64]map[string]float64{}
		return ok(map[string]any{})
	}
	if ids, has := req["ids"].([]any); has {
		if len(ids) > maxIDs {
			return rpcErr(http.StatusBadRequest, "at most 1000 ids a delete")
		}
		for _, id := range ids {
			ns.remove(fmt.Sprint(id))
		}
		return ok(map[string]any{})
	}
	if _, has := req["filter"]; has {
		m, err := ns.filterOf(req)
		if err != nil {
			return rpcErr(http.StatusBadRequest, err.Error())
		}
		for id, rec := range ns.records {
			if m(rec.Metadata) {
				ns.remove(id)
			}
		}
		return ok(map[string]any{})
	}
	return rpcErr(http.StatusBadRequest, "a delete names ids, a filter or deleteAll")
}

// match is a scored record of a query's answer.
type match struct {
	ID       string         `json:"id"`
	Score    float64        `json:"score"`
	Values   []float64      `json:"values,omitempty"`
	Sparse   *sparseValues  `json:"sparseValues,omitempty"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

func (ix *index) query(body []byte, name string) answer {
	var req struct {
		TopK            int           `json:"topK"`
		Vector          []float64     `json:"vector"`
		SparseVector    *sparseValues `json:"sparseVector"`
		ID              string        `json:"id"`
		IncludeValues   bool          `json:"includeValues"`
		IncludeMetadata bool          `json:"includeMetadata"`
	}
	var raw map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		return rpcErr(http.StatusBadRequest, err.Error())
	}
	_ = json.Unmarshal(body, &raw)
	if req.TopK < 1 || req.TopK > maxTopK {
		return rpcErr(http.StatusBadRequest, "topK must be 1 to 10000")
	}
	if req.ID != "" {
		return rpcErr(http.StatusBadRequest, "the fake does not query by id")
	}
	switch {
	case ix.sparse && (req.Vector != nil || req.SparseVector == nil):
		return rpcErr(http.StatusBadRequest, "a sparse index is queried with a sparse vector only")
	case !ix.sparse && (len(req.Vector) != ix.dim || req.SparseVector != nil):
		return rpcErr(http.StatusBadRequest, fmt.Sprintf("query vector dimension %d does not match the dimension of the index %d", len(req.Vector), ix.dim))
	}
	res := map[string]any{"matches": []match{}, "namespace": name, "usage": map[string]any{"readUnits": 1}}
	ns := ix.space(name, false)
	if ns == nil {
		return ok(res)
	}
	m, err := ns.filterOf(raw)
	if err != nil {
		return rpcErr(http.StatusBadRequest, err.Error())
	}
	// A sparse query scores the records sharing a dimension with it.
	candidates := ns.records
	scores := map[string]float64{}
	if ix.sparse {
		candidates = map[string]*record{}
		for i, d := range req.SparseVector.Indices {
			for id, v := range ns.postings[d] {
				candidates[id] = ns.records[id]
				scores[id] += req.SparseVector.Values[i] * v
			}
		}
	}
	qnorm := norm(req.Vector)
	var ms []match
	for _, rec := range candidates {
		if !m(rec.Metadata) {
			continue
		}
		score := scores[rec.ID]
		if !ix.sparse {
			dot := 0.0
			for i, x := range rec.Values {
				dot += x * req.Vector[i]
			}
			if n := rec.norm * qnorm; n > 0 {
				score = dot / n
			}
		}
		// Pinecone answers scores as 32-bit floats.
		score = float64(float32(score))
		mt := match{ID: rec.ID, Score: score}
		if req.IncludeValues {
			mt.Values, mt.Sparse = rec.Values, rec.SparseValues
		}
		if req.IncludeMetadata {
			mt.Metadata = rec.Metadata
		}
		ms = append(ms, mt)
	}
	sort.Slice(ms, func(i, j int) bool {
		if ms[i].Score != ms[j].Score {
			return ms[i].Score > ms[j].Score
		}
		return ms[i].ID < ms[j].ID
	})
	if len(ms) > req.TopK {
		ms = ms[:req.TopK]
	}
	if ms != nil {
		res["matches"] = ms
	}
	return ok(res)
}
