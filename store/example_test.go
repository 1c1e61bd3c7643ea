package store_test

import (
	"context"
	"fmt"
	"log"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
	_ "github.com/quarry-rag/quarry/store/memory"
)

// A store is opened by URL, like database/sql; collections are created with
// the embedding model they hold, and searched by keywords, vectors or both.
func ExampleOpen() {
	ctx := context.Background()
	s, err := store.Open(ctx, "memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	c, err := s.CreateCollection(ctx, store.CollectionConfig{Name: "notes", Model: embed.ModelInfo{Provider: "test", Model: "m", Dimension: 2}})
	if err != nil {
		log.Fatal(err)
	}
	a, b := document.New("Refunds take five days."), document.New("Parcels ship on weekdays.")
	a.ID, a.SourceName, a.Embedding = "a", "refunds.md", []float32{1, 0}
	b.ID, b.SourceName, b.Embedding = "b", "shipping.md", []float32{0, 1}
	if err := c.Upsert(ctx, []*document.Document{a, b}); err != nil {
		log.Fatal(err)
	}
	hits, err := c.Search(ctx, store.SearchRequest{Query: "refunds", Mode: store.ModeKeyword, TopK: 5})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(hits[0].Doc.SourceName)
	n, err := c.Count(ctx, filter.Eq("sourceName", "shipping.md"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(n)
	// Output:
	// refunds.md
	// 1
}
