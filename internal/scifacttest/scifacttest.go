// Package scifacttest indexes SciFact (BEIR layout, in the workspace's
// shared data) into a store under test and, beside it, into the embedded
// store, with the hash embedder, so a store's tests can hold its nDCG@10
// to the embedded store's measured in the same run.
package scifacttest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/embed/hash"
	"github.com/quarry-rag/quarry/eval"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/embedded"
)

// Corpus is SciFact, its embedder, and its copy in an embedded store.
type Corpus struct {
	Dataset  *eval.Dataset
	Embedder embed.Embedder
	// Queries are the queries that have judgements.
	Queries []eval.Query
	ref     *store.Collection
	refNDCG map[store.Mode]float64
}

// Load reads SciFact and indexes it into an embedded store. It skips the
// test under the race detector or -short (a corpus test: .ci/run's corpus
// step runs it) and when the data is not there.
func Load(tb testing.TB) *Corpus {
	tb.Helper()
	if raceEnabled || testing.Short() {
		tb.Skip("corpus test: run without -race and -short (.ci/run's corpus step)")
	}
	dir := dataDir()
	if _, err := os.Stat(dir); err != nil {
		tb.Skipf("SciFact not found at %s: %v", dir, err)
	}
	ds, err := eval.LoadBEIR(dir)
	if err != nil {
		tb.Fatal(err)
	}
	e, err := hash.New(hash.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	c := &Corpus{Dataset: ds, Embedder: e, refNDCG: map[store.Mode]float64{}}
	for _, q := range ds.Queries {
		if _, ok := ds.Qrels[q.ID]; ok {
			c.Queries = append(c.Queries, q)
		}
	}
	em, err := embedded.Open(context.Background(), tb.TempDir(), embedded.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	es := store.New(em)
	tb.Cleanup(func() { es.Close() })
	c.ref = c.Index(tb, es)
	return c
}

// dataDir finds shared/data/scifact beside the module's root.
func dataDir() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "..", "shared", "data", "scifact")
		}
		up := filepath.Dir(dir)
		if up == dir {
			return ""
		}
		dir = up
	}
}

// Index makes collection "scifact" in s and writes the corpus into it.
func (c *Corpus) Index(tb testing.TB, s *store.Store) *store.Collection {
	tb.Helper()
	ctx := context.Background()
	coll, err := s.CreateCollection(ctx, store.CollectionConfig{Name: "scifact", Model: c.Embedder.Model()})
	if err != nil {
		tb.Fatal(err)
	}
	start := time.Now()
	if err := eval.IndexCorpus(ctx, coll, c.Embedder, c.Dataset.Corpus, 256); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("indexed %d documents in %v", len(c.Dataset.Corpus), time.Since(start).Round(time.Millisecond))
	return coll
}

// NDCG is the mean nDCG@10 of a collection's searches in one mode, the
// top 100 retrieved per query.
func (c *Corpus) NDCG(tb testing.TB, coll *store.Collection, mode store.Mode) float64 {
	tb.Helper()
	run, err := eval.Retrieve(context.Background(), coll, c.Embedder, c.Queries, eval.Config{Name: string(mode), Mode: mode}, 100)
	if err != nil {
		tb.Fatal(err)
	}
	return eval.Evaluate(c.Dataset.Qrels, run, eval.NDCG(10)).Mean["ndcg@10"]
}

// Embedded is the embedded store's nDCG@10 in a mode, measured once.
func (c *Corpus) Embedded(tb testing.TB, mode store.Mode) float64 {
	tb.Helper()
	if v, ok := c.refNDCG[mode]; ok {
		return v
	}
	v := c.NDCG(tb, c.ref, mode)
	c.refNDCG[mode] = v
	return v
}
