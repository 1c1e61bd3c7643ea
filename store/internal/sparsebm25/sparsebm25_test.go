package sparsebm25

import (
	"math"
	"slices"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/index/bm25"
)

func TestDocAndQuery(t *testing.T) {
	an, err := bm25.NewAnalyzer(bm25.AnalyzerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	p := Default()
	d := &document.Document{Content: "quarry stone quarry granite"}
	v := Doc(an, d, p, 0)
	if v == nil || len(v.Indices) != 3 || !slices.IsSorted(v.Indices) {
		t.Fatalf("vector %+v: want three sorted dimensions", v)
	}
	// quarry twice in four terms: 2·2.2 / (2 + 1.2·(0.25 + 0.75·4/256)).
	norm := p.K1 * (1 - p.B + p.B*4/p.AvgLen)
	want := float32(2 * (p.K1 + 1) / (2 + norm))
	i := slices.Index(v.Indices, Index(an.Analyze("quarry")[0]))
	if i < 0 || math.Abs(float64(v.Values[i]-want)) > 1e-6 {
		t.Errorf("quarry's weight %v, want %v", v.Values, want)
	}
	if cut := Doc(an, d, p, 1); len(cut.Indices) != 1 || cut.Indices[0] != v.Indices[i] {
		t.Errorf("limit 1 kept %v, want the heaviest, quarry", cut.Indices)
	}
	if Doc(an, &document.Document{Content: "the and of"}, p, 0) != nil {
		t.Error("a text of stop words has a vector")
	}
	if q := Query(an, "quarry quarries stone"); len(q) != 2 {
		t.Errorf("query dimensions %v: want quarry once and stone", q)
	}
}
