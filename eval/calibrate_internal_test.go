package eval

import (
	"context"
	"fmt"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/memory"
)

// perQuery is n queries' ndcg@10 figures: base for each, plus lift on the
// first lifted of them.
func perQuery(n int, base float64, lifted int, lift float64) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for i := range n {
		s := base
		if i < lifted {
			s += lift
		}
		out[fmt.Sprintf("q%03d", i)] = map[string]float64{"ndcg@10": s}
	}
	return out
}

// TestClimb checks the choice moves one clearly better step at a time
// from the rule and never jumps over a step that is not.
func TestClimb(t *testing.T) {
	flat := perQuery(100, 0.5, 0, 0)
	better := perQuery(100, 0.5, 30, 0.2) // +0.06, clearly
	best := perQuery(100, 0.5, 60, 0.2)   // +0.06 over better
	slight := perQuery(100, 0.5, 1, 0.2)  // +0.002: noise
	for _, tc := range []struct {
		name string
		per  []map[string]map[string]float64
		rule int
		want int
	}{
		{"nothing beats the rule", []map[string]map[string]float64{flat, flat, flat}, 0, 0},
		{"one step", []map[string]map[string]float64{flat, better, flat}, 0, 1},
		{"two steps", []map[string]map[string]float64{flat, better, best}, 0, 2},
		{"no jump over a step that is not better", []map[string]map[string]float64{flat, flat, best}, 0, 0},
		{"a slight gain is not a step", []map[string]map[string]float64{flat, slight}, 0, 0},
		{"from the far end", []map[string]map[string]float64{flat, best, better}, 2, 1},
		{"the better neighbour of two", []map[string]map[string]float64{better, flat, best}, 1, 2},
	} {
		if got := climb(tc.rule, tc.per, "ndcg@10"); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestPseudoQueriesSample checks counting document frequencies on a
// sample of a large collection draws the same chunks as counting them on
// all of it.
func TestPseudoQueriesSample(t *testing.T) {
	ctx := context.Background()
	s := store.New(memory.New())
	defer s.Close()
	c, err := s.EnsureCollection(ctx, store.CollectionConfig{Name: "cal", Model: embed.ModelInfo{Provider: "hash", Model: "x", Dimension: 2}})
	if err != nil {
		t.Fatal(err)
	}
	var docs []*document.Document
	for i := range 400 {
		d := document.New(fmt.Sprintf("alpha%d beta%d gamma%d delta%d epsilon%d zeta%d eta%d", i%7, i%11, i%13, i%17, i%19, i%23, i))
		d.ID, d.Embedding = fmt.Sprintf("d%03d", i), []float32{1, 0}
		docs = append(docs, d)
	}
	if err := c.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	an, err := bm25.NewAnalyzer(bm25.AnalyzerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	all, _, n, err := pseudoQueries(ctx, c, an, 30, 1000)
	if err != nil {
		t.Fatal(err)
	}
	part, _, m, err := pseudoQueries(ctx, c, an, 30, 100)
	if err != nil {
		t.Fatal(err)
	}
	if n != 400 || m != 400 || len(all) != 30 || len(part) != 30 {
		t.Fatalf("%d and %d chunks, %d and %d queries", n, m, len(all), len(part))
	}
	for i := range all {
		if all[i].ID != part[i].ID {
			t.Errorf("query %d: chunk %s, with a sample %s", i, all[i].ID, part[i].ID)
		}
	}
}
