package mcp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/mcp"
	"github.com/quarry-rag/quarry/store"
)

// TestIndexCutsWithoutStoring checks knowledge_index returns the chunks
// ingestion would make, stores nothing, and reads only inside the roots.
func TestIndexCutsWithoutStoring(t *testing.T) {
	f := newFixture(t, true) // read-only: cutting files stores nothing
	cs := connect(t, f.srv)
	var out mcp.IndexOutput
	call(t, cs, mcp.ToolIndex, map[string]any{"paths": []string{"docs"}}, &out)
	if out.Files != 2 || len(out.Chunks) != 2 || out.Truncated {
		t.Fatalf("index: %+v", out)
	}
	c := out.Chunks[0]
	if c.Rank != 1 || c.Source != "refunds.md" || !strings.Contains(c.Text, "fourteen days") || c.Location == "" || len(c.Headings) == 0 {
		t.Errorf("first chunk %+v", c)
	}
	call(t, cs, mcp.ToolIndex, map[string]any{"paths": []string{"docs"}, "limit": 1}, &out)
	if len(out.Chunks) != 1 || !out.Truncated {
		t.Errorf("limit 1: %d chunks, truncated %v", len(out.Chunks), out.Truncated)
	}
	var st mcp.StatusOutput
	call(t, cs, mcp.ToolStatus, map[string]any{}, &st)
	for _, c := range st.Collections {
		if c.Documents != 0 {
			t.Errorf("knowledge_index stored %d passages in %s", c.Documents, c.Name)
		}
	}
	outside := t.TempDir()
	write(t, filepath.Join(outside, "secret.md"), "# Secret\n\nnot for the model\n")
	if err := os.Symlink(outside, filepath.Join(f.root, "link")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{outside, "../" + filepath.Base(outside), "link/secret.md"} {
		if res := callRaw(t, cs, mcp.ToolIndex, map[string]any{"paths": []string{p}}); !res.IsError || !strings.Contains(text(res), "refused") {
			t.Errorf("index %s: error=%v %q", p, res.IsError, text(res))
		}
	}
	if res := callRaw(t, cs, mcp.ToolIndex, map[string]any{"paths": []string{"docs/missing.md"}}); !res.IsError {
		t.Error("a missing path was indexed")
	}
}

// TestIndexRefusedUnderAScope checks a client held to a filter cannot read
// the server's folders through knowledge_index.
func TestIndexRefusedUnderAScope(t *testing.T) {
	f := newFixtureScoped(t, mcp.Scope{Filter: filter.Eq("sourceName", "refunds.md")})
	cs := connect(t, f.srv)
	if res := callRaw(t, cs, mcp.ToolIndex, map[string]any{"paths": []string{"docs"}}); !res.IsError || !strings.Contains(text(res), "not open") {
		t.Errorf("scoped index: error=%v %q", res.IsError, text(res))
	}
}

// TestQueryIsAutoSearch checks knowledge_query searches triggers first
// (mode auto) with five passages by default and ten at most.
func TestQueryIsAutoSearch(t *testing.T) {
	f := newFixture(t, false)
	cs := connect(t, f.srv)
	if j := ingestCorpus(t, cs); j.State != store.JobDone {
		t.Fatalf("ingest: %+v", j)
	}
	var out mcp.SearchOutput
	call(t, cs, mcp.ToolQuery, map[string]any{"query": "when are refunds paid"}, &out)
	if len(out.Results) == 0 || out.Results[0].Source != "refunds.md" || len(out.Results) > 5 {
		t.Fatalf("query: %+v", out)
	}
	var search mcp.SearchOutput
	call(t, cs, mcp.ToolSearch, map[string]any{"query": "when are refunds paid", "mode": "auto", "top_k": 5}, &search)
	if out.Mode != search.Mode || len(out.Results) != len(search.Results) || out.Results[0].ID != search.Results[0].ID {
		t.Errorf("query %s %d results, search mode auto %s %d", out.Mode, len(out.Results), search.Mode, len(search.Results))
	}
	if res := callRaw(t, cs, mcp.ToolQuery, map[string]any{"query": "x", "top_n": 11}); !res.IsError {
		t.Error("top_n 11 accepted")
	}
}

func TestImportTool(t *testing.T) {
	f := newFixture(t, false)
	cs := connect(t, f.srv)
	yaml, err := os.ReadFile("../testdata/import.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out mcp.ImportOutput
	call(t, cs, mcp.ToolImport, map[string]any{"yaml": string(yaml)}, &out)
	if out.JobID == "" {
		t.Fatalf("import: no job: %+v", out)
	}
	deadline := time.Now().Add(30 * time.Second)
	var j mcp.Job
	for {
		call(t, cs, mcp.ToolIngestStatus, map[string]any{"job_id": out.JobID}, &j)
		if j.State != store.JobRunning || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if j.State != store.JobDone || j.Kind != "import" || j.Collection != "vault" || j.Nodes != 3 || j.Chunks != 3 {
		t.Errorf("import job: %+v", j)
	}
	if res := callRaw(t, cs, mcp.ToolImport, map[string]any{"yaml": "nodes: ["}); !res.IsError {
		t.Error("bad YAML imported")
	}
	ro := connect(t, newFixture(t, true).srv)
	if _, ok := toolNames(t, ro)[mcp.ToolImport]; ok {
		t.Error("a read-only server offers knowledge_import")
	}
}

func TestPutObjectsTool(t *testing.T) {
	f := newFixture(t, false)
	cs := connect(t, f.srv)
	var out mcp.PutObjectsOutput
	call(t, cs, mcp.ToolPutObjects, map[string]any{"objects": []map[string]any{{"id": "p-1", "title": "Kettle"}, {"id": "p-2", "title": "Toaster"}}}, &out)
	if len(out.Objects) != 2 || out.Objects[0] != "p-1" {
		t.Fatalf("put objects: %+v", out)
	}
	var found mcp.SearchOutput
	call(t, cs, mcp.ToolSearch, map[string]any{"query": "kettle", "mode": "keyword", "filter": "sourceType = 'object'"}, &found)
	if len(found.Results) == 0 || found.Results[0].Source != "p-1" || found.Results[0].SourceType != "object" {
		t.Errorf("search objects: %+v", found.Results)
	}
	var del mcp.DeleteOutput
	call(t, cs, mcp.ToolDelete, map[string]any{"source": "p-2"}, &del)
	if del.Deleted != 1 {
		t.Errorf("delete an object by its id: %+v", del)
	}
}
