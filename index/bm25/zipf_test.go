package bm25_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quarry-rag/quarry/index/bitset"
	"github.com/quarry-rag/quarry/index/bm25"
)

// TestPruningIsExact compares MaxScore's top 10 with the head of the
// unpruned ranking (k = every document) on a Zipf corpus, where frequent
// terms make pruning and threshold seeding do real work; with and without
// an allow-set and deletes.
func TestPruningIsExact(t *testing.T) {
	c := benchCorpus(4000)
	x, err := bm25.New(bm25.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range c.Docs {
		if err := x.Add(uint32(i), bm25.Doc{ID: d.ID, Text: d.Text}); err != nil {
			t.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(9, 9))
	check := func(allow *bitset.Set) {
		t.Helper()
		for _, q := range c.Queries[:300] {
			for _, k := range []int{1, 10, 50} {
				got := x.Search(q.Text, k, bm25.SearchOptions{Allow: allow})
				all := x.Search(q.Text, len(c.Docs), bm25.SearchOptions{Allow: allow})
				if !slices.Equal(got, all[:min(k, len(all))]) {
					t.Fatalf("query %q k=%d:\n got %v\nwant %v", q.Text, k, got, all[:min(k, len(all))])
				}
			}
		}
	}
	check(nil)
	allow := bitset.New(len(c.Docs))
	for i := range len(c.Docs) {
		if r.IntN(4) == 0 {
			allow.Add(uint32(i))
		}
	}
	check(allow)
	for i := 0; i < len(c.Docs); i += 7 {
		if err := x.Delete(uint32(i)); err != nil {
			t.Fatal(err)
		}
	}
	check(nil)
	check(allow)
}
