package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/embed/hash"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/mcp"
	"github.com/quarry-rag/quarry/quarrytest"
	"github.com/quarry-rag/quarry/retrieve/neo4j"
	"github.com/quarry-rag/quarry/retrieve/neo4j/neo4jtest"
	"github.com/quarry-rag/quarry/store"
	_ "github.com/quarry-rag/quarry/store/memory"
)

// fixture is a server on an in-memory store with a small corpus folder as
// its root.
type fixture struct {
	root string
	srv  *mcp.Server
}

func newFixture(t *testing.T, readOnly bool) *fixture {
	t.Helper()
	return newFixtureWith(t, mcp.Config{ReadOnly: readOnly})
}

// newFixtureScoped is a fixture whose client is held to sc.
func newFixtureScoped(t *testing.T, sc mcp.Scope) *fixture {
	t.Helper()
	return newFixtureWith(t, mcp.Config{Scope: sc})
}

// newFixtureWith serves the fixture's corpus folder with cfg's settings.
func newFixtureWith(t *testing.T, cfg mcp.Config) *fixture {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	write(t, filepath.Join(root, "docs", "refunds.md"), "# Policies\n\n## Refunds\n\nRefunds are paid within fourteen days of the return.\n")
	write(t, filepath.Join(root, "docs", "shipping.md"), "# Shipping\n\nParcels ship from Rotterdam every weekday.\n")
	st, err := store.Open(ctx, "memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	emb, err := hash.New(hash.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.KB, cfg.Roots, cfg.Logger = newKB(t, st, emb, "default"), []string{root}, slog.New(slog.DiscardHandler)
	srv, err := mcp.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return &fixture{root: root, srv: srv}
}

// newKB serves st as a knowledge base searching by keywords by default.
func newKB(t *testing.T, st *store.Store, emb embed.Embedder, collection string) *quarry.KB {
	t.Helper()
	kb, err := quarry.New(context.Background(), st, quarry.WithEmbedder(emb), quarry.WithCollection(collection), quarry.WithMode("keyword"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kb.Close() })
	return kb
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

// connect serves srv over the SDK's in-memory transport and returns a
// client session on it.
func connect(t *testing.T, srv *mcp.Server) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := sdk.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, st) }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	})
	return cs
}

// call calls a tool and decodes its structured content into out; it fails
// the test on a tool error.
func call(t *testing.T, cs *sdk.ClientSession, name string, args any, out any) *sdk.CallToolResult {
	t.Helper()
	res := callRaw(t, cs, name, args)
	if res.IsError {
		t.Fatalf("%s: tool error: %s", name, text(res))
	}
	if out != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: structured content %s: %v", name, b, err)
		}
	}
	return res
}

func callRaw(t *testing.T, cs *sdk.ClientSession, name string, args any) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func toolNames(t *testing.T, cs *sdk.ClientSession) map[string]*sdk.Tool {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]*sdk.Tool{}
	for _, tl := range res.Tools {
		tools[tl.Name] = tl
	}
	return tools
}

