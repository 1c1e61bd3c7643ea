package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/embed/hash"
	"github.com/quarry-rag/quarry/eval"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/embedded"
	"github.com/quarry-rag/quarry/store/postgres"
)

// parityCorpus is n documents in 16 dimensions with a tenant (10 % each),
// a year, tags, and a rare flag on 1 % of them.
func parityCorpus(n int) []*document.Document {
	rng := rand.New(rand.NewPCG(7, 11))
	words := strings.Fields("vector index filter scope tenant graph keyword hybrid store query answer source chunk")
	docs := make([]*document.Document, n)
	for i := range docs {
		v := make([]float32, 16)
		for j := range v {
			v[j] = float32(rng.NormFloat64())
		}
		var text []string
		for range 12 {
			text = append(text, words[rng.IntN(len(words))])
		}
		docs[i] = &document.Document{
			ID: fmt.Sprintf("d%05d", i), Content: strings.Join(text, " "), SourceType: "manual", SourceName: fmt.Sprintf("s%03d", i%200),
			Embedding: v,
			Metadata: map[string]any{
				"tenant": fmt.Sprintf("t%d", i%10), "year": 2000 + i%25,
				"tags": []any{words[i%len(words)], words[(i/3)%len(words)]}, "rare": i%100 == 0,
			},
		}
	}
	return docs
}

func paritySchema() *document.Schema {
	return &document.Schema{Fields: []document.Field{
		{Name: "tenant", Type: document.TypeString, Required: true, Filterable: true},
		{Name: "year", Type: document.TypeInteger, Required: true, Filterable: true},
		{Name: "tags", Type: document.TypeStringList, Filterable: true},
		{Name: "rare", Type: document.TypeBoolean, Required: true, Filterable: true},
	}}
}

