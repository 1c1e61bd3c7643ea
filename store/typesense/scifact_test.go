package typesense_test

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
)

// TestSciFactBesideEmbedded: on SciFact with the hash embedder, the
// Typesense store (through the fake, whose vector search is exact) ranks
// vectors within two points of nDCG@10 of the embedded store. Keyword
// search is Typesense's own — every term required, then terms dropped from
// the right — which the fake imitates without Typesense's text_match
// score, so its figure and hybrid's are held to floors only
// (docs/stores.md).
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
	qs, err := store.Open(ctx, fake(t).StoreURL("prefix=scifact"))
	if err != nil {
		t.Fatal(err)
	}
	defer qs.Close()
	em, err := embedded.Open(ctx, t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	es := store.New(em)
	defer es.Close()
	var colls []*store.Collection
	for _, s := range []*store.Store{qs, es} {
		c, err := s.CreateCollection(ctx, store.CollectionConfig{Name: "scifact", Model: e.Model()})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := eval.IndexCorpus(ctx, c, e, ds.Corpus, 256); err != nil {
			t.Fatal(err)
		}
		t.Logf("indexed %d documents in %v", len(ds.Corpus), time.Since(start))
		colls = append(colls, c)
	}
	var queries []eval.Query
	for _, q := range ds.Queries {
		if _, ok := ds.Qrels[q.ID]; ok {
			queries = append(queries, q)
		}
	}
	// The floors hold the rarest-first order of keyword terms: in the
	// question's own order keyword scored 0.390 and hybrid 0.471.
	floor := map[store.Mode]float64{store.ModeKeyword: 0.45, store.ModeHybrid: 0.50}
	for _, mode := range []store.Mode{store.ModeKeyword, store.ModeVector, store.ModeHybrid} {
		var ndcg [2]float64
		for i, c := range colls {
			run, err := eval.Retrieve(ctx, c, e, queries, eval.Config{Name: string(mode), Mode: mode}, 100)
			if err != nil {
				t.Fatal(err)
			}
			ndcg[i] = eval.Evaluate(ds.Qrels, run, eval.NDCG(10)).Mean["ndcg@10"]
		}
		t.Logf("%s: nDCG@10 %.4f on Typesense (fake), %.4f embedded", mode, ndcg[0], ndcg[1])
		switch d := ndcg[1] - ndcg[0]; {
		case mode == store.ModeVector && (d > 0.02 || d < -0.02):
			t.Errorf("%s: nDCG@10 %.4f on Typesense, %.4f embedded", mode, ndcg[0], ndcg[1])
		case mode != store.ModeVector && ndcg[0] < floor[mode]:
			t.Errorf("%s: nDCG@10 %.4f on Typesense, below its floor of %.2f", mode, ndcg[0], floor[mode])
		}
	}
}