// ingestCorpus runs knowledge_ingest on the fixture's docs folder and waits
// for the job to finish.
func ingestCorpus(t *testing.T, cs *sdk.ClientSession) mcp.Job {
	t.Helper()
	var started mcp.IngestOutput
	call(t, cs, mcp.ToolIngest, map[string]any{"paths": []string{"docs"}}, &started)
	if started.JobID == "" {
		t.Fatal("knowledge_ingest returned no job id")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var j mcp.Job
		call(t, cs, mcp.ToolIngestStatus, map[string]any{"job_id": started.JobID}, &j)
		if j.State != store.JobRunning {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still running: %+v", j.ID, j)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestListTools(t *testing.T) {
	f := newFixture(t, false)
	cs := connect(t, f.srv)
	tools := toolNames(t, cs)
	for _, name := range []string{mcp.ToolSearch, mcp.ToolQuery, mcp.ToolIndex, mcp.ToolAsk, mcp.ToolStatus, mcp.ToolIngest, mcp.ToolIngestStatus, mcp.ToolAddDocuments, mcp.ToolDelete} {
		tl, ok := tools[name]
		if !ok {
			t.Errorf("tool %s missing", name)
			continue
		}
		if tl.Description == "" {
			t.Errorf("%s has no description", name)
		}
		if tl.InputSchema == nil || tl.OutputSchema == nil {
			t.Errorf("%s lacks an input or output schema", name)
		}
	}
	schema, _ := json.Marshal(tools[mcp.ToolSearch].InputSchema)
	var s struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Required, []string{"query"}) {
		t.Errorf("search requires %v, want [query]", s.Required)
	}
	var mode struct {
		Enum []string `json:"enum"`
	}
	json.Unmarshal(s.Properties["mode"], &mode)
	if !slices.Equal(mode.Enum, []string{"auto", "keyword", "vector", "hybrid"}) {
		t.Errorf("mode enum = %v", mode.Enum)
	}
	if res := callRaw(t, cs, mcp.ToolSearch, map[string]any{"query": "x", "top_k": 1000}); !res.IsError {
		t.Error("top_k 1000 accepted")
	}
	for _, p := range []string{"query", "mode", "top_k", "filter", "collection"} {
		if _, ok := s.Properties[p]; !ok {
			t.Errorf("search schema lacks %s: %s", p, schema)
		}
	}
}

func TestReadOnlyHidesMutatingTools(t *testing.T) {
	f := newFixture(t, true)
	cs := connect(t, f.srv)
	tools := toolNames(t, cs)
	for _, name := range []string{mcp.ToolIngest, mcp.ToolAddDocuments, mcp.ToolDelete} {
		if _, ok := tools[name]; ok {
			t.Errorf("read-only server offers %s", name)
		}
	}
	for _, name := range []string{mcp.ToolSearch, mcp.ToolStatus, mcp.ToolIngestStatus} {
		if _, ok := tools[name]; !ok {
			t.Errorf("read-only server lacks %s", name)
		}
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: mcp.ToolDelete, Arguments: map[string]any{"source": "x"}})
	if err == nil && !res.IsError {
		t.Error("knowledge_delete ran on a read-only server")
	}
}

