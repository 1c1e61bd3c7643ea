package opensearch_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/embed/hash"
	"github.com/quarry-rag/quarry/eval"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/embedded"
	"github.com/quarry-rag/quarry/store/opensearch/opensearchtest"
)

// TestSciFactBesideEmbedded: on SciFact with the hash embedder, the store
// on OpenSearch and on Elasticsearch (through the fake: exact vector
// search, Lucene's BM25 over the terms of Quarry's analyzer) ranks within
// two points of nDCG@10 of the embedded store in every mode, and the
// engines' own fusion (hybrid=opensearch, hybrid=elasticsearch) within two
// points of Quarry's; the figures are logged.
func TestSciFactBesideEmbedded(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("corpus test: run without -race and -short")
	}
	dir := filepath.Join("..", "..", "..", "shared", "data", "scifact")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("SciFact not found at %s: %v", dir, err)
	}
	ds, err := eval.LoadBEIR(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e, err := hash.New(hash.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var queries []eval.Query
	for _, q := range ds.Queries {
		if _, ok := ds.Qrels[q.ID]; ok {
			queries = append(queries, q)
		}
	}
	ndcg := func(c *store.Collection, mode store.Mode) float64 {
		run, err := eval.Retrieve(ctx, c, e, queries, eval.Config{Name: string(mode), Mode: mode}, 100)
		if err != nil {
			t.Fatal(err)
		}
		return eval.Evaluate(ds.Qrels, run, eval.NDCG(10)).Mean["ndcg@10"]
	}
	index := func(s *store.Store) *store.Collection {
		c, err := s.CreateCollection(ctx, store.CollectionConfig{Name: "scifact", Model: e.Model()})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := eval.IndexCorpus(ctx, c, e, ds.Corpus, 256); err != nil {
			t.Fatal(err)
		}
		t.Logf("indexed %d documents in %v", len(ds.Corpus), time.Since(start))
		return c
	}
	em, err := embedded.Open(ctx, t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	es := store.New(em)
	defer es.Close()
	ref := index(es)
	want := map[store.Mode]float64{}
	modes := []store.Mode{store.ModeKeyword, store.ModeVector, store.ModeHybrid}
	for _, mode := range modes {
		want[mode] = ndcg(ref, mode)
	}
	near := func(what string, got, want float64) {
		t.Logf("%s: nDCG@10 %.4f, embedded %.4f", what, got, want)
		if d := want - got; d > 0.02 || d < -0.02 {
			t.Errorf("%s: nDCG@10 %.4f, embedded %.4f", what, got, want)
		}
	}
	for _, eng := range []struct {
		name string
		opts []opensearchtest.Option
	}{{"opensearch", nil}, {"elasticsearch", []opensearchtest.Option{opensearchtest.Elasticsearch()}}} {
		srv := fake(t, eng.opts...)
		qs, err := store.Open(ctx, srv.StoreURL("prefix=scifact"))
		if err != nil {
			t.Fatal(err)
		}
		defer qs.Close()
		c := index(qs)
		for _, mode := range modes {
			near(eng.name+" (fake) "+string(mode), ndcg(c, mode), want[mode])
		}
		// The engine's fusion reads the same collection.
		ns, err := store.Open(ctx, srv.StoreURL("prefix=scifact&hybrid="+eng.name))
		if err != nil {
			t.Fatal(err)
		}
		defer ns.Close()
		nc, err := ns.Collection(ctx, "scifact")
		if err != nil {
			t.Fatal(err)
		}
		near(eng.name+" (fake) hybrid="+eng.name, ndcg(nc, store.ModeHybrid), want[store.ModeHybrid])
	}
}
