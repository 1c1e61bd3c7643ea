package eval

import (
	"fmt"
	"testing"
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
