package retrieve_test

import (
	"fmt"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/retrieve"
)

// Two queries' rankings fused: a passage both found comes first.
func ExampleFuseRRF() {
	d := func(id string) *document.Document { return &document.Document{ID: id, Content: id} }
	fused := retrieve.FuseRRF([][]*document.Document{
		{d("refunds.md#1"), d("shipping.md#2")},
		{d("gift-cards.md#1"), d("refunds.md#1")},
	}, retrieve.DefaultRRFK, 3)
	for _, x := range fused {
		fmt.Printf("%s %.4f\n", x.ID, x.Score)
	}
	// Output:
	// refunds.md#1 0.0325
	// gift-cards.md#1 0.0164
	// shipping.md#2 0.0161
}

// Semantic memory is scoped to the threads named, never others.
func ExampleMemoryFilter() {
	f, _ := retrieve.MemoryFilter([]string{"alice-1", "alice-2", "alice-1"})
	s, _ := filter.Format(f)
	fmt.Println(s)
	// Output:
	// {"operator":"and","conditions":[{"operator":"eq","field":"sourceType","value":"conversation"},{"operator":"in","field":"sourceName","value":["alice-1","alice-2"]}]}
}