func TestIngestSearchStatus(t *testing.T) {
	f := newFixture(t, false)
	cs := connect(t, f.srv)
	j := ingestCorpus(t, cs)
	if j.State != store.JobDone || j.Files != 2 || j.Chunks < 2 {
		t.Fatalf("job = %+v, want done with 2 files", j)
	}

	var out mcp.SearchOutput
	res := call(t, cs, mcp.ToolSearch, map[string]any{"query": "refunds paid", "top_k": 3}, &out)
	if len(out.Results) == 0 {
		t.Fatal("no results")
	}
	top := out.Results[0]
	if top.Source != "refunds.md" || top.SourceType != "file" {
		t.Errorf("top source = %s %q, want file refunds.md", top.SourceType, top.Source)
	}
	if !slices.Contains(top.Headings, "Refunds") || top.LineStart == 0 || top.LineEnd < top.LineStart {
		t.Errorf("top provenance = headings %v lines %d-%d", top.Headings, top.LineStart, top.LineEnd)
	}
	if txt := text(res); !strings.Contains(txt, "refunds.md") || !strings.Contains(txt, "fourteen days") {
		t.Errorf("text part = %q", txt)
	}

	// A filter in the text syntax narrows; one on an undeclared field is a
	// tool error naming the field.
	call(t, cs, mcp.ToolSearch, map[string]any{"query": "refunds ship", "filter": "sourceName = 'shipping.md'"}, &out)
	for _, r := range out.Results {
		if r.Source != "shipping.md" {
			t.Errorf("filtered result from %s", r.Source)
		}
	}
	call(t, cs, mcp.ToolSearch, map[string]any{"query": "refunds", "filter": map[string]any{"sourceName": "refunds.md"}}, &out)
	if len(out.Results) == 0 {
		t.Error("JSON filter found nothing")
	}
	bad := callRaw(t, cs, mcp.ToolSearch, map[string]any{"query": "refunds", "filter": "year >= 2024"})
	if !bad.IsError || !strings.Contains(text(bad), "year") {
		t.Errorf("invalid filter: error=%v %q", bad.IsError, text(bad))
	}

	var st mcp.StatusOutput
	call(t, cs, mcp.ToolStatus, map[string]any{}, &st)
	if len(st.Collections) != 1 || st.Collections[0].Documents < 2 || st.LastJob == nil || st.LastJob.ID != j.ID {
		t.Errorf("status = %+v", st)
	}

	var ans mcp.AskOutput
	call(t, cs, mcp.ToolAsk, map[string]any{"question": "How long do refunds take?"}, &ans)
	if ans.Answer == "" || len(ans.Citations) == 0 || ans.Citations[0].Source == "" {
		t.Errorf("ask = %+v", ans)
	}
	var off, on mcp.AskOutput
	call(t, cs, mcp.ToolAsk, map[string]any{"question": "Where are parcels shipped from on Mars?", "min_relevance": 1}, &off)
	call(t, cs, mcp.ToolAsk, map[string]any{"question": "Where are parcels shipped from on Mars?", "min_relevance": -1}, &on)
	if !off.Abstained || len(off.Citations) != 0 || on.Abstained || len(on.Citations) == 0 {
		t.Errorf("off-topic ask = %+v; with min_relevance -1 = %+v", off, on)
	}
	var ag mcp.AskOutput
	call(t, cs, mcp.ToolAsk, map[string]any{"question": "How long do refunds take and where are parcels shipped from?", "agent": true}, &ag)
	if ag.Agent == nil || ag.Agent.Triage.Kind != "multi_step" || len(ag.Agent.Steps) == 0 || ag.Agent.ToolCalls == 0 {
		t.Errorf("agent ask = %+v", ag)
	}
}

func TestIngestOutsideRootsRefused(t *testing.T) {
	f := newFixture(t, false)
	cs := connect(t, f.srv)
	outside := t.TempDir()
	write(t, filepath.Join(outside, "secret.md"), "# Secret\n\nnot for the model\n")
	if err := os.Symlink(outside, filepath.Join(f.root, "link")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{outside, filepath.Join(outside, "secret.md"), "../" + filepath.Base(outside), "docs/../../" + filepath.Base(outside), "link", "link/secret.md", "/etc"} {
		res := callRaw(t, cs, mcp.ToolIngest, map[string]any{"paths": []string{p}})
		if !res.IsError || !strings.Contains(text(res), "refused") {
			t.Errorf("ingest %s: error=%v %q", p, res.IsError, text(res))
		}
	}

	// A symlink inside an allowed folder that leads out is not followed.
	if err := os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(f.root, "docs", "leak.md")); err != nil {
		t.Fatal(err)
	}
	if j := ingestCorpus(t, cs); j.State != store.JobDone || j.Total != 2 {
		t.Errorf("job = %+v, want done with 2 files", j)
	}
	var out mcp.SearchOutput
	call(t, cs, mcp.ToolSearch, map[string]any{"query": "secret model"}, &out)
	for _, r := range out.Results {
		if strings.Contains(r.Text, "not for the model") {
			t.Errorf("ingested through a symlink: %+v", r)
		}
	}
}

