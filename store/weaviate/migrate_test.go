package weaviate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/embedded"
	"github.com/quarry-rag/quarry/store/storetest"
)

// TestMigrateBothWays copies a collection with its sources, hierarchy,
// jobs and threads from the embedded store to Weaviate and back, and
// finds everything as it was: documents with their embeddings, hashes,
// nodes, attachments and links.
func TestMigrateBothWays(t *testing.T) {
	base := serverURL(t, "QUARRY_TEST_WEAVIATE_URL")
	ctx := context.Background()
	open := func() *store.Store {
		b, err := embedded.Open(ctx, t.TempDir(), embedded.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s := store.New(b)
		t.Cleanup(func() { s.Close() })
		return s
	}
	src := open()
	c, err := src.CreateCollection(ctx, store.CollectionConfig{Name: "docs", Schema: storetest.Schema(), Model: storetest.Model(2)})
	if err != nil {
		t.Fatal(err)
	}
	var updates []store.SourceUpdate
	for s := range 12 {
		name := fmt.Sprintf("guides/file-%02d.md", s)
		var docs []*document.Document
		for i := range 1 + s%3 {
			content := fmt.Sprintf("%s part %d", name, i)
			d := document.New(content)
			d.ID = document.ChunkID("file", name, i, content)
			d.SourceType, d.SourceName = "file", name
			d.Embedding = []float32{1, float32(s) + 0.5}
			d.Metadata = map[string]any{"tenant": "acme", "year": int64(2000 + s), "price": 1.5, "tags": []any{"a", "b"}}
			docs = append(docs, d)
		}
		updates = append(updates, store.SourceUpdate{Source: document.Source{Type: "file", Name: name}, Hash: fmt.Sprintf("h%d", s), Docs: docs})
	}
	if err := c.ReplaceSources(ctx, updates); err != nil {
		t.Fatal(err)
	}
	hs, _ := src.Hierarchy()
	nodes, err := hs.PutNodes(ctx, "docs", []store.Node{{Kind: store.NodeRoot, Name: "Root", Path: "/Root", Triggers: []string{}}})
	if err != nil {
		t.Fatal(err)
	}
	kids, err := hs.PutNodes(ctx, "docs", []store.Node{{ParentID: nodes[0].ID, Kind: store.NodeFundamental, Name: "guides", Path: "/Root/guides", Folder: "guides", Triggers: []string{"file"}}})
	if err != nil {
		t.Fatal(err)
	}
	first := updates[0].Docs[0]
	if err := hs.Attach(ctx, "docs", []store.Attachment{{DocID: first.ID, NodeID: kids[0].ID, Source: document.Source{Type: "file", Name: first.SourceName}}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := hs.PutLinks(ctx, "docs", []store.Link{{From: nodes[0].ID, To: kids[0].ID, Type: store.LinkSemantic, Weight: 0.5, Evidence: "test"}}, nil); err != nil {
		t.Fatal(err)
	}

	if err := c.PutSetting(ctx, "calibration", json.RawMessage(`{"choice":{"name":"hybrid-convex-0.1"}}`)); err != nil {
		t.Fatal(err)
	}

	wv := openFresh(t, base)
	rep, err := store.CopyCollection(ctx, c, wv, store.CopyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Documents != 24 || rep.Sources != 12 || rep.Nodes != 2 || rep.Attachments != 1 || rep.Links != 1 || rep.Settings != 1 {
		t.Errorf("copy to weaviate: %+v", rep)
	}
	wc, err := wv.Collection(ctx, "docs")
	if err != nil {
		t.Fatal(err)
	}
	back := open()
	rep, err = store.CopyCollection(ctx, wc, back, store.CopyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Documents != 24 || rep.Nodes != 2 || rep.Settings != 1 {
		t.Errorf("copy back: %+v", rep)
	}
	bc, err := back.Collection(ctx, "docs")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := bc.Setting(ctx, "calibration"); err != nil || string(v) != `{"choice":{"name":"hybrid-convex-0.1"}}` {
		t.Errorf("the calibration came back as %s, %v", v, err)
	}
	var want, got []*document.Document
	_ = c.Scan(ctx, 0, func(p []*document.Document) error { want = append(want, p...); return nil })
	_ = bc.Scan(ctx, 0, func(p []*document.Document) error { got = append(got, p...); return nil })
	if len(got) != len(want) {
		t.Fatalf("%d documents came back of %d", len(got), len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		if w.ID != g.ID || w.Content != g.Content || !slices.Equal(w.Embedding, g.Embedding) || fmt.Sprint(w.Metadata) != fmt.Sprint(g.Metadata) {
			t.Errorf("document %s came back as %+v", w.ID, g)
		}
	}
	ws, _ := c.Sources(ctx)
	gs, _ := bc.Sources(ctx)
	if fmt.Sprint(ws) != fmt.Sprint(gs) {
		t.Errorf("sources came back as %v, want %v", gs, ws)
	}
	bh, _ := back.Hierarchy()
	bn, _ := bh.Nodes(ctx, "docs")
	bl, _ := bh.Links(ctx, "docs")
	if len(bn) != 2 || bn[1].Folder != "guides" || len(bl) != 1 {
		t.Errorf("hierarchy came back as %+v, %+v", bn, bl)
	}
}
