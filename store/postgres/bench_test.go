package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/embed/hash"
	"github.com/quarry-rag/quarry/eval"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/embedded"
	"github.com/quarry-rag/quarry/store/postgres"
)

// BenchmarkUpsert times batches written with one pipelined INSERT per
// document against COPY into a temporary table, to place copyThreshold.
//
//	go test ./store/postgres -run '^$' -bench Upsert -benchtime 2s
func BenchmarkUpsert(b *testing.B) {
	ctx := context.Background()
	pg, err := postgres.Open(ctx, freshDSN(b))
	if err != nil {
		b.Fatal(err)
	}
	defer pg.Close()
	s := store.New(pg)
	rng := rand.New(rand.NewPCG(1, 2))
	vec := func() []float32 {
		v := make([]float32, 384)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	seq := 0
	for _, size := range []int{1, 4, 8, 16, 64, 256} {
		for _, path := range []string{"insert", "copy"} {
			b.Run(fmt.Sprintf("batch=%d/path=%s", size, path), func(b *testing.B) {
				if path == "copy" {
					postgres.SetCopyThreshold(pg, 1)
				} else {
					postgres.SetCopyThreshold(pg, 1<<30)
				}
				seq++
				c, err := s.CreateCollection(ctx, store.CollectionConfig{Name: fmt.Sprintf("u%d", seq), Model: embed.ModelInfo{Provider: "p", Model: "m", Dimension: 384}})
				if err != nil {
					b.Fatal(err)
				}
				batches := make([][]*document.Document, 64)
				for i := range batches {
					for j := range size {
						batches[i] = append(batches[i], &document.Document{ID: fmt.Sprintf("%d-%d", i, j), Content: "a short passage of text about vectors and keywords",
							SourceType: "manual", SourceName: "bench", Embedding: vec(), Metadata: map[string]any{"n": j}})
					}
				}
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					if err := c.Upsert(ctx, batches[i%len(batches)]); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(size*b.N)/b.Elapsed().Seconds(), "docs/s")
			})
		}
	}
}

// BenchmarkSciFactStores ingests SciFact (hash embedder) into the embedded
// and the PostgreSQL store in the same run, then times top-10 searches of
// its 300 judged queries per mode. Compare the stores by the ratio of their
// numbers, not the numbers alone: these machines are shared.
//
//	go test ./store/postgres -run '^$' -bench SciFactStores -benchtime 300x
func BenchmarkSciFactStores(b *testing.B) {
	dir := filepath.Join("..", "..", "..", "shared", "data", "scifact")
	if _, err := os.Stat(dir); err != nil {
		b.Skipf("SciFact not found at %s: %v", dir, err)
	}
	ds, err := eval.LoadBEIR(dir)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	e, err := hash.New(hash.Config{})
	if err != nil {
		b.Fatal(err)
	}
	pg, err := postgres.Open(ctx, freshDSN(b))
	if err != nil {
		b.Fatal(err)
	}
	defer pg.Close()
	em, err := embedded.Open(ctx, b.TempDir(), embedded.Options{})
	if err != nil {
		b.Fatal(err)
	}
	stores := []struct {
		name string
		s    *store.Store
		c    *store.Collection
	}{{name: "embedded", s: store.New(em)}, {name: "postgres", s: store.New(pg)}}
	defer stores[0].s.Close()
	// Ingestion runs once per store, timed by hand: a sub-benchmark would
	// run it again for every b.N the framework tries.
	rates := map[string]float64{}
	for i := range stores {
		st := &stores[i]
		c, err := st.s.CreateCollection(ctx, store.CollectionConfig{Name: "scifact", Model: e.Model()})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := eval.IndexCorpus(ctx, c, e, ds.Corpus, 256); err != nil {
			b.Fatal(err)
		}
		rates[st.name] = float64(len(ds.Corpus)) / time.Since(start).Seconds()
		st.c = c
	}
	// Steady state: autovacuum would analyse the table within a minute or
	// so; until then the planner sees stale statistics and may scan.
	tx, err := pg.Begin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `ANALYZE quarry_documents`); err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		b.Fatal(err)
	}
	b.Logf("ingest (hash embedder, batches of 256): embedded %.0f docs/s, postgres %.0f docs/s (postgres/embedded %.2f)",
		rates["embedded"], rates["postgres"], rates["postgres"]/rates["embedded"])
	var reqs []store.SearchRequest
	for _, q := range ds.Queries {
		if _, judged := ds.Qrels[q.ID]; !judged {
			continue
		}
		v, err := embed.EmbedQuery(ctx, e, []string{q.Text})
		if err != nil {
			b.Fatal(err)
		}
		reqs = append(reqs, store.SearchRequest{Query: q.Text, Embedding: v[0], TopK: 10})
	}
	for _, mode := range []store.Mode{store.ModeKeyword, store.ModeVector, store.ModeHybrid} {
		for _, st := range stores {
			b.Run(fmt.Sprintf("search/mode=%s/store=%s", mode, st.name), func(b *testing.B) {
				var lat []time.Duration
				for i := 0; b.Loop(); i++ {
					req := reqs[i%len(reqs)]
					req.Mode = mode
					start := time.Now()
					if _, err := st.c.Search(ctx, req); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(start))

				}
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			})
		}
	}
}
