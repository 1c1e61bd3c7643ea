package rerank_test

import (
	"context"
	"fmt"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/rerank"
)

// An adaptive threshold keeps the passages whose scores stand out.
func ExampleAdaptiveThreshold() {
	var docs []*document.Document
	for i, s := range []float64{0.91, 0.88, 0.35, 0.86, 0.12} {
		d := &document.Document{ID: fmt.Sprint(i + 1)}
		d.SetScore(s)
		docs = append(docs, d)
	}
	kept, _ := rerank.AdaptiveThreshold{Multiplier: rerank.DefaultMultiplier}.Process(context.Background(), "q", docs)
	for _, d := range kept {
		fmt.Println(d.ID, d.Score)
	}
	// Output:
	// 1 0.91
	// 2 0.88
	// 4 0.86
}
