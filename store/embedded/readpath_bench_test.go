package embedded_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/embed/hash"
	"github.com/quarry-rag/quarry/eval"
	"github.com/quarry-rag/quarry/internal/kwbench"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/embedded"
)

// BenchmarkStoreSearchReadPath searches through the store, per mode, at
// 100,000 chunks (QUARRY_BENCH_DOCS to change it) of the keyword
// benchmark's Zipf corpus with 512-d hash embeddings, and reports two
// figures side by side, interleaved search by search so machine noise hits
// both alike:
//   - index: the index's work alone (filter, postings or graph, fusion),
//     the search stopped before it reads rows;
//   - store: the whole search as callers see it, hits read from SQLite
//     without their vectors.
//
// store/index is what reading rows costs on top of the index; rows-µs is
// the p50 difference. The index-only figures of the indexes on their own
// are kwbench's and annbench's (quarry bench keyword, quarry bench ann).
// QUARRY_BENCH_DIR keeps the knowledge base between runs.
func BenchmarkStoreSearchReadPath(b *testing.B) {
	ctx := context.Background()
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("QUARRY_BENCH_DOCS")); err == nil && v > 0 {
		n = v
	}
	kc := kwbench.DefaultConfig()
	kc.Docs, kc.Queries = n, 1000
	corpus := kwbench.Generate(kc)
	emb, err := hash.New(hash.Config{})
	if err != nil {
		b.Fatal(err)
	}
	// Indexing 100,000 chunks takes a minute, and a profile wants many
	// runs: QUARRY_BENCH_DIR keeps the knowledge base.
	dir := os.Getenv("QUARRY_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	_, statErr := os.Stat(filepath.Join(dir, embedded.DBFile))
	bk, err := embedded.Open(ctx, dir, embedded.Options{CheckpointRows: -1})
	if err != nil {
		b.Fatal(err)
	}
	s := store.New(bk)
	defer s.Close()
	c, err := s.EnsureCollection(ctx, store.CollectionConfig{Name: "bench", Model: emb.Model()})
	if err != nil {
		b.Fatal(err)
	}
	if statErr != nil {
		if err := eval.IndexCorpus(ctx, c, emb, corpus.Docs, 2000); err != nil {
			b.Fatal(err)
		}
	}
	texts := make([]string, len(corpus.Queries))
	for i, q := range corpus.Queries {
		texts[i] = q.Text
	}
	vecs, err := embed.Batched{Embedder: emb}.Embed(ctx, texts)
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []store.Mode{store.ModeKeyword, store.ModeVector, store.ModeHybrid} {
		b.Run(string(mode), func(b *testing.B) {
			search := func(i int, indexOnly bool) time.Duration {
				bk.SetIndexOnly(indexOnly)
				req := store.SearchRequest{Mode: mode, TopK: 10}
				if mode != store.ModeVector {
					req.Query = texts[i]
				}
				if mode != store.ModeKeyword {
					req.Embedding = vecs[i]
				}
				t0 := time.Now()
				if _, err := c.Search(ctx, req); err != nil {
					b.Fatal(err)
				}
				return time.Since(t0)
			}
			for i := range texts { // warm both: the first pass reads pages in
				search(i, true)
				search(i, false)
			}
			var index, full []time.Duration
			b.ResetTimer()
			for it := 0; it < b.N; it++ {
				// The two figures search different queries in turn, so
				// neither finds the other's graph nodes and rows in cache.
				i := it % len(texts)
				index = append(index, search((i+len(texts)/2)%len(texts), true))
				full = append(full, search(i, false))
			}
			b.StopTimer()
			bk.SetIndexOnly(false)
			slices.Sort(index)
			slices.Sort(full)
			p := func(d []time.Duration, q float64) float64 {
				return float64(kwbench.Percentile(d, q).Nanoseconds()) / 1e3
			}
			b.ReportMetric(p(index, 50), "index-p50-µs")
			b.ReportMetric(p(full, 50), "store-p50-µs")
			b.ReportMetric(p(full, 99), "store-p99-µs")
			b.ReportMetric(p(full, 50)-p(index, 50), "rows-µs")
			b.ReportMetric(p(full, 50)/p(index, 50), "store/index-p50")
		})
	}
}
