package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/embed/hash"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/keys"
	"github.com/quarry-rag/quarry/server"
	"github.com/quarry-rag/quarry/store"
	_ "github.com/quarry-rag/quarry/store/memory"
)

// fixture is a server on an in-memory store behind a real HTTP server,
// with a folder of documents as its ingest root.
type fixture struct {
	url   string
	root  string
	keys  *keys.File
	srv   *server.Server
	store *store.Store
	logs  *syncBuffer
}

// syncBuffer is a bytes.Buffer safe for the server's concurrent logging.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// config is a server's configuration in a test: the server's, the
// knowledge base's options, and a wrapper of the knowledge base's
// ingestion options.
type config struct {
	server.Config
	store  string // the store's URL; memory: when empty
	kb     []quarry.Option
	ingest func(next func(*store.Collection) ingest.Options) func(*store.Collection) ingest.Options
}

type option func(*config)

func newFixture(t *testing.T, opts ...option) *fixture {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	write(t, filepath.Join(root, "docs", "refunds.md"), "# Policies\n\n## Refunds\n\nRefunds are paid within fourteen days of the return.\n")
	emb, err := hash.New(hash.Config{})
	if err != nil {
		t.Fatal(err)
	}
	kf, err := keys.Open(filepath.Join(t.TempDir(), "keys.json"))
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	cfg := config{Config: server.Config{
		Roots: []string{root}, UploadDir: t.TempDir(), Keys: kf, RateLimit: -1,
		MaxUploadBytes: 64 << 10, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.store == "" {
		cfg.store = "memory:"
	}
	st, err := store.Open(ctx, cfg.store)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	kb, err := quarry.New(ctx, st, append([]quarry.Option{quarry.WithEmbedder(emb), quarry.WithMode("keyword")}, cfg.kb...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kb.Close() })
	cfg.KB = kb
	cfg.IngestOptions = func(c *store.Collection) ingest.Options {
		opt := kb.IngestOptions(c)
		opt.Workers = 1
		return opt
	}
	if cfg.ingest != nil {
		cfg.IngestOptions = cfg.ingest(cfg.IngestOptions)
	}
	srv, err := server.New(cfg.Config)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.Close()
		srv.Close()
	})
	return &fixture{url: hs.URL, root: root, keys: kf, srv: srv, store: st, logs: logs}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// response is a decoded reply.
type response struct {
	status int
	body   map[string]any
	raw    string
	header http.Header
}

func (r response) code() string { s, _ := r.body["code"].(string); return s }

// do sends a JSON request with an optional key.
func (f *fixture) do(t *testing.T, method, path, key string, body any) response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		switch b := body.(type) {
		case string:
			rd = strings.NewReader(b)
		default:
			js, err := json.Marshal(b)
			if err != nil {
				t.Fatal(err)
			}
			rd = bytes.NewReader(js)
		}
	}
	req, err := http.NewRequest(method, f.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return send(t, req)
}

func send(t *testing.T, req *http.Request) response {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := response{status: resp.StatusCode, raw: string(b), header: resp.Header}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/") && len(b) > 0 {
		_ = json.Unmarshal(b, &r.body)
	}
	return r
}

// upload posts files as multipart form data.
func (f *fixture) upload(t *testing.T, coll, key string, files map[string]string, meta string) response {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for name, text := range files {
		w, err := mw.CreateFormFile("file", name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, text)
	}
	if meta != "" {
		mw.WriteField("metadata", meta)
	}
	mw.Close()
	req, err := http.NewRequest(http.MethodPost, f.url+"/v1/collections/"+coll+"/uploads", &buf)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return send(t, req)
}

// events reads a server-sent event stream to its end.
func (f *fixture) events(t *testing.T, method, path, key string, body any) []event {
	t.Helper()
	var rd io.Reader
	if body != nil {
		js, _ := json.Marshal(body)
		rd = bytes.NewReader(js)
	}
	req, err := http.NewRequest(method, f.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s %s: content type %q, status %d: %s", method, path, ct, resp.StatusCode, b)
	}
	var out []event
	ev := event{name: "message"}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			ev.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.data); err != nil {
				t.Fatalf("event data %q: %v", line, err)
			}
		case line == "":
			if ev.data != nil {
				out = append(out, ev)
			}
			ev = event{name: "message"}
		}
	}
	return out
}

type event struct {
	name string
	data map[string]any
}

// waitJob follows a job to its end through its event stream.
func (f *fixture) waitJob(t *testing.T, id, key string) map[string]any {
	t.Helper()
	evs := f.events(t, http.MethodGet, "/v1/jobs/"+id+"/events", key, nil)
	if len(evs) == 0 {
		t.Fatalf("job %s: no events", id)
	}
	last := evs[len(evs)-1]
	if last.name != "progress" || last.data["state"] != "done" {
		t.Fatalf("job %s ended with %s %v", id, last.name, last.data)
	}
	return last.data
}

func results(r response) []map[string]any {
	rs, _ := r.body["results"].([]any)
	out := make([]map[string]any, len(rs))
	for i, x := range rs {
		out[i], _ = x.(map[string]any)
	}
	return out
}

func mustKey(t *testing.T, kf *keys.File, spec keys.Spec) string {
	t.Helper()
	_, token, err := kf.Create(spec)
	if err != nil {
		t.Fatal(err)
	}
	return token
}

var tenantSchema = map[string]any{"fields": []map[string]any{
	{"name": "tenant", "type": "string", "required": true, "filterable": true},
	{"name": "year", "type": "integer", "filterable": true},
}}

func expect(t *testing.T, what string, r response, status int, code string) {
	t.Helper()
	if r.status != status || (code != "" && r.code() != code) {
		t.Fatalf("%s: got %d %s, want %d %s: %s", what, r.status, r.code(), status, code, r.raw)
	}
}