func TestAddDocumentsThenDelete(t *testing.T) {
	f := newFixture(t, false)
	cs := connect(t, f.srv)
	var added mcp.AddDocumentsOutput
	call(t, cs, mcp.ToolAddDocuments, map[string]any{"documents": []map[string]any{
		{"text": "The staging database is rebuilt every Sunday night.", "source": "ops-notes", "metadata": map[string]any{"team": "ops"}},
		{"text": "Lunch is served at noon.", "id": "lunch"},
	}}, &added)
	if len(added.IDs) != 2 || added.IDs[1] != "lunch" {
		t.Fatalf("added = %+v", added)
	}
	var out mcp.SearchOutput
	call(t, cs, mcp.ToolSearch, map[string]any{"query": "staging database"}, &out)
	if len(out.Results) == 0 || out.Results[0].Source != "ops-notes" || out.Results[0].Metadata["team"] != "ops" {
		t.Fatalf("search after add = %+v", out)
	}

	bad := callRaw(t, cs, mcp.ToolAddDocuments, map[string]any{"documents": []map[string]any{{"text": "x", "metadata": map[string]any{"sourceName": "y"}}}})
	if !bad.IsError {
		t.Errorf("reserved metadata key accepted: %q", text(bad))
	}

	var del mcp.DeleteOutput
	call(t, cs, mcp.ToolDelete, map[string]any{"source": "ops-notes"}, &del)
	if del.Deleted != 1 {
		t.Errorf("deleted %d, want 1", del.Deleted)
	}
	call(t, cs, mcp.ToolSearch, map[string]any{"query": "staging database"}, &out)
	for _, r := range out.Results {
		if r.Source == "ops-notes" {
			t.Error("deleted source still found")
		}
	}
	if res := callRaw(t, cs, mcp.ToolDelete, map[string]any{}); !res.IsError {
		t.Error("delete with neither source nor filter accepted")
	}
}

