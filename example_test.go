package quarry_test

import (
	"context"
	"fmt"
	"log"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/filter"
)

// The knowledge base here lives in memory; a directory ("./.quarry") or
// "postgres://…" opens a persistent one the same way.
func ExampleOpen() {
	ctx := context.Background()
	kb, err := quarry.Open(ctx, "memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer kb.Close()
	docs := kb.Collection("handbook")
	if _, err := docs.Add(ctx,
		quarry.NewDocument{Text: "Refunds are paid within fourteen days of the return.", Source: "refunds.md"},
		quarry.NewDocument{Text: "Parcels leave the warehouse every weekday before noon.", Source: "shipping.md"},
	); err != nil {
		log.Fatal(err)
	}
	res, err := docs.Search(ctx, "when are refunds paid", quarry.TopK(1))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Mode, res.Results[0].Location)
	ans, err := docs.Ask(ctx, "When are refunds paid?", quarry.Where(filter.Eq("sourceName", "refunds.md")))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ans.Answer)
	// Output:
	// keyword refunds.md
	// Refunds are paid within fourteen days of the return. [1]
}

// A server or agent acts for a caller with a Scope: its filter is ANDed
// into everything the caller reaches, and raw store fragments are refused
// unless the scope allows them.
func ExampleKB_Search() {
	ctx := context.Background()
	kb, err := quarry.Open(ctx, "memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer kb.Close()
	if _, err := kb.AddDocuments(ctx, quarry.Developer(), "", []quarry.NewDocument{
		{Text: "Acme's refunds take five days.", Source: "acme.md"},
		{Text: "Globex's refunds take ten days.", Source: "globex.md"},
	}); err != nil {
		log.Fatal(err)
	}
	acme := quarry.Scope{Filter: filter.Eq("sourceName", "acme.md"), ReadOnly: true}
	res, err := kb.Search(ctx, acme, quarry.SearchRequest{Query: "refunds"})
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range res.Results {
		fmt.Println(p.Source)
	}
	// Output:
	// acme.md
}
