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
// benchmark's Zipf corpus with hash embeddings, and times two read paths
// on the same knowledge base, query by query interleaved so machine noise
// hits both alike:
//   - before: SQLite's default reader settings (no memory map, a 2 MB page
//     cache) and every hit's embedding blob read, as the store read until
//     this benchmark was written;
//   - after: the defaults (a memory-mapped database, a 16 MiB page cache
//     per reader) and hits without vectors unless asked for.
//
// It reports each path's p50 and p99 and after/before, for keyword,
// vector and hybrid search; the index-only figures are kwbench's and
// annbench's (quarry bench keyword, quarry bench ann).
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
	// QUARRY_BENCH_DIR keeps the knowledge base between runs: indexing
	// 100,000 chunks takes a minute, and a profile wants many runs.
	dir := os.Getenv("QUARRY_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	_, statErr := os.Stat(filepath.Join(dir, embedded.DBFile))
	open := func(opt embedded.Options) (*store.Store, *store.Collection) {
		bk, err := embedded.Open(ctx, dir, opt)
		if err != nil {
			b.Fatal(err)
		}
		s := store.New(bk)
		c, err := s.EnsureCollection(ctx, store.CollectionConfig{Name: "bench", Model: emb.Model()})
		if err != nil {
			b.Fatal(err)
		}
		return s, c
	}
	if statErr != nil {
		s, c := open(embedded.Options{})
		if err := eval.IndexCorpus(ctx, c, emb, corpus.Docs, 2000); err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
	oldS, oldC := open(embedded.Options{MmapBytes: -1, CacheBytes: -1, CheckpointRows: -1})
	defer oldS.Close()
	newS, newC := open(embedded.Options{CheckpointRows: -1})
	defer newS.Close()
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
			var before, after []time.Duration
			search := func(c *store.Collection, i int, vectors bool) time.Duration {
				req := store.SearchRequest{Mode: mode, TopK: 10, Vectors: vectors}
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
				search(oldC, i, true)
				search(newC, i, false)
			}
			b.ResetTimer()
			for it := 0; it < b.N; it++ {
				i := it % len(texts)
				if os.Getenv("XONLY") == "" {
					before = append(before, search(oldC, i, true))
				}
				after = append(after, search(newC, i, false))
			}
			b.StopTimer()
			slices.Sort(before)
			slices.Sort(after)
			p := func(d []time.Duration, q float64) float64 {
				return float64(kwbench.Percentile(d, q).Nanoseconds()) / 1e3
			}
			if len(before) == 0 {
				before = after
			}
			b.ReportMetric(p(before, 50), "before-p50-µs")
			b.ReportMetric(p(after, 50), "after-p50-µs")
			b.ReportMetric(p(before, 99), "before-p99-µs")
			b.ReportMetric(p(after, 99), "after-p99-µs")
			b.ReportMetric(p(after, 50)/p(before, 50), "after/before-p50")
		})
	}
}