func TestStreamableHTTP(t *testing.T) {
	f := newFixture(t, false)
	hs := httptest.NewServer(f.srv.Handler())
	defer hs.Close()
	ctx := context.Background()

	// A browser page from another site cannot call the tools.
	req, _ := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site request: %s, want 403", resp.Status)
	}

	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).
		Connect(ctx, &sdk.StreamableClientTransport{Endpoint: hs.URL, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if j := ingestCorpus(t, cs); j.State != store.JobDone {
		t.Fatalf("job = %+v", j)
	}
	var out mcp.SearchOutput
	call(t, cs, mcp.ToolSearch, map[string]any{"query": "parcels Rotterdam"}, &out)
	if len(out.Results) == 0 || out.Results[0].Source != "shipping.md" {
		t.Errorf("search over HTTP = %+v", out)
	}
}

func TestCloseWaitsForJobs(t *testing.T) {
	f := newFixture(t, false)
	cs := connect(t, f.srv)
	var started mcp.IngestOutput
	call(t, cs, mcp.ToolIngest, map[string]any{"paths": []string{"docs"}}, &started)
	if err := f.srv.Close(); err != nil {
		t.Fatal(err)
	}
	// Close waited for the job: it is recorded as finished, done or failed.
	var j mcp.Job
	call(t, cs, mcp.ToolIngestStatus, map[string]any{"job_id": started.JobID}, &j)
	if j.State == store.JobRunning || j.Finished == "" {
		t.Errorf("after Close the job is %+v", j)
	}
	// New ingestions are refused.
	res := callRaw(t, cs, mcp.ToolIngest, map[string]any{"paths": []string{"docs"}})
	if !res.IsError {
		t.Error("ingest accepted after Close")
	}
}

func TestScopeKeepsTenantsApart(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	emb, _ := hash.New(hash.Config{})
	schema, err := document.NewSchema(document.Field{Name: "tenant", Type: document.TypeString, Filterable: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateCollection(ctx, store.CollectionConfig{Name: "kb", Schema: schema, Model: emb.Model()}); err != nil {
		t.Fatal(err)
	}
	newServer := func(sc mcp.Scope) *sdk.ClientSession {
		srv, err := mcp.New(mcp.Config{KB: newKB(t, st, emb, "kb"), Scope: sc,
			Roots: []string{t.TempDir()}, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		return connect(t, srv)
	}
	admin := newServer(mcp.Scope{})
	acme := newServer(mcp.Scope{Collections: []string{"kb"}, Filter: filter.Eq("tenant", "acme")})
	call(t, admin, mcp.ToolAddDocuments, map[string]any{"documents": []map[string]any{
		{"text": "Acme refund policy: thirty days.", "source": "policy", "metadata": map[string]any{"tenant": "acme"}},
		{"text": "Globex refund policy: no refunds.", "source": "policy", "metadata": map[string]any{"tenant": "globex"}},
	}}, nil)

	var out mcp.SearchOutput
	for _, f := range []any{nil, "tenant = 'globex'", map[string]any{"$or": []any{map[string]any{"tenant": "globex"}, map[string]any{"tenant": "acme"}}}} {
		args := map[string]any{"query": "refund policy"}
		if f != nil {
			args["filter"] = f
		}
		call(t, acme, mcp.ToolSearch, args, &out)
		for _, r := range out.Results {
			if r.Metadata["tenant"] != "acme" {
				t.Errorf("filter %v reached %v", f, r.Metadata)
			}
		}
	}
	for _, agent := range []bool{false, true} {
		var ans mcp.AskOutput
		call(t, acme, mcp.ToolAsk, map[string]any{"question": "What is the refund policy and how are refunds paid?", "agent": agent}, &ans)
		for _, c := range ans.Citations {
			if strings.Contains(c.Text, "Globex") {
				t.Errorf("ask (agent %v) cited another tenant: %+v", agent, c)
			}
		}
	}
	var st2 mcp.StatusOutput
	call(t, acme, mcp.ToolStatus, map[string]any{}, &st2)
	if len(st2.Collections) != 1 || st2.Collections[0].Documents != 1 || st2.LastJob != nil {
		t.Errorf("scoped status = %+v", st2)
	}

	if res := callRaw(t, acme, mcp.ToolAddDocuments, map[string]any{"documents": []map[string]any{{"text": "x", "metadata": map[string]any{"tenant": "globex"}}}}); !res.IsError {
		t.Error("a scoped client added another tenant's document")
	}
	var del mcp.DeleteOutput
	call(t, acme, mcp.ToolDelete, map[string]any{"filter": "tenant = 'globex'"}, &del)
	if del.Deleted != 0 {
		t.Errorf("a scoped client deleted %d of another tenant's passages", del.Deleted)
	}
	call(t, acme, mcp.ToolDelete, map[string]any{"source": "policy"}, &del)
	if del.Deleted != 1 {
		t.Errorf("scoped delete by source removed %d, want 1", del.Deleted)
	}
	if res := callRaw(t, acme, mcp.ToolDelete, map[string]any{"filter": " "}); !res.IsError {
		t.Error("a blank filter deleted the whole scope")
	}
	call(t, admin, mcp.ToolSearch, map[string]any{"query": "Globex refund"}, &out)
	if len(out.Results) != 1 {
		t.Errorf("the other tenant's passage is gone: %+v", out)
	}
	for _, tool := range []string{mcp.ToolIngest, mcp.ToolIngestStatus} {
		if res := callRaw(t, acme, tool, map[string]any{"paths": []string{"."}, "job_id": "x"}); !res.IsError {
			t.Errorf("%s open to a scoped client", tool)
		}
	}
	if res := callRaw(t, acme, mcp.ToolSearch, map[string]any{"query": "x", "collection": "other"}); !res.IsError {
		t.Error("a scoped client reached another collection")
	}
	// Raw fragments are refused from clients, scoped or not, unless the
	// operator allowed them (--allow-raw-filters).
	raw := map[string]any{"operator": "raw", "store": "postgres", "fragment": "true) OR (true"}
	for _, cs := range []*sdk.ClientSession{admin, acme} {
		for _, tc := range []struct {
			tool string
			args map[string]any
		}{
			{mcp.ToolSearch, map[string]any{"query": "refund", "filter": raw}},
			{mcp.ToolAsk, map[string]any{"question": "refund?", "filter": raw}},
			{mcp.ToolDelete, map[string]any{"filter": raw}},
		} {
			res := callRaw(t, cs, tc.tool, tc.args)
			if !res.IsError || !strings.Contains(text(res), "not accepted from requests") {
				t.Errorf("%s with a raw filter: %s", tc.tool, text(res))
			}
		}
	}
	allowed := newServer(mcp.Scope{AllowRawFilters: true})
	if res := callRaw(t, allowed, mcp.ToolSearch, map[string]any{"query": "refund", "filter": raw}); strings.Contains(text(res), "not accepted from requests") {
		t.Errorf("a server allowing raw filters refused one by policy: %s", text(res))
	}
}

// TestCalibrateTool calibrates a collection through knowledge_calibrate
// and checks a client held to a filter may not.
func TestCalibrateTool(t *testing.T) {
	f := newFixture(t, false)
	cs := connect(t, f.srv)
	docs := make([]map[string]any, 220)
	for i := range docs {
		var words []string
		for j := range 30 {
			words = append(words, fmt.Sprintf("w%03dterm", (i*11+j*j*7)%250))
		}
		docs[i] = map[string]any{"text": strings.Join(words, " "), "id": fmt.Sprintf("d%03d", i)}
	}
	call(t, cs, mcp.ToolAddDocuments, map[string]any{"documents": docs}, nil)
	if res := callRaw(t, cs, mcp.ToolCalibrate, map[string]any{"queries": 100000}); !res.IsError {
		t.Error("queries beyond the bound accepted")
	}
	var out mcp.CalibrateOutput
	res := call(t, cs, mcp.ToolCalibrate, map[string]any{"queries": 80}, &out)
	if !out.Saved || out.Calibration == nil || out.Calibration.Queries != 80 || !strings.Contains(text(res), "chosen") {
		t.Fatalf("calibrate: %+v %q", out, text(res))
	}
	// The fixture's operator set search.mode = keyword, which a
	// calibration does not override.
	var st mcp.StatusOutput
	call(t, cs, mcp.ToolStatus, map[string]any{}, &st)
	if st.Collections[0].SearchDefault != "keyword" {
		t.Errorf("status search default %q, calibration chose %q", st.Collections[0].SearchDefault, out.Calibration.Choice.Name)
	}
	if out.SearchDefault != "keyword" || out.ModeSet != "keyword" || !strings.Contains(text(res), `search.mode = "keyword"`) {
		t.Errorf("the result does not say search.mode wins: %+v %q", out, text(res))
	}

	scoped := newFixtureScoped(t, mcp.Scope{Filter: filter.Eq("sourceType", "manual")})
	if res := callRaw(t, connect(t, scoped.srv), mcp.ToolCalibrate, map[string]any{}); !res.IsError {
		t.Error("a client held to a filter calibrated a collection")
	}
}

// TestStructuredAnswer: a structured answer's JSON reaches the client; the
// output schema once described it as a byte array, and the SDK refused
// the result.
func TestStructuredAnswer(t *testing.T) {
	ctx := context.Background()
	kb := quarrytest.NewKB(t, quarry.WithChatModel(&quarrytest.ChatModel{Replies: []string{`{"days": 14, "why": "Refunds take fourteen days [1]."}`}}))
	if _, err := kb.AddDocuments(ctx, quarry.Developer(), "", []quarry.NewDocument{{Text: "Refunds are paid within fourteen days."}}); err != nil {
		t.Fatal(err)
	}
	srv, err := mcp.New(mcp.Config{KB: kb, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	var ans mcp.AskOutput
	call(t, connect(t, srv), mcp.ToolAsk, map[string]any{"question": "How long do refunds take?",
		"schema": map[string]any{"type": "object", "properties": map[string]any{"days": map[string]any{"type": "integer"}, "why": map[string]any{"type": "string"}}}}, &ans)
	var v struct {
		Days int `json:"days"`
	}
	if err := json.Unmarshal(ans.JSON, &v); err != nil || v.Days != 14 {
		t.Errorf("structured answer %s: %v", ans.JSON, err)
	}
}

// graphKB is a knowledge base with a fake Neo4j graph of one template.
func graphKB(t *testing.T) *quarry.KB {
	t.Helper()
	srv := neo4jtest.New(t, []string{"Product"}, []string{"RELATED_TO"}, []string{"apoc.path.expand", "gds.pageRank.stream"})
	tpl, err := neo4j.ParseTemplate("products", "// description: Products by name\n// param: query string required words\n// text: text\n// id: id\n// metadata: tenant\nMATCH (p:Product) WHERE p.name CONTAINS $query RETURN p.id AS id, p.name AS text, p.tenant AS tenant")
	if err != nil {
		t.Fatal(err)
	}
	srv.Handle(tpl.Cypher, func(map[string]any) (neo4jtest.Answer, error) {
		return neo4jtest.Answer{Columns: []string{"id", "text", "tenant"}, Rows: [][]any{{"p1", "Acme kettle", "acme"}, {"p2", "Globex kettle", "globex"}}}, nil
	})
	g := &neo4j.Graph{Client: &neo4j.Client{URL: srv.URL, MaxRetries: -1}, Templates: []neo4j.Template{tpl}}
	return quarrytest.NewKB(t, quarry.WithGraph(g, "products"))
}

// TestGraphTools: with a graph, MCP offers its tools; a template's rows
// come back under the client's scope, and the graph's schema only to a
// client that reaches everything.
func TestGraphTools(t *testing.T) {
	kb := graphKB(t)
	srv, err := mcp.New(mcp.Config{KB: kb, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	cs := connect(t, srv)
	var ts mcp.GraphTemplatesOutput
	call(t, cs, mcp.ToolGraphList, map[string]any{}, &ts)
	if len(ts.Templates) != 1 || ts.Templates[0].Name != "products" {
		t.Errorf("templates %+v", ts)
	}
	var sch neo4j.GraphSchema
	call(t, cs, mcp.ToolGraphSchema, map[string]any{}, &sch)
	var pl neo4j.Plugins
	call(t, cs, mcp.ToolGraphPlugins, map[string]any{}, &pl)
	if len(sch.Labels) != 1 || !pl.OK {
		t.Errorf("schema %+v plugins %+v", sch, pl)
	}
	var rows mcp.GraphTemplateOutput
	call(t, cs, mcp.ToolGraphTemplate, map[string]any{"template": "products", "arguments": map[string]any{"query": "kettle"}}, &rows)
	if len(rows.Results) != 2 {
		t.Errorf("rows %+v", rows)
	}
	if res := callRaw(t, cs, mcp.ToolGraphTemplate, map[string]any{"template": "products", "arguments": map[string]any{"query": "x", "cypher": "MATCH (n) DELETE n"}}); !res.IsError {
		t.Error("an undeclared parameter was accepted")
	}

	scoped, err := mcp.New(mcp.Config{KB: kb, Logger: slog.New(slog.DiscardHandler), Scope: mcp.Scope{Filter: filter.Eq("tenant", "acme")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { scoped.Close() })
	acme := connect(t, scoped)
	call(t, acme, mcp.ToolGraphTemplate, map[string]any{"template": "products", "arguments": map[string]any{"query": "kettle"}}, &rows)
	if len(rows.Results) != 1 || rows.Results[0].Metadata["tenant"] != "acme" {
		t.Errorf("scoped rows %+v", rows)
	}
	if res := callRaw(t, acme, mcp.ToolGraphSchema, map[string]any{}); !res.IsError {
		t.Error("a scoped client read the graph's schema")
	}
}
