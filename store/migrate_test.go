package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/embedded"
	"github.com/quarry-rag/quarry/store/memory"
	"github.com/quarry-rag/quarry/store/storetest"
)

func TestCopyCollection(t *testing.T) {
	ctx := context.Background()
	b, err := embedded.Open(ctx, t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	src := store.New(b)
	defer src.Close()
	c, err := src.CreateCollection(ctx, store.CollectionConfig{Name: "docs", Schema: storetest.Schema(), Model: storetest.Model(2)})
	if err != nil {
		t.Fatal(err)
	}
	var updates []store.SourceUpdate
	for s := range 30 {
		name := fmt.Sprintf("file-%02d.md", s)
		var docs []*document.Document
		for i := range s % 4 {
			content := fmt.Sprintf("%s part %d", name, i)
			d := document.New(content)
			d.ID = document.ChunkID("file", name, i, content)
			d.SourceType, d.SourceName = "file", name
			d.Embedding = []float32{1, float32(s)}
			d.Metadata = map[string]any{"tenant": "acme", "year": int64(2000 + s)}
			docs = append(docs, d)
		}
		updates = append(updates, store.SourceUpdate{Source: document.Source{Type: "file", Name: name}, Hash: fmt.Sprintf("h%d", s), Docs: docs})
	}
	if err := c.ReplaceSources(ctx, updates); err != nil {
		t.Fatal(err)
	}
	manual := document.New("added by hand")
	manual.Embedding = []float32{0, 1}
	manual.Metadata = map[string]any{"tenant": "other"}
	if err := c.Upsert(ctx, []*document.Document{manual}); err != nil {
		t.Fatal(err)
	}
	dst := store.New(memory.New())
	defer dst.Close()
	// Interrupted after some sources: the run that follows skips them.
	cancelAt := 10
	cctx, cancel := context.WithCancel(ctx)
	_, err = store.CopyCollection(cctx, c, dst, store.CopyOptions{Progress: func(p store.CopyProgress) {
		if cancelAt--; cancelAt == 0 {
			cancel()
		}
	}})
	cancel()
	if err == nil {
		t.Fatal("a cancelled copy reported success")
	}
	var last store.CopyProgress
	rep, err := store.CopyCollection(ctx, c, dst, store.CopyOptions{Progress: func(p store.CopyProgress) { last = p }})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Skipped == 0 || rep.Sources+rep.Skipped != 30 || rep.Documents >= 44 {
		t.Errorf("resumed copy %+v: want some of the 30 sources skipped", rep)
	}
	if last.Done != 44 || last.Total != 44 {
		t.Errorf("last progress %+v, want 44 of 44", last)
	}
	rep, err = store.CopyCollection(ctx, c, dst, store.CopyOptions{}) // a third run writes only the untracked document
	if err != nil {
		t.Fatal(err)
	}
	if rep.Skipped != 30 || rep.Sources != 0 || rep.Documents != 1 {
		t.Errorf("repeated copy %+v", rep)
	}
	d, _ := dst.Collection(ctx, "docs")
	srcStates, _ := c.Sources(ctx)
	dstStates, _ := d.Sources(ctx)
	if fmt.Sprint(srcStates) != fmt.Sprint(dstStates) {
		t.Errorf("sources differ:\n%v\n%v", srcStates, dstStates)
	}
	for _, f := range []filter.Expr{nil, filter.Gte("year", 2020), filter.Eq("tenant", "other")} {
		a, _ := c.Count(ctx, f)
		z, _ := d.Count(ctx, f)
		if a != z {
			t.Errorf("count %v: %d vs %d", f, a, z)
		}
	}
	got, _ := d.Get(ctx, []string{manual.ID})
	if len(got) != 1 || got[0].Content != "added by hand" {
		t.Errorf("manual document: %v", got)
	}
	other := store.New(memory.New())
	defer other.Close()
	if _, err := other.CreateCollection(ctx, store.CollectionConfig{Name: "docs", Model: storetest.Model(3)}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.CopyCollection(ctx, c, other, store.CopyOptions{}); err == nil {
		t.Error("copied into a collection with another model")
	}
}
