package hierarchy_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/hierarchy"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/embedded"
)

// TestHealthFindsAndFixesSeededDefects seeds one of each defect — orphan
// node, broken parent, tiny chunk, duplicate name, missing source file,
// stale checkpoint — and checks the audit finds each and Fix repairs the
// safe ones (tiny chunk, stale checkpoint) and leaves the rest.
func TestHealthFindsAndFixesSeededDefects(t *testing.T) {
	dir := t.TempDir()
	files := t.TempDir()
	b, err := embedded.Open(t.Context(), dir, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := store.New(b)
	defer s.Close()
	c, err := s.CreateCollection(t.Context(), store.CollectionConfig{Name: "kb", Model: model})
	if err != nil {
		t.Fatal(err)
	}
	docs := threeLevels()
	docs = append(docs, chunk("guides/tiny.md", 0, "  -- *  ", "Tiny"))
	if err := c.Upsert(t.Context(), docs); err != nil {
		t.Fatal(err)
	}
	// Every source exists on disk but one.
	paths := map[string]string{}
	for _, d := range docs {
		p := filepath.Join(files, filepath.FromSlash(d.SourceName))
		paths[d.SourceName] = p
		if d.SourceName == "guides/intro.md" {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(d.Content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h := open(t, c)
	if _, err := h.Build(t.Context(), paths); err != nil {
		t.Fatal(err)
	}
	if _, err := h.AddNode(t.Context(), "", "Lonely", []string{"alone"}); err != nil { // orphan
		t.Fatal(err)
	}
	hs, _ := s.Hierarchy()
	if _, err := hs.PutNodes(t.Context(), "kb", []store.Node{
		{ParentID: 9999, Kind: store.NodeFundamental, Name: "X", Path: "/Root/X", Triggers: []string{"x-ray"}}, // broken parent
		{ParentID: 1, Kind: store.NodeFundamental, Name: "Dup", Path: "/Root/Dup", Triggers: []string{"dup"}},
		{ParentID: 1, Kind: store.NodeFundamental, Name: "Dup", Path: "/Root/Dup", Triggers: []string{"dup"}},
	}); err != nil {
		t.Fatal(err)
	}
	// A stale checkpoint: written, then a write it does not reflect.
	if err := b.Checkpoint(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := c.Upsert(t.Context(), []*document.Document{chunk("guides/late.md", 0, "Written after the last checkpoint.", "Late")}); err != nil {
		t.Fatal(err)
	}
	paths["guides/late.md"] = filepath.Join(files, "guides", "late.md")
	os.WriteFile(paths["guides/late.md"], []byte("late"), 0o644)
	if _, err := h.Build(t.Context(), paths); err != nil {
		t.Fatal(err)
	}

	other := embed.ModelInfo{Provider: "hash", Model: "other", Dimension: 3}
	rep, err := h.Audit(t.Context(), hierarchy.AuditOptions{Model: other})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		severity string
		count    int
	}{
		hierarchy.CheckBrokenParent:   {hierarchy.Serious, 1},
		hierarchy.CheckTinyChunks:     {hierarchy.Serious, 1},
		hierarchy.CheckDuplicateNames: {hierarchy.Serious, 1},
		hierarchy.CheckEmbeddingModel: {hierarchy.Serious, 1},
		hierarchy.CheckOrphanNodes:    {hierarchy.Warning, 4}, // Lonely, X and both Dups
		hierarchy.CheckMissingSources: {hierarchy.Warning, 1},
		hierarchy.CheckStaleIndex:     {hierarchy.Warning, 1},
		hierarchy.CheckNoTriggers:     {hierarchy.Warning, 1}, // api holds only a folder
	}
	for check, w := range want {
		f := rep.Finding(check)
		if f == nil || f.Severity != w.severity || f.Count != w.count {
			t.Errorf("%s: got %+v, want %s × %d", check, f, w.severity, w.count)
		}
	}
	if rep.OK || rep.Serious != 4 {
		t.Errorf("report: ok %v, %d serious", rep.OK, rep.Serious)
	}
	for _, f := range rep.Findings {
		if _, ok := want[f.Check]; !ok {
			t.Errorf("unexpected finding %+v", f)
		}
	}
	if f := rep.Finding(hierarchy.CheckMissingSources); f != nil && !slices.Contains(f.Items, "guides/intro.md ("+paths["guides/intro.md"]+")") {
		t.Errorf("missing source: %v", f.Items)
	}

	done, err := h.Fix(t.Context(), rep)
	if err != nil {
		t.Fatalf("fix: %v (done %v)", err, done)
	}
	after, err := h.Audit(t.Context(), hierarchy.AuditOptions{Model: model})
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{hierarchy.CheckTinyChunks, hierarchy.CheckStaleIndex, hierarchy.CheckEmbeddingModel} {
		if f := after.Finding(gone); f != nil {
			t.Errorf("%s not repaired: %+v (done %v)", gone, f, done)
		}
	}
	for _, kept := range []string{hierarchy.CheckBrokenParent, hierarchy.CheckDuplicateNames, hierarchy.CheckOrphanNodes, hierarchy.CheckMissingSources} {
		if after.Finding(kept) == nil {
			t.Errorf("%s was changed by a fix meant only for safe repairs", kept)
		}
	}
	if n, _ := c.Count(t.Context(), nil); n != len(docs) { // all but the tiny chunk, plus the late one
		t.Errorf("%d chunks after the fix, want %d", n, len(docs))
	}
	if after.Links == 0 {
		t.Errorf("the fix rebuilt no links")
	}
}

// TestHealthKeepsShortTextAndFlagsMarkup checks the audit counts a short
// section as tiny but --fix keeps it (a person wrote "Use 8080."), and
// flags a chunk that is mostly path data, as an SVG read as text gives.
func TestHealthKeepsShortTextAndFlagsMarkup(t *testing.T) {
	b, err := embedded.Open(t.Context(), t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := store.New(b)
	defer s.Close()
	c, err := s.CreateCollection(t.Context(), store.CollectionConfig{Name: "kb", Model: model})
	if err != nil {
		t.Fatal(err)
	}
	svg := "M12.5 3.25L4 5.75C3.1 6.2 2.4 7.3 2.4 8.4V15.6C2.4 16.7 3.1 17.8 4 18.25L12.5 20.75C13.4 21.1 14.6 21.1 15.5 20.75L24 18.25"
	docs := []*document.Document{
		chunk("port.md", 0, "## Port\n\nUse 8080.", "Port"),
		chunk("icon.md", 0, svg, "Icon"),
		chunk("guide.md", 0, "The installer asks for a folder, then copies the files and starts the service.", "Guide"),
	}
	if err := c.Upsert(t.Context(), docs); err != nil {
		t.Fatal(err)
	}
	h := open(t, c)
	rep, err := h.Audit(t.Context(), hierarchy.AuditOptions{Model: model})
	if err != nil {
		t.Fatal(err)
	}
	// "Use 8080." is short text a person wrote: a warning, not serious.
	if f := rep.Finding(hierarchy.CheckShortChunks); f == nil || f.Count != 1 || f.Severity != hierarchy.Warning {
		t.Errorf("short: %+v", f)
	}
	if f := rep.Finding(hierarchy.CheckTinyChunks); f != nil {
		t.Errorf("tiny: %+v", f)
	}
	if f := rep.Finding(hierarchy.CheckMarkup); f == nil || f.Count != 1 || !strings.Contains(f.Items[0], "icon.md") {
		t.Errorf("markup: %+v", f)
	}
	done, err := h.Fix(t.Context(), rep)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Count(t.Context(), nil); n != 3 {
		t.Errorf("the fix deleted text a person wrote: %d chunks left, %v", n, done)
	}
}
