package ingest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/quarry-rag/quarry/embed/hash"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/load"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/embedded"
)

// analyzing is an embedded store that also offers Analyze, as a server
// store does.
type analyzing struct {
	*embedded.Backend
	calls int
}

func (a *analyzing) Analyze(context.Context) error {
	a.calls++
	return nil
}

// TestAnalyzeAfterBulkLoad: an ingestion that writes 1,000 chunks or more
// asks the store to refresh its statistics; a small one does not.
func TestAnalyzeAfterBulkLoad(t *testing.T) {
	ctx := context.Background()
	b, err := embedded.Open(ctx, t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := &analyzing{Backend: b}
	s := store.New(a)
	defer s.Close()
	h, _ := hash.New(hash.Config{})
	coll, err := s.EnsureCollection(ctx, store.CollectionConfig{Name: "default", Model: h.Model()})
	if err != nil {
		t.Fatal(err)
	}
	run := func(files int) {
		t.Helper()
		root := t.TempDir()
		tree := map[string]string{}
		for i := range files {
			tree[fmt.Sprintf("n%d-%04d.txt", files, i)] = fmt.Sprintf("Note %d about shipping and refunds.", i)
		}
		writeTree(t, root, tree)
		if _, err := ingest.Run(ctx, []string{root}, ingest.Options{Collection: coll, Embedder: h, Loader: load.New(load.Options{})}); err != nil {
			t.Fatal(err)
		}
	}
	run(10)
	if a.calls != 0 {
		t.Fatalf("10 chunks: Analyze called %d times", a.calls)
	}
	run(1000)
	if a.calls != 1 {
		t.Fatalf("1,000 chunks: Analyze called %d times, want 1", a.calls)
	}
}
