package ingest_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/hierarchy"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/load"
)

// TestConcurrentWriters runs what `quarry ingest` and `quarry serve` do at
// once on one knowledge base, each with its own connections as two
// processes have: an ingestion whose hierarchy step reads then writes,
// beside a stream of document adds. Neither may fail for locking, and the
// hierarchy is built.
func TestConcurrentWriters(t *testing.T) {
	kb := filepath.Join(t.TempDir(), "kb")
	ing, srv := newEnv(t, kb), newEnv(t, kb)
	defer ing.s.Close()
	defer srv.s.Close()
	root := t.TempDir()
	files := map[string]string{}
	for i := range 40 {
		files[fmt.Sprintf("team%d/page%02d.md", i%4, i)] = fmt.Sprintf("# Page %d\n\nSome words about topic %d and refunds.\n", i, i)
	}
	writeTree(t, root, files)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var addErr error
	adds := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			var docs []*document.Document
			for j := range 8 {
				d := document.New(fmt.Sprintf("an added note %d-%d about parcels", i, j))
				d.ID = fmt.Sprintf("add-%d-%d", i, j)
				v, err := srv.emb.Embed(ctx, []string{d.Content})
				if err != nil { // the ingestions are done and ctx is cancelled
					return
				}
				d.Embedding = v[0]
				docs = append(docs, d)
			}
			if err := srv.coll.Upsert(context.Background(), docs); err != nil {
				addErr = err
				return
			}
			adds++
		}
	}()
	for run := range 2 {
		opt := ingest.Options{Loader: load.New(load.Options{}), Finish: func(ctx context.Context, entries []load.Entry, _ *ingest.Report) error {
			h, err := hierarchy.Open(ing.coll)
			if err != nil {
				return err
			}
			paths := map[string]string{}
			for _, e := range entries {
				paths[e.Source.Name] = e.Path
			}
			_, err = h.Build(ctx, paths)
			return err
		}}
		opt.Collection, opt.Embedder, opt.Cache = ing.coll, ing.emb, ing.b.EmbeddingCache()
		if _, err := ingest.Run(context.Background(), []string{root}, opt); err != nil {
			t.Fatalf("ingest %d beside adds: %v", run, err)
		}
	}
	cancel()
	wg.Wait()
	if addErr != nil {
		t.Fatalf("an add beside the ingestion failed: %v", addErr)
	}
	h, err := hierarchy.Open(ing.coll)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := h.Nodes(context.Background())
	if err != nil || len(nodes) < 5 {
		t.Fatalf("hierarchy after concurrent writes: %d nodes, %v", len(nodes), err)
	}
	t.Logf("%d add batches beside two ingestions; %d nodes", adds, len(nodes))
}

// TestSameFolderTwiceAtOnce: two ingestions of one folder started together
// do the work once; the second waits for the first and finds every source
// unchanged.
func TestSameFolderTwiceAtOnce(t *testing.T) {
	kb := filepath.Join(t.TempDir(), "kb")
	a, b := newEnv(t, kb), newEnv(t, kb)
	defer a.s.Close()
	defer b.s.Close()
	root := t.TempDir()
	writeTree(t, root, corpus())
	reps := make([]*ingest.Report, 2)
	var wg sync.WaitGroup
	for i, e := range []*env{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			opt := ingest.Options{Loader: load.New(load.Options{})}
			opt.Collection, opt.Embedder, opt.Cache = e.coll, e.emb, e.b.EmbeddingCache()
			rep, err := ingest.Run(context.Background(), []string{root}, opt)
			if err != nil {
				t.Errorf("ingestion %d: %v", i, err)
			}
			reps[i] = rep
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	written := reps[0].Written + reps[1].Written
	if written != len(corpus()) || a.emb.texts+b.emb.texts != reps[0].Chunks+reps[1].Chunks {
		t.Fatalf("two runs wrote %d files (want %d once) and embedded %d+%d texts: %+v %+v", written, len(corpus()), a.emb.texts, b.emb.texts, reps[0], reps[1])
	}
}
