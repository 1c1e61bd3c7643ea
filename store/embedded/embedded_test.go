package embedded_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store/memory"

	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/embedded"
	"github.com/quarry-rag/quarry/store/storetest"
)

func TestStoreConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) *store.Store {
		b, err := embedded.Open(context.Background(), t.TempDir(), embedded.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return store.New(b)
	})
}

// TestKeywordMatchesReference holds the embedded store's BM25 index (with
// MaxScore pruning and allow-sets) to the memory store's exhaustive scoring.
func TestKeywordMatchesReference(t *testing.T) {
	ctx := context.Background()
	b, err := embedded.Open(ctx, t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	emb := store.New(b)
	defer emb.Close()
	ref := store.New(memory.New())
	defer ref.Close()
	words := strings.Fields("refund shipping return policy gift card express delivery warehouse customer order invoice payment tax discount coupon account password login support ticket")
	r := rand.New(rand.NewPCG(3, 4))
	var docs []*document.Document
	for i := range 400 {
		n := 5 + r.IntN(40)
		var ws []string
		for range n {
			ws = append(ws, words[int(float64(len(words))*r.Float64()*r.Float64())])
		}
		d := document.New(strings.Join(ws, " "))
		d.ID = fmt.Sprintf("d%03d", i)
		d.Embedding = []float32{r.Float32() + 0.01, r.Float32()}
		d.Metadata = map[string]any{"tenant": []string{"a", "b"}[i%2], "batch": int64(i % 7)}
		if i%3 == 0 {
			d.Metadata["title"] = words[r.IntN(len(words))] + " guide"
		}
		docs = append(docs, d)
	}
	var colls []*store.Collection
	for _, s := range []*store.Store{emb, ref} {
		c, err := s.CreateCollection(ctx, store.CollectionConfig{Name: "kw", Schema: storetest.Schema(), Model: storetest.Model(2)})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Upsert(ctx, docs); err != nil {
			t.Fatal(err)
		}
		colls = append(colls, c)
	}
	queries := []string{"refund", "gift card guide", "express delivery tax tax", "coupon login", "password support ticket invoice", "nothing"}
	for _, q := range queries {
		for _, f := range []filter.Expr{nil, filter.Eq("tenant", "b"), filter.In("batch", 1, 3)} {
			var got [2][]store.Hit
			for i, c := range colls {
				got[i], err = c.Search(ctx, store.SearchRequest{Query: q, TopK: 15, Filter: f})
				if err != nil {
					t.Fatal(err)
				}
			}
			if len(got[0]) != len(got[1]) {
				t.Fatalf("%q %v: %d hits, reference %d", q, f, len(got[0]), len(got[1]))
			}
			for i := range got[0] {
				a, b := got[0][i].Doc, got[1][i].Doc
				if a.ID != b.ID || math.Abs(a.Score-b.Score) > 1e-6*math.Max(1, b.Score) {
					t.Fatalf("%q %v hit %d: %s %.9f, reference %s %.9f", q, f, i, a.ID, a.Score, b.ID, b.Score)
				}
			}
		}
	}
}

// TestIDReuseAfterCompaction deletes enough to compact the graph, so new
// documents reuse internal ids, and checks filters still see only what
// each id now holds — before and after a reopen from the checkpoint.
func TestIDReuseAfterCompaction(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, err := embedded.Open(ctx, dir, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := store.New(b)
	c, err := s.CreateCollection(ctx, store.CollectionConfig{Name: "reuse", Schema: storetest.Schema(), Model: storetest.Model(2)})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(prefix string, n int, tenant string, year int) []*document.Document {
		var docs []*document.Document
		for i := range n {
			d := document.New("x")
			d.ID = fmt.Sprintf("%s-%03d", prefix, i)
			d.Embedding = []float32{1, float32(i) / 10}
			d.Metadata = map[string]any{"tenant": tenant, "year": int64(year), "tags": []any{prefix}}
			docs = append(docs, d)
		}
		return docs
	}
	if err := c.Upsert(ctx, mk("old", 100, "acme", 2020)); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Delete(ctx, filter.Eq("tenant", "acme")); err != nil || n != 100 {
		t.Fatalf("delete: %d %v", n, err)
	}
	if err := c.Upsert(ctx, mk("new", 60, "globex", 2024)); err != nil {
		t.Fatal(err)
	}
	check := func(c *store.Collection) {
		t.Helper()
		for _, tc := range []struct {
			f    filter.Expr
			want int
		}{
			{filter.Eq("tenant", "acme"), 0},
			{filter.Eq("tenant", "globex"), 60},
			{filter.Neq("tenant", "globex"), 0},
			{filter.Lt("year", 2021), 0},
			{filter.ContainsAny("tags", "old"), 0},
			{filter.ContainsAll("tags", "new"), 60},
			{nil, 60},
		} {
			if n, err := c.Count(ctx, tc.f); err != nil || n != tc.want {
				t.Errorf("count %v = %d (%v), want %d", tc.f, n, err, tc.want)
			}
		}
	}
	check(c)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, err = embedded.Open(ctx, dir, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s = store.New(b)
	defer s.Close()
	c, err = s.Collection(ctx, "reuse")
	if err != nil {
		t.Fatal(err)
	}
	check(c)
}