// parityStores loads the same corpus into a PostgreSQL and an embedded
// collection.
func parityStores(t *testing.T, docs []*document.Document, model embed.ModelInfo) (pg *postgres.Backend, pgc, emc *store.Collection) {
	t.Helper()
	ctx := context.Background()
	pg, err := postgres.Open(ctx, freshDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	em, err := embedded.Open(ctx, t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	es := store.New(em)
	t.Cleanup(func() { es.Close() })
	cfg := store.CollectionConfig{Name: "parity", Model: model, Schema: paritySchema()}
	for _, s := range []*store.Store{store.New(pg), es} {
		c, err := s.CreateCollection(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for b := 0; b < len(docs); b += 500 {
			if err := c.Upsert(ctx, docs[b:min(b+500, len(docs))]); err != nil {
				t.Fatal(err)
			}
		}
		if s == es {
			emc = c
		} else {
			pgc = c
		}
	}
	return pg, pgc, emc
}

func ids(hits []store.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Doc.ID
	}
	return out
}

// TestParityWithEmbedded holds the PostgreSQL store to the embedded one on
// the same data: exact filtered searches return the same ids in the same
// order, a 1 % filter through the HNSW index still fills k, and a
// request's $or cannot reach outside the scope it is merged under.
func TestParityWithEmbedded(t *testing.T) {
	freshDSN(t) // skip early without a server
	ctx := context.Background()
	const n = 5000
	docs := parityCorpus(n)
	pg, pgc, emc := parityStores(t, docs, embed.ModelInfo{Provider: "test", Model: "rand", Dimension: 16})
	queries := parityCorpus(n + 20)[n:]

	filters := []string{
		`tenant = 't3'`,
		`tenant in ('t1', 't2') and year >= 2020`,
		`tags contains any ('graph') or rare = true`,
		`year < 2003 and tenant != 't0'`,
		`sourceName in ('s001', 's002', 's003')`,
	}
	t.Run("exact filtered search", func(t *testing.T) {
		// Sequential scans make PostgreSQL's search exact, as the embedded
		// store's is for allow-sets this small.
		tx, err := pg.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, `SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off`); err != nil {
			t.Fatal(err)
		}
		exact, err := store.New(pg.WithTx(tx)).Collection(ctx, "parity")
		if err != nil {
			t.Fatal(err)
		}
		compared := 0
		for _, fs := range filters {
			f, err := filter.Parse(fs)
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range queries {
				for _, k := range []int{1, 10, 50} {
					req := store.SearchRequest{Embedding: q.Embedding, Filter: f, TopK: k}
					a, err := exact.Search(ctx, req)
					if err != nil {
						t.Fatal(err)
					}
					b, err := emc.Search(ctx, req)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(ids(a), ids(b)) {
						t.Errorf("%s, k=%d: postgres %v, embedded %v", fs, k, ids(a), ids(b))
					}
					compared++
				}
			}
		}
		t.Logf("%d filtered searches: identical id lists", compared)
	})

	t.Run("1% selectivity fills k", func(t *testing.T) {
		rare := filter.Eq("rare", true)
		matches, err := pgc.Count(ctx, rare)
		if err != nil || matches != n/100 {
			t.Fatalf("rare matches %d (%v)", matches, err)
		}
		// The planner may answer a 1 % filter from the metadata index; the
		// second pass forbids that, so the HNSW index must walk on
		// (iterative scans) until k rows pass the filter.
		for _, forceHNSW := range []bool{false, true} {
			tx, err := pg.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, `ANALYZE quarry_documents`); err != nil {
				t.Fatal(err)
			}
			if forceHNSW {
				if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_sort = off`); err != nil {
					t.Fatal(err)
				}
				if plan := explain(t, tx, queries[0].Embedding); !strings.Contains(plan, "quarry_hnsw_") {
					t.Errorf("the forced plan does not use the HNSW index:\n%s", plan)
				}
			}
			c, err := store.New(pg.WithTx(tx)).Collection(ctx, "parity")
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []int{5, 10, matches, 2 * matches} {
				for _, q := range queries[:5] {
					hits, err := c.Search(ctx, store.SearchRequest{Embedding: q.Embedding, Filter: rare, TopK: k})
					if err != nil {
						t.Fatal(err)
					}
					if len(hits) != min(k, matches) {
						t.Errorf("HNSW forced %v, k=%d: %d hits, want %d", forceHNSW, k, len(hits), min(k, matches))
					}
				}
			}
			tx.Rollback(ctx)
		}
	})

	t.Run("$or cannot escape the scope", func(t *testing.T) {
		scope := filter.Eq("tenant", "t4")
		hostile, err := filter.Parse(`{"$or": [{"tenant": "t5"}, {"sourceType": "manual"}, {"rare": true}]}`)
		if err != nil {
			t.Fatal(err)
		}
		merged := filter.Merge(scope, hostile)
		for _, c := range []*store.Collection{pgc, emc} {
			for _, mode := range []store.Mode{store.ModeVector, store.ModeKeyword, store.ModeHybrid} {
				hits, err := c.Search(ctx, store.SearchRequest{Mode: mode, Query: "graph tenant", Embedding: queries[0].Embedding, Filter: merged, TopK: 100})
				if err != nil {
					t.Fatal(err)
				}
				if len(hits) == 0 {
					t.Errorf("%s: no hits under the scope", mode)
				}
				for _, h := range hits {
					if h.Doc.Metadata["tenant"] != "t4" {
						t.Errorf("%s: %s of tenant %v escaped the scope", mode, h.Doc.ID, h.Doc.Metadata["tenant"])
					}
				}
			}
			before, _ := c.Count(ctx, nil)
			in4, _ := c.Count(ctx, scope)
			deleted, err := c.Delete(ctx, filter.Merge(scope, filter.And(hostile, filter.Eq("year", 2004))))
			if err != nil {
				t.Fatal(err)
			}
			after, _ := c.Count(ctx, nil)
			left4, _ := c.Count(ctx, scope)
			if before-after != deleted || in4-left4 != deleted || deleted == 0 {
				t.Errorf("delete under scope: removed %d, total %d→%d, tenant t4 %d→%d", deleted, before, after, in4, left4)
			}
		}
	})
}

func explain(t *testing.T, tx pgx.Tx, q []float32) string {
	t.Helper()
	ctx := context.Background()
	var cid int
	if err := tx.QueryRow(ctx, `SELECT id FROM quarry_collections WHERE name = 'parity'`).Scan(&cid); err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(ctx, fmt.Sprintf(`EXPLAIN SELECT id FROM quarry_documents WHERE collection_id = %d AND metadata->'rare' = 'true'::jsonb
		ORDER BY embedding::vector(16) <=> $1::text::vector(16) LIMIT 10`, cid), vecText(q))
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

func vecText(v []float32) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return "[" + strings.Join(s, ",") + "]"
}

// TestHybridOverlapSciFact compares hybrid search on SciFact between the
// stores: vector branches agree, keyword scoring differs (ts_rank against
// BM25), and the fused top 10 must still overlap by at least 0.8 on
// average.
func TestHybridOverlapSciFact(t *testing.T) {
	if raceEnabled {
		t.Skip("corpus test: run without -race (.ci/run's corpus step)")
	}
	freshDSN(t)
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
	pg, err := postgres.Open(ctx, freshDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	em, err := embedded.Open(ctx, t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	es := store.New(em)
	defer es.Close()
	var colls []*store.Collection
	for _, s := range []*store.Store{store.New(pg), es} {
		c, err := s.CreateCollection(ctx, store.CollectionConfig{Name: "scifact", Model: e.Model()})
		if err != nil {
			t.Fatal(err)
		}
		if err := eval.IndexCorpus(ctx, c, e, ds.Corpus, 256); err != nil {
			t.Fatal(err)
		}
		colls = append(colls, c)
	}
	var sum float64
	var count int
	for _, q := range ds.Queries {
		if _, judged := ds.Qrels[q.ID]; !judged {
			continue
		}
		vecs, err := embed.EmbedQuery(ctx, e, []string{q.Text})
		if err != nil {
			t.Fatal(err)
		}
		req := store.SearchRequest{Mode: store.ModeHybrid, Query: q.Text, Embedding: vecs[0], TopK: 10}
		a, err := colls[0].Search(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := colls[1].Search(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		common := 0
		for _, id := range ids(a) {
			if slices.Contains(ids(b), id) {
				common++
			}
		}
		sum += float64(common) / float64(max(len(b), 1))
		count++
	}
	overlap := sum / float64(count)
	t.Logf("hybrid overlap@10 with the embedded store over %d queries: %.3f", count, overlap)
	if overlap < 0.8 {
		t.Errorf("hybrid overlap@10 %.3f < 0.8", overlap)
	}
}
