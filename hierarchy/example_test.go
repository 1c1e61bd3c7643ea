package hierarchy_test

import (
	"context"
	"fmt"
	"os"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/hierarchy"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/memory"
)

// Build a hierarchy from ingested files, print it, and jump to a node by
// one of its triggers.
func Example() {
	ctx := context.Background()
	s := store.New(memory.New())
	defer s.Close()
	coll, _ := s.CreateCollection(ctx, store.CollectionConfig{Name: "handbook", Model: model})
	_ = coll.Upsert(ctx, []*document.Document{
		chunk("README.md", 0, "Welcome to the handbook of the company.", "Handbook"),
		chunk("billing/refunds.md", 0, "Refunds are paid within fourteen days.", "Refund Policy"),
		chunk("billing/tax/vat.md", 0, "VAT is charged at the local rate.", "VAT Rates"),
	})

	h, err := hierarchy.Open(coll)
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := h.Build(ctx, nil); err != nil {
		fmt.Println(err)
		return
	}
	tree, _ := h.Tree(ctx)
	_ = tree.Write(os.Stdout)
	n, _ := h.FindByTrigger(ctx, "Refund")
	fmt.Println("refund →", n.Path)
	// Output:
	// Root  (1 chunks, 3 in all)  [handbook]
	// └── billing  (1 chunks, 2 in all)  [refund, policy]
	//     └── tax  (1 chunks)  [vat, rates]
	// refund → /Root/billing
}
