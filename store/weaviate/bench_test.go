package weaviate_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/embed/hash"
	"github.com/quarry-rag/quarry/eval"
	"github.com/quarry-rag/quarry/internal/pgtest"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/embedded"
	"github.com/quarry-rag/quarry/store/postgres"
)

// settle is how long the benchmark lets Weaviate flush its memtables
// (scripts/weaviate.sh sets MEMTABLES_FLUSH_DIRTY_AFTER_SECONDS=5).
var settle = 15 * time.Second

// BenchmarkSciFactStores ingests SciFact (hash embedder) into the embedded
// store, PostgreSQL (when QUARRY_TEST_PG_DSN is set), one Weaviate node
// (with Quarry's fusion and, as "weaviate-native", with Weaviate's own
// hybrid) and the Weaviate cluster (when QUARRY_TEST_WEAVIATE_CLUSTER_URL is set),
// in the same run; logs each store's ingestion rate and nDCG@10 per mode,
// then times top-10 searches of the 300 judged queries per mode. Compare
// stores by the ratio of their numbers: these machines are shared.
//
//	go test ./store/weaviate -run '^$' -bench SciFactStores -benchtime 300x
func BenchmarkSciFactStores(b *testing.B) {
	base := serverURL(b, "QUARRY_TEST_WEAVIATE_URL")
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
	type entry struct {
		name string
		s    *store.Store
		c    *store.Collection
	}
	em, err := embedded.Open(ctx, b.TempDir(), embedded.Options{})
	if err != nil {
		b.Fatal(err)
	}
	stores := []*entry{{name: "embedded", s: store.New(em)}}
	if os.Getenv("QUARRY_TEST_PG_DSN") != "" {
		pg, err := postgres.Open(ctx, pgtest.FreshDSN(b))
		if err != nil {
			b.Fatal(err)
		}
		stores = append(stores, &entry{name: "postgres", s: store.New(pg)})
	}
	stores = append(stores, &entry{name: "weaviate", s: openFresh(b, base)},
		&entry{name: "weaviate-native", s: openFresh(b, base+"?hybrid=weaviate")})
	if u := os.Getenv("QUARRY_TEST_WEAVIATE_CLUSTER_URL"); u != "" {
		stores = append(stores, &entry{name: "weaviate-3", s: openFresh(b, u)})
	}
	for _, st := range stores {
		defer st.s.Close()
	}
	var queries []eval.Query
	for _, q := range ds.Queries {
		if _, judged := ds.Qrels[q.ID]; judged {
			queries = append(queries, q)
		}
	}
	configs := eval.Configs()[:3] // keyword, vector, hybrid
	for _, st := range stores {
		c, err := st.s.CreateCollection(ctx, store.CollectionConfig{Name: "scifact", Model: e.Model()})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := eval.IndexCorpus(ctx, c, e, ds.Corpus, 256); err != nil {
			b.Fatal(err)
		}
		st.c = c
		if err := st.s.Analyze(ctx); err != nil {
			b.Fatal(err)
		}
		line := fmt.Sprintf("%-15s ingest %5.0f docs/s; nDCG@10", st.name, float64(len(ds.Corpus))/time.Since(start).Seconds())
		if strings.HasPrefix(st.name, "weaviate") {
			// Weaviate scores BM25 over writes still in its memtables
			// differently (on a sharded class, far worse) until they are
			// flushed: measure right after the ingestion, then settled.
			run, err := eval.Retrieve(ctx, c, e, queries, configs[0], 10)
			if err != nil {
				b.Fatal(err)
			}
			line += fmt.Sprintf(" keyword at once %.3f;", eval.Evaluate(ds.Qrels, run, eval.NDCG(10)).Mean[eval.NDCG(10).String()])
			time.Sleep(settle)
		}
		for _, cfg := range configs {
			run, err := eval.Retrieve(ctx, c, e, queries, cfg, 10)
			if err != nil {
				b.Fatal(err)
			}
			res := eval.Evaluate(ds.Qrels, run, eval.NDCG(10))
			line += fmt.Sprintf(" %s %.3f", cfg.Name, res.Mean[eval.NDCG(10).String()])
		}
		b.Log(line)
	}
	var reqs []store.SearchRequest
	for _, q := range queries {
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