func TestEndpoints(t *testing.T) {
	f := newFixture(t)
	expect(t, "create", f.do(t, "POST", "/v1/collections", "", map[string]any{"name": "kb", "schema": tenantSchema}), 201, "")
	expect(t, "create again", f.do(t, "POST", "/v1/collections", "", map[string]any{"name": "kb"}), 409, server.CodeConflict)
	expect(t, "create bad name", f.do(t, "POST", "/v1/collections", "", map[string]any{"name": "Bad Name"}), 400, server.CodeInvalidRequest)
	expect(t, "create other embedder", f.do(t, "POST", "/v1/collections", "", map[string]any{"name": "x", "embedder": "openai/text-embedding-3-small"}), 400, server.CodeInvalidRequest)
	up := f.do(t, "POST", "/v1/collections/kb/documents", "", map[string]any{"documents": []map[string]any{
		{"id": "a1", "text": "Acme ships parcels from Rotterdam every weekday.", "source": "acme.md", "metadata": map[string]any{"tenant": "acme", "year": 2025}},
		{"id": "g1", "text": "Globex ships parcels from Hamburg on Mondays.", "source": "globex.md", "metadata": map[string]any{"tenant": "globex", "year": 2024}},
	}})
	expect(t, "upsert", up, 200, "")
	expect(t, "upsert invalid", f.do(t, "POST", "/v1/collections/kb/documents", "", map[string]any{"documents": []map[string]any{{"text": "no tenant"}}}), 400, server.CodeInvalidRequest)

	for _, tc := range []struct {
		name string
		body map[string]any
		want []string
	}{
		{"keyword", map[string]any{"query": "Rotterdam parcels", "mode": "keyword"}, []string{"a1", "g1"}},
		{"hybrid explain", map[string]any{"query": "parcels Rotterdam", "mode": "hybrid", "explain": true}, []string{"a1", "g1"}},
		{"vector", map[string]any{"query": "Hamburg parcels", "mode": "vector", "top_k": 1}, []string{"g1"}},
		{"text filter", map[string]any{"query": "parcels", "filter": "year >= 2025"}, []string{"a1"}},
		{"short JSON filter", map[string]any{"query": "parcels", "filter": map[string]any{"tenant": "globex"}}, []string{"g1"}},
		{"canonical filter", map[string]any{"query": "parcels", "filter": map[string]any{"operator": "eq", "field": "tenant", "value": "acme"}}, []string{"a1"}},
	} {
		r := f.do(t, "POST", "/v1/collections/kb/search", "", tc.body)
		expect(t, "search "+tc.name, r, 200, "")
		var ids []string
		for _, h := range results(r) {
			ids = append(ids, h["id"].(string))
			if tc.body["explain"] == true && h["explain"] == nil {
				t.Errorf("search %s: no explanation in %v", tc.name, h)
			}
		}
		if strings.Join(ids, ",") != strings.Join(tc.want, ",") {
			t.Errorf("search %s: got %v, want %v", tc.name, ids, tc.want)
		}
	}
	expect(t, "search bad filter", f.do(t, "POST", "/v1/collections/kb/search", "", map[string]any{"query": "x", "filter": "color = 'red'"}), 400, server.CodeInvalidFilter)
	expect(t, "search bad syntax", f.do(t, "POST", "/v1/collections/kb/search", "", map[string]any{"query": "x", "filter": "year >>= 1"}), 400, server.CodeInvalidFilter)
	expect(t, "search bad mode", f.do(t, "POST", "/v1/collections/kb/search", "", map[string]any{"query": "x", "mode": "fuzzy"}), 422, server.CodeInvalidRequest)
	expect(t, "search missing", f.do(t, "POST", "/v1/collections/nope/search", "", map[string]any{"query": "x"}), 404, server.CodeNotFound)

	ask := f.do(t, "POST", "/v1/collections/kb/ask", "", map[string]any{"question": "Where does Acme ship parcels from?", "thread": "t1"})
	expect(t, "ask", ask, 200, "")
	if cs, _ := ask.body["citations"].([]any); len(cs) == 0 || !strings.Contains(ask.body["answer"].(string), "[1]") {
		t.Fatalf("ask: no citation: %s", ask.raw)
	}
	// Nothing relevant: the answer abstains, unless the request turns the
	// floor off; a floor over 1 is refused.
	off := f.do(t, "POST", "/v1/collections/kb/ask", "", map[string]any{"question": "Where are parcels shipped from on Mars?", "min_relevance": 1})
	expect(t, "ask off-topic", off, 200, "")
	if cs, _ := off.body["citations"].([]any); off.body["abstained"] != true || len(cs) != 0 {
		t.Errorf("ask off-topic: %s", off.raw)
	}
	on := f.do(t, "POST", "/v1/collections/kb/ask", "", map[string]any{"question": "Where are parcels shipped from on Mars?", "min_relevance": -1})
	if on.body["abstained"] == true {
		t.Errorf("ask with min_relevance -1: %s", on.raw)
	}
	expect(t, "ask min_relevance 2", f.do(t, "POST", "/v1/collections/kb/ask", "", map[string]any{"question": "x", "min_relevance": 2}), 422, server.CodeInvalidRequest)
	th := f.do(t, "GET", "/v1/threads/t1", "", nil)
	expect(t, "thread", th, 200, "")
	if turns, _ := th.body["turns"].([]any); len(turns) != 2 {
		t.Fatalf("thread: want 2 turns: %s", th.raw)
	}
	expect(t, "delete thread", f.do(t, "DELETE", "/v1/threads/t1", "", nil), 204, "")
	expect(t, "thread gone", f.do(t, "GET", "/v1/threads/t1", "", nil), 404, server.CodeNotFound)

	evs := f.events(t, "POST", "/v1/collections/kb/ask/stream", "", map[string]any{"question": "Where does Globex ship from?"})
	names := map[string]int{}
	for _, e := range evs {
		names[e.name]++
	}
	if names["text"] == 0 || names["citation"] == 0 || names["answer"] != 1 || evs[len(evs)-1].name != "answer" {
		t.Fatalf("ask stream events: %v", names)
	}
	// With agent, the steps stream first, then the answer as before.
	evs = f.events(t, "POST", "/v1/collections/kb/ask/stream", "", map[string]any{"question": "Where does Globex ship from and where does Acme ship parcels from?", "agent": true})
	if len(evs) < 3 || evs[0].name != "step" || evs[len(evs)-1].name != "answer" {
		t.Fatalf("agent ask stream events: %v", evs)
	}
	if evs[0].data["kind"] != "triage" {
		t.Errorf("first step %v", evs[0].data)
	}
	ag := f.do(t, "POST", "/v1/collections/kb/ask", "", map[string]any{"question": "Where does Globex ship from and where does Acme ship parcels from?", "agent": true})
	expect(t, "agent ask", ag, 200, "")
	if run, _ := ag.body["agent"].(map[string]any); run == nil || run["triage"].(map[string]any)["kind"] != "multi_step" {
		t.Errorf("agent ask: %s", ag.raw)
	}

	// A stream's request is checked before the stream opens.
	expect(t, "ask stream, bad filter", f.do(t, "POST", "/v1/collections/kb/ask/stream", "", map[string]any{"question": "x", "filter": "color = 'red'"}), 400, server.CodeInvalidFilter)
	expect(t, "ask stream, no collection", f.do(t, "POST", "/v1/collections/nope/ask/stream", "", map[string]any{"question": "x"}), 404, server.CodeNotFound)
	expect(t, "job events, no job", f.do(t, "GET", "/v1/jobs/nope/events", "", nil), 404, server.CodeNotFound)

	r := f.upload(t, "kb", "", map[string]string{"notes.md": "# Notes\n\nAcme notes about returns and refunds.\n"}, `{"tenant":"acme"}`)
	expect(t, "upload", r, 202, "")
	job := f.waitJob(t, r.body["job_id"].(string), "")
	if job["chunks"].(float64) < 1 {
		t.Fatalf("upload job wrote nothing: %v", job)
	}
	expect(t, "get job", f.do(t, "GET", "/v1/jobs/"+job["id"].(string), "", nil), 200, "")
	expect(t, "unknown job", f.do(t, "GET", "/v1/jobs/nope", "", nil), 404, server.CodeNotFound)
	jl := f.do(t, "GET", "/v1/jobs?limit=5", "", nil)
	expect(t, "list jobs", jl, 200, "")
	if js, _ := jl.body["jobs"].([]any); len(js) != 1 {
		t.Fatalf("list jobs: %s", jl.raw)
	}
	r = f.do(t, "POST", "/v1/collections/plain/ingest", "", map[string]any{"paths": []string{"docs"}})
	expect(t, "ingest", r, 202, "")
	f.waitJob(t, r.body["job_id"].(string), "")
	s := f.do(t, "POST", "/v1/collections/plain/search", "", map[string]any{"query": "refunds"})
	if rs := results(s); len(rs) == 0 || rs[0]["source"] != "refunds.md" || rs[0]["headings"] == nil {
		t.Fatalf("search after ingest: %s", s.raw)
	}

	st := f.do(t, "GET", "/v1/status", "", nil)
	expect(t, "status", st, 200, "")
	if st.body["permission"] != "admin" || st.body["keys"] != false {
		t.Fatalf("status: %s", st.raw)
	}
	lc := f.do(t, "GET", "/v1/collections", "", nil)
	expect(t, "list collections", lc, 200, "")
	if cs, _ := lc.body["collections"].([]any); len(cs) != 2 {
		t.Fatalf("collections: %s", lc.raw)
	}

	d := f.do(t, "POST", "/v1/collections/kb/documents/delete", "", map[string]any{"source": "globex.md"})
	expect(t, "delete by source", d, 200, "")
	if d.body["deleted"].(float64) != 1 {
		t.Fatalf("delete by source: %s", d.raw)
	}
	d = f.do(t, "POST", "/v1/collections/kb/documents/delete", "", map[string]any{"filter": "tenant = 'acme' and year = 2025"})
	expect(t, "delete by filter", d, 200, "")
	if d.body["deleted"].(float64) != 1 {
		t.Fatalf("delete by filter: %s", d.raw)
	}
	expect(t, "delete everything", f.do(t, "POST", "/v1/collections/kb/documents/delete", "", map[string]any{}), 400, server.CodeInvalidRequest)
	expect(t, "drop", f.do(t, "DELETE", "/v1/collections/plain", "", nil), 204, "")
	expect(t, "drop again", f.do(t, "DELETE", "/v1/collections/plain", "", nil), 404, server.CodeNotFound)

	for _, p := range []struct{ path, want string }{{"/healthz", "ok"}, {"/readyz", "ready"}, {"/metrics", "quarry_http_request_duration_seconds_bucket"}, {"/", "<html"}, {"/ui/app.js", "fetch("}} {
		r := f.do(t, "GET", p.path, "", nil)
		if r.status != 200 || !strings.Contains(r.raw, p.want) {
			t.Errorf("GET %s: %d, want %q in %.200s", p.path, r.status, p.want, r.raw)
		}
	}
	m := f.do(t, "GET", "/metrics", "", nil).raw
	for _, want := range []string{`quarry_collection_documents{collection="kb"}`, `quarry_ingest_jobs_total{state="done"} 2`, `quarry_stage_duration_seconds_count{stage="search"}`, `quarry_ingest_chunks_total`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	expect(t, "unknown route", f.do(t, "GET", "/v1/nothing", "", nil), 404, "")
}

// TestScopedKey holds a key to tenant = 'acme': it must neither see nor
// delete another tenant's documents, whatever the request says.
func TestScopedKey(t *testing.T) {
	f := newFixture(t)
	admin := mustKey(t, f.keys, keys.Spec{Permission: keys.PermAdmin})
	acme := mustKey(t, f.keys, keys.Spec{Name: "acme", Permission: keys.PermWrite, Filter: "tenant = 'acme'"})
	expect(t, "create", f.do(t, "POST", "/v1/collections", admin, map[string]any{"name": "kb", "schema": tenantSchema}), 201, "")
	expect(t, "seed", f.do(t, "POST", "/v1/collections/kb/documents", admin, map[string]any{"documents": []map[string]any{
		{"id": "a1", "text": "Acme pricing: the secret discount is ten percent.", "source": "pricing.md", "metadata": map[string]any{"tenant": "acme", "year": 2025}},
		{"id": "g1", "text": "Globex pricing: the secret discount is forty percent.", "source": "pricing.md", "metadata": map[string]any{"tenant": "globex", "year": 2025}},
	}}), 200, "")

	for _, tc := range []struct {
		name   string
		filter any
	}{
		{"no filter", nil},
		{"other tenant", map[string]any{"tenant": "globex"}},
		{"$or widening", map[string]any{"$or": []any{map[string]any{"tenant": "globex"}, map[string]any{"year": 2025}}}},
		{"text or", "tenant = 'globex' or year >= 0"},
		{"canonical or", map[string]any{"operator": "or", "conditions": []any{
			map[string]any{"operator": "eq", "field": "tenant", "value": "globex"},
			map[string]any{"operator": "eq", "field": "tenant", "value": "acme"}}}},
	} {
		body := map[string]any{"query": "secret discount pricing", "mode": "hybrid"}
		if tc.filter != nil {
			body["filter"] = tc.filter
		}
		r := f.do(t, "POST", "/v1/collections/kb/search", acme, body)
		expect(t, "search "+tc.name, r, 200, "")
		for _, h := range results(r) {
			if h["id"] != "a1" {
				t.Errorf("search %s: the acme key saw %v", tc.name, h)
			}
		}
		if strings.Contains(r.raw, "forty") {
			t.Errorf("search %s: globex text leaked: %s", tc.name, r.raw)
		}
		ab := map[string]any{"question": "What is the secret discount?"}
		if tc.filter != nil {
			ab["filter"] = tc.filter
		}
		a := f.do(t, "POST", "/v1/collections/kb/ask", acme, ab)
		expect(t, "ask "+tc.name, a, 200, "")
		if strings.Contains(a.raw, "forty") || strings.Contains(a.raw, "g1") {
			t.Errorf("ask %s: globex leaked: %s", tc.name, a.raw)
		}
		for _, e := range f.events(t, "POST", "/v1/collections/kb/ask/stream", acme, ab) {
			if b, _ := json.Marshal(e.data); strings.Contains(string(b), "forty") {
				t.Errorf("ask stream %s: globex leaked: %s", tc.name, b)
			}
		}
		// The agent's every search runs under the key's scope too.
		ab["agent"] = true
		steps := 0
		for _, e := range f.events(t, "POST", "/v1/collections/kb/ask/stream", acme, ab) {
			if e.name == "step" {
				steps++
			}
			if b, _ := json.Marshal(e.data); strings.Contains(string(b), "forty") || strings.Contains(string(b), `"g1"`) {
				t.Errorf("agent ask stream %s: globex leaked: %s", tc.name, b)
			}
		}
		if steps == 0 {
			t.Errorf("agent ask stream %s: no step events", tc.name)
		}
		d := f.do(t, "POST", "/v1/collections/kb/documents/delete", acme, map[string]any{"filter": tc.filter, "source": "nothing-" + tc.name})
		expect(t, "delete "+tc.name, d, 200, "")
	}
	// Deleting by source or by a widening filter removes acme's only.
	d := f.do(t, "POST", "/v1/collections/kb/documents/delete", acme, map[string]any{"filter": map[string]any{"$or": []any{map[string]any{"tenant": "globex"}, map[string]any{"year": 2025}}}})
	expect(t, "delete $or", d, 200, "")
	if d.body["deleted"].(float64) != 1 {
		t.Fatalf("delete $or: %s", d.raw)
	}
	g := f.do(t, "POST", "/v1/collections/kb/search", admin, map[string]any{"query": "pricing", "filter": "tenant = 'globex'"})
	if rs := results(g); len(rs) != 1 || rs[0]["id"] != "g1" {
		t.Fatalf("globex's document is gone: %s", g.raw)
	}
	// Writing another tenant's document is refused; another tenant's id is
	// neither revealed nor replaced: the key's ids live in its own space.
	expect(t, "write other tenant", f.do(t, "POST", "/v1/collections/kb/documents", acme, map[string]any{"documents": []map[string]any{
		{"text": "planted", "metadata": map[string]any{"tenant": "globex"}}}}), 403, server.CodeOutOfScope)
	taken := f.do(t, "POST", "/v1/collections/kb/documents", acme, map[string]any{"documents": []map[string]any{
		{"id": "g1", "text": "acme's own g1", "metadata": map[string]any{"tenant": "acme"}}}})
	free := f.do(t, "POST", "/v1/collections/kb/documents", acme, map[string]any{"documents": []map[string]any{
		{"id": "never-used", "text": "acme's own never-used", "metadata": map[string]any{"tenant": "acme"}}}})
	expect(t, "an id another tenant has", taken, 200, "")
	expect(t, "a free id", free, 200, "")
	if ids := taken.body["ids"].([]any); ids[0] == "g1" || !strings.HasSuffix(ids[0].(string), ":g1") {
		t.Fatalf("acme's g1 stored as %v", ids)
	}
	f.do(t, "POST", "/v1/collections/kb/documents/delete", acme, map[string]any{"filter": "sourceName = 'manual'"})
	expect(t, "upload other tenant", f.upload(t, "kb", acme, map[string]string{"x.md": "planted text here"}, `{"tenant":"globex"}`), 403, server.CodeOutOfScope)
	// An upload under the key gets the tenant and a source of its own.
	r := f.upload(t, "kb", acme, map[string]string{"pricing.md": "# Acme\n\nAcme upload about pricing tiers.\n"}, "")
	expect(t, "upload", r, 202, "")
	f.waitJob(t, r.body["job_id"].(string), acme)
	s := f.do(t, "POST", "/v1/collections/kb/search", acme, map[string]any{"query": "pricing tiers"})
	if rs := results(s); len(rs) == 0 || rs[0]["metadata"].(map[string]any)["tenant"] != "acme" || !strings.HasSuffix(rs[0]["source"].(string), "/pricing.md") {
		t.Fatalf("search for the upload: %s", s.raw)
	}
	g = f.do(t, "POST", "/v1/collections/kb/search", admin, map[string]any{"query": "pricing", "filter": "tenant = 'globex'"})
	if rs := results(g); len(rs) != 1 {
		t.Fatalf("the upload touched globex's source: %s", g.raw)
	}
	// A key's threads are its own.
	expect(t, "ask in a thread", f.do(t, "POST", "/v1/collections/kb/ask", acme, map[string]any{"question": "What is the discount?", "thread": "t1"}), 200, "")
	expect(t, "own thread", f.do(t, "GET", "/v1/threads/t1", acme, nil), 200, "")
	expect(t, "another key's thread", f.do(t, "GET", "/v1/threads/t1", admin, nil), 404, server.CodeNotFound)
	// A filter holds an admin key too: nothing that reaches every document.
	scopedAdmin := mustKey(t, f.keys, keys.Spec{Permission: keys.PermAdmin, Filter: "tenant = 'acme'"})
	expect(t, "scoped admin: drop", f.do(t, "DELETE", "/v1/collections/kb", scopedAdmin, nil), 403, server.CodeForbidden)
	expect(t, "scoped admin: jobs", f.do(t, "GET", "/v1/jobs", scopedAdmin, nil), 403, server.CodeForbidden)
	expect(t, "scoped admin: metrics", f.do(t, "GET", "/metrics", scopedAdmin, nil), 403, server.CodeForbidden)
	expect(t, "scoped admin: ingest", f.do(t, "POST", "/v1/collections/kb/ingest", scopedAdmin, map[string]any{"paths": []string{"docs"}}), 403, server.CodeForbidden)
	// Jobs and status show only what the key reaches.
	expect(t, "list jobs", f.do(t, "GET", "/v1/jobs", acme, nil), 403, server.CodeForbidden)
	expect(t, "ingest paths", f.do(t, "POST", "/v1/collections/kb/ingest", acme, map[string]any{"paths": []string{"docs"}}), 403, server.CodeForbidden)
	st := f.do(t, "GET", "/v1/status", acme, nil)
	if cs := st.body["collections"].([]any); len(cs) != 1 || cs[0].(map[string]any)["documents"].(float64) != 1 || st.body["scoped"] != true {
		t.Fatalf("status for acme: %s", st.raw)
	}
}

func TestPermissions(t *testing.T) {
	f := newFixture(t)
	admin := mustKey(t, f.keys, keys.Spec{Permission: keys.PermAdmin})
	reader := mustKey(t, f.keys, keys.Spec{Permission: keys.PermRead})
	writer := mustKey(t, f.keys, keys.Spec{Permission: keys.PermWrite, Collections: []string{"kb"}})
	expect(t, "create", f.do(t, "POST", "/v1/collections", admin, map[string]any{"name": "kb"}), 201, "")
	expect(t, "create other", f.do(t, "POST", "/v1/collections", admin, map[string]any{"name": "other"}), 201, "")
	docs := map[string]any{"documents": []map[string]any{{"text": "hello"}}}
	for _, tc := range []struct {
		name, key, method, path string
		body                    any
		status                  int
		code                    string
	}{
		{"no key", "", "GET", "/v1/status", nil, 401, server.CodeUnauthorized},
		{"bad key", "qk_000000000000_nope", "GET", "/v1/status", nil, 401, server.CodeUnauthorized},
		{"read: search", reader, "POST", "/v1/collections/kb/search", map[string]any{"query": "hello"}, 200, ""},
		{"read: upsert", reader, "POST", "/v1/collections/kb/documents", docs, 403, server.CodeForbidden},
		{"read: delete", reader, "POST", "/v1/collections/kb/documents/delete", map[string]any{"source": "x"}, 403, server.CodeForbidden},
		{"read: create", reader, "POST", "/v1/collections", map[string]any{"name": "x"}, 403, server.CodeForbidden},
		{"read: drop", reader, "DELETE", "/v1/collections/kb", nil, 403, server.CodeForbidden},
		{"read: metrics", reader, "GET", "/metrics", nil, 403, server.CodeForbidden},
		{"write: upsert", writer, "POST", "/v1/collections/kb/documents", docs, 200, ""},
		{"write: other collection", writer, "POST", "/v1/collections/other/search", map[string]any{"query": "x"}, 403, server.CodeForbidden},
		{"write: drop", writer, "DELETE", "/v1/collections/kb", nil, 403, server.CodeForbidden},
		{"admin: metrics", admin, "GET", "/metrics", nil, 200, ""},
		{"public: healthz", "", "GET", "/healthz", nil, 200, ""},
		{"public: openapi", "", "GET", "/openapi.json", nil, 200, ""},
	} {
		expect(t, tc.name, f.do(t, tc.method, tc.path, tc.key, tc.body), tc.status, tc.code)
	}
	r := f.upload(t, "kb", reader, map[string]string{"a.md": "text"}, "")
	expect(t, "read: upload", r, 403, server.CodeForbidden)
	req, _ := http.NewRequest("GET", f.url+"/v1/status", nil)
	req.Header.Set("X-API-Key", reader)
	expect(t, "X-API-Key", send(t, req), 200, "")
	// A revoked key is refused once the server sees the file change.
	list, _ := f.keys.List()
	for _, k := range list {
		if k.Permission == keys.PermRead {
			if err := f.keys.Revoke(k.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	expect(t, "revoked", f.do(t, "GET", "/v1/status", reader, nil), 401, server.CodeUnauthorized)
}

func TestLimits(t *testing.T) {
	f := newFixture(t, func(c *config) { c.MaxBodyBytes = 4 << 10 })
	expect(t, "create", f.do(t, "POST", "/v1/collections", "", map[string]any{"name": "kb"}), 201, "")
	big := strings.Repeat("word ", 20<<10)
	r := f.upload(t, "kb", "", map[string]string{"big.txt": big}, "")
	expect(t, "oversized upload", r, 413, server.CodeTooLarge)
	if !strings.Contains(r.body["detail"].(string), "64 KiB") {
		t.Errorf("oversized upload: the limit is not named: %s", r.raw)
	}
	expect(t, "oversized JSON", f.do(t, "POST", "/v1/collections/kb/documents", "", map[string]any{"documents": []map[string]any{{"text": big}}}), 413, server.CodeTooLarge)
	expect(t, "binary upload", f.upload(t, "kb", "", map[string]string{"blob.bin": "\x00\x01\x02binary"}, ""), 415, server.CodeUnsupportedType)
	expect(t, "fake PDF", f.upload(t, "kb", "", map[string]string{"fake.pdf": "\x00not a pdf"}, ""), 415, server.CodeUnsupportedType)
	for _, name := range []string{"../../etc/passwd", "..", "a/../../b.md", `..\win.md`, ".hidden.md"} {
		r := f.upload(t, "kb", "", map[string]string{name: "text"}, "")
		// Go's multipart writer keeps the name; the server must refuse it.
		if r.status != 400 || r.code() != server.CodeInvalidRequest || !strings.Contains(r.raw, "refused") {
			t.Errorf("upload %q: %d %s", name, r.status, r.raw)
		}
	}
	outside := t.TempDir()
	write(t, filepath.Join(outside, "secret.md"), "# Secret\n\nnot for clients\n")
	if err := os.Symlink(outside, filepath.Join(f.root, "link")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{outside, filepath.Join(outside, "secret.md"), "../" + filepath.Base(outside), "docs/../../x", "link/secret.md", "/etc/passwd"} {
		r := f.do(t, "POST", "/v1/collections/kb/ingest", "", map[string]any{"paths": []string{p}})
		if r.status != 403 || !strings.Contains(r.raw, "outside the allowed roots") {
			t.Errorf("ingest %q: %d %s", p, r.status, r.raw)
		}
	}
	expect(t, "top_k too big", f.do(t, "POST", "/v1/collections/kb/search", "", map[string]any{"query": "x", "top_k": 1000}), 422, server.CodeInvalidRequest)
	expect(t, "too many documents", f.do(t, "POST", "/v1/collections/kb/documents", "", map[string]any{"documents": make([]map[string]any, 300)}), 422, server.CodeInvalidRequest)
}

func TestRateLimit(t *testing.T) {
	f := newFixture(t)
	k := mustKey(t, f.keys, keys.Spec{Permission: keys.PermRead, RateLimit: 1})
	var limited response
	for range 5 {
		if r := f.do(t, "GET", "/v1/status", k, nil); r.status == 429 {
			limited = r
			break
		}
	}
	expect(t, "rate limit", limited, 429, server.CodeRateLimited)
	if limited.header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
}

func TestPreflight(t *testing.T) {
	f := newFixture(t, func(c *config) { c.CORSOrigins = []string{"https://app.example"} })
	for _, tc := range []struct {
		origin string
		status int
		acao   string
	}{
		{"https://app.example", 204, "https://app.example"},
		{"https://evil.example", 405, ""},
	} {
		req, _ := http.NewRequest("OPTIONS", f.url+"/v1/collections/kb/search", nil)
		req.Header.Set("Origin", tc.origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		r := send(t, req)
		if r.status != tc.status || r.header.Get("Access-Control-Allow-Origin") != tc.acao {
			t.Errorf("preflight from %s: %d, ACAO %q", tc.origin, r.status, r.header.Get("Access-Control-Allow-Origin"))
		}
	}
}

func TestReadyz(t *testing.T) {
	f := newFixture(t)
	expect(t, "ready", f.do(t, "GET", "/readyz", "", nil), 200, "")
	f.store.Close()
	expect(t, "store closed", f.do(t, "GET", "/readyz", "", nil), 503, "")
}

func TestCrossOrigin(t *testing.T) {
	for _, tc := range []struct {
		name    string
		origins []string
		status  int
		acao    string
	}{
		{"off by default", nil, 403, ""},
		{"allowed origin", []string{"https://app.example"}, 200, "https://app.example"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, func(c *config) { c.CORSOrigins = tc.origins })
			req, _ := http.NewRequest("POST", f.url+"/v1/collections", strings.NewReader(`{"name":"kb"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Origin", "https://app.example")
			req.Header.Set("Sec-Fetch-Site", "cross-site")
			r := send(t, req)
			if tc.status == 200 {
				tc.status = 201
			}
			if r.status != tc.status || r.header.Get("Access-Control-Allow-Origin") != tc.acao {
				t.Fatalf("got %d, ACAO %q: %s", r.status, r.header.Get("Access-Control-Allow-Origin"), r.raw)
			}
		})
	}
}

// TestNoSecretInLogs logs every request at debug level and checks no key
// appears in the records, whatever the request did.
func TestNoSecretInLogs(t *testing.T) {
	f := newFixture(t)
	admin := mustKey(t, f.keys, keys.Spec{Permission: keys.PermAdmin})
	scoped := mustKey(t, f.keys, keys.Spec{Permission: keys.PermWrite, Filter: "tenant = 'acme'"})
	f.do(t, "POST", "/v1/collections", admin, map[string]any{"name": "kb", "schema": tenantSchema})
	f.do(t, "POST", "/v1/collections/kb/documents", scoped, map[string]any{"documents": []map[string]any{{"text": "hello", "metadata": map[string]any{"tenant": "acme"}}}})
	f.do(t, "POST", "/v1/collections/kb/search", scoped, map[string]any{"query": "hello"})
	f.do(t, "POST", "/v1/collections/kb/search", scoped+"x", map[string]any{"query": "hello"})
	r := f.upload(t, "kb", admin, map[string]string{"a.md": "# A\n\nsome text to ingest\n"}, `{"tenant":"acme"}`)
	f.waitJob(t, r.body["job_id"].(string), admin)
	logs := f.logs.String()
	if !strings.Contains(logs, "route=") {
		t.Fatalf("no request was logged: %s", logs)
	}
	for _, secret := range []string{admin, scoped, scoped[len(scoped)-20:], admin[len(admin)-20:]} {
		if strings.Contains(logs, secret) {
			t.Fatalf("a key's secret is in the logs:\n%s", logs)
		}
	}
}

func TestListenAddr(t *testing.T) {
	for _, tc := range []struct {
		addr     string
		keys     bool
		want     string
		wantNote bool
	}{
		{":8080", false, "127.0.0.1:8080", true},
		{"0.0.0.0:9000", false, "127.0.0.1:9000", true},
		{"127.0.0.1:8080", false, "127.0.0.1:8080", false},
		{"[::1]:8080", false, "[::1]:8080", false},
		{"localhost:8080", false, "localhost:8080", false},
		{":8080", true, ":8080", false},
		{"0.0.0.0:9000", true, "0.0.0.0:9000", false},
	} {
		got, note := server.ListenAddr(tc.addr, tc.keys)
		if got != tc.want || (note != "") != tc.wantNote {
			t.Errorf("ListenAddr(%q, %v) = %q, %q", tc.addr, tc.keys, got, note)
		}
	}
}

// TestShutdownStopsJobs closes the server while an upload is ingesting.
func TestShutdownStopsJobs(t *testing.T) {
	f := newFixture(t)
	files := map[string]string{}
	for i := range 20 {
		files[fmt.Sprintf("f%02d.md", i)] = strings.Repeat("Some words to split and embed. ", 60)
	}
	expect(t, "upload", f.upload(t, "kb", "", files, ""), 202, "")
	done := make(chan struct{})
	go func() { f.srv.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return")
	}
}

// TestKeysFailClosed: a server that has served with keys never falls back
// to keyless full rights, whether the last key is revoked or the key file
// disappears; and keyless mode answers loopback peers only.
func TestKeysFailClosed(t *testing.T) {
	f := newFixture(t)
	admin := mustKey(t, f.keys, keys.Spec{Permission: keys.PermAdmin})
	expect(t, "create", f.do(t, "POST", "/v1/collections", admin, map[string]any{"name": "kb", "schema": tenantSchema}), 201, "")
	expect(t, "anonymous with keys", f.do(t, "GET", "/v1/status", "", nil), 401, server.CodeUnauthorized)
	list, err := f.keys.List()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.keys.Revoke(list[0].ID); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ method, path string }{
		{"GET", "/v1/status"}, {"POST", "/v1/collections/kb/search"}, {"GET", "/metrics"}, {"DELETE", "/v1/collections/kb"},
	} {
		var body any
		if tc.method == "POST" {
			body = map[string]any{"query": "x"}
		}
		expect(t, "after revoking the last key: "+tc.method+" "+tc.path, f.do(t, tc.method, tc.path, "", body), 401, server.CodeUnauthorized)
	}
	if !strings.Contains(f.logs.String(), "holds no active key") {
		t.Errorf("no loud log line when the last key went: %s", f.logs.String())
	}
	// A removed key file: still closed (the file is re-read within a second).
	if err := os.Remove(f.keys.Path()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		expect(t, "after removing keys.json", f.do(t, "DELETE", "/v1/collections/kb", "", nil), 401, server.CodeUnauthorized)
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := f.store.Collection(context.Background(), "kb"); err != nil {
		t.Fatalf("the collection is gone: %v", err)
	}
}

func TestKeylessAnswersLoopbackOnly(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		remote string
		want   int
	}{{"127.0.0.1:5000", 200}, {"[::1]:5000", 200}, {"192.0.2.7:5000", 403}, {"[2001:db8::1]:5000", 403}} {
		req := httptest.NewRequest("GET", "/v1/status", nil)
		req.RemoteAddr = tc.remote
		w := httptest.NewRecorder()
		f.srv.Handler().ServeHTTP(w, req)
		if w.Code != tc.want {
			t.Errorf("keyless request from %s: %d, want %d", tc.remote, w.Code, tc.want)
		}
	}
}

// TestRawFiltersRefused: a raw fragment in a request is refused before it
// reaches a store, on every endpoint that takes a filter, unless the
// operator granted raw filters to the key.
func TestRawFiltersRefused(t *testing.T) {
	f := newFixture(t)
	admin := mustKey(t, f.keys, keys.Spec{Permission: keys.PermAdmin})
	acme := mustKey(t, f.keys, keys.Spec{Permission: keys.PermWrite, Filter: "tenant = 'acme'"})
	granted := mustKey(t, f.keys, keys.Spec{Permission: keys.PermWrite, Filter: "tenant = 'acme'", AllowRawFilters: true})
	expect(t, "create", f.do(t, "POST", "/v1/collections", admin, map[string]any{"name": "kb", "schema": tenantSchema}), 201, "")
	raw := map[string]any{"operator": "raw", "store": "postgres", "fragment": "true) OR (true"}
	nested := map[string]any{"operator": "or", "conditions": []any{map[string]any{"operator": "eq", "field": "tenant", "value": "acme"}, raw}}
	short := map[string]any{"tenant": "acme", "$raw": map[string]any{"store": "postgres", "fragment": "true) OR (true"}}
	for _, key := range []string{admin, acme} {
		for _, flt := range []any{raw, nested, short} {
			for _, ep := range []struct{ path, field string }{
				{"/v1/collections/kb/search", "query"}, {"/v1/collections/kb/ask", "question"}, {"/v1/collections/kb/documents/delete", ""},
			} {
				body := map[string]any{"filter": flt}
				if ep.field != "" {
					body[ep.field] = "anything"
				}
				r := f.do(t, "POST", ep.path, key, body)
				expect(t, "raw filter to "+ep.path, r, 400, server.CodeInvalidFilter)
				if !strings.Contains(r.raw, "not accepted from requests") {
					t.Errorf("%s: %s", ep.path, r.raw)
				}
			}
			st := f.do(t, "POST", "/v1/collections/kb/ask/stream", key, map[string]any{"question": "x", "filter": flt})
			expect(t, "raw filter to ask/stream", st, 400, server.CodeInvalidFilter)
		}
	}
	// A key granted raw filters gets past the policy; the store then judges
	// the fragment (the memory store runs none).
	r := f.do(t, "POST", "/v1/collections/kb/search", granted, map[string]any{"query": "x", "filter": raw})
	if strings.Contains(r.raw, "not accepted from requests") {
		t.Errorf("a granted key was refused by the policy: %s", r.raw)
	}
}

// TestJobOfDeadProcess: a job left running by a process that died reads as
// interrupted, and its event stream ends with that state.
func TestJobOfDeadProcess(t *testing.T) {
	f := newFixture(t)
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	js, err := f.store.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	now := time.Now().UTC()
	if err := js.PutJob(context.Background(), store.Job{ID: "killed", Kind: "ingest", Collection: "default", State: store.JobRunning,
		Owner: store.JobOwner{Host: host, PID: cmd.Process.Pid}, Started: now, Updated: now}); err != nil {
		t.Fatal(err)
	}
	r := f.do(t, "GET", "/v1/jobs/killed", "", nil)
	if r.body["state"] != "interrupted" {
		t.Fatalf("job of a dead process: %s", r.raw)
	}
	done := make(chan []event, 1)
	go func() { done <- f.events(t, "GET", "/v1/jobs/killed/events", "", nil) }()
	select {
	case evs := <-done:
		if len(evs) == 0 || evs[len(evs)-1].data["state"] != "interrupted" {
			t.Fatalf("events: %v", evs)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the event stream of an interrupted job did not end")
	}
}

// TestCalibrateEndpoint calibrates a collection over HTTP and checks a
// read key and a key held to a filter may not.
func TestCalibrateEndpoint(t *testing.T) {
	f := newFixture(t)
	admin := mustKey(t, f.keys, keys.Spec{Permission: keys.PermAdmin})
	reader := mustKey(t, f.keys, keys.Spec{Permission: keys.PermRead})
	writer := mustKey(t, f.keys, keys.Spec{Permission: keys.PermWrite})
	scoped := mustKey(t, f.keys, keys.Spec{Permission: keys.PermWrite, Filter: "sourceType = 'manual'"})
	docs := make([]map[string]any, 220)
	for i := range docs {
		var words []string
		for j := range 30 {
			words = append(words, fmt.Sprintf("w%03dterm", (i*11+j*j*7)%250))
		}
		docs[i] = map[string]any{"text": strings.Join(words, " "), "id": fmt.Sprintf("d%03d", i)}
	}
	expect(t, "upsert", f.do(t, "POST", "/v1/collections/default/documents", admin, map[string]any{"documents": docs}), 200, "")
	expect(t, "read", f.do(t, "POST", "/v1/collections/default/calibrate", reader, map[string]any{}), 403, server.CodeForbidden)
	expect(t, "filtered", f.do(t, "POST", "/v1/collections/default/calibrate", scoped, map[string]any{}), 403, server.CodeForbidden)
	expect(t, "too many queries", f.do(t, "POST", "/v1/collections/default/calibrate", writer, map[string]any{"queries": 100000}), 422, "")
	r := f.do(t, "POST", "/v1/collections/default/calibrate", writer, map[string]any{"queries": 80, "dry_run": true})
	expect(t, "dry run", r, 200, "")
	if cal, _ := r.body["calibration"].(map[string]any); cal == nil || cal["queries"] != float64(80) || r.body["saved"] != false {
		t.Errorf("dry run: %v", r.body)
	}
	r = f.do(t, "POST", "/v1/collections/default/calibrate", writer, map[string]any{"reset": true})
	expect(t, "reset", r, 200, "")
}
