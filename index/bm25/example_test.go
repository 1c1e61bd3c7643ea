package bm25_test

import (
	"bytes"
	"fmt"

	"github.com/quarry-rag/quarry/index/bitset"
	"github.com/quarry-rag/quarry/index/bm25"
)

func Example() {
	x, err := bm25.New(bm25.Config{}) // English, k1 0.9, b 0.4
	if err != nil {
		panic(err)
	}
	docs := []bm25.Doc{
		{ID: "granite", Title: "Granite", Text: "An intrusive igneous rock, quarried for building stone."},
		{ID: "basalt", Title: "Basalt", Text: "A volcanic rock that cools into columns."},
		{ID: "marble", Text: "Metamorphosed limestone, quarried in Carrara."},
	}
	for i, d := range docs {
		if err := x.Add(uint32(i), d); err != nil {
			panic(err)
		}
	}
	for _, h := range x.Search("quarries of building stones", 10, bm25.SearchOptions{}) {
		fmt.Printf("%s %.3f\n", h.ID, h.Score)
	}

	// Only documents 1 and 2 may match, as when a filter compiled to ids.
	allow := bitset.New(3)
	allow.Add(1)
	allow.Add(2)
	for _, h := range x.Search("rock", 10, bm25.SearchOptions{Allow: allow}) {
		fmt.Println("allowed:", h.ID)
	}

	// Checkpoint and restore.
	var buf bytes.Buffer
	if _, err := x.WriteTo(&buf); err != nil {
		panic(err)
	}
	y, err := bm25.Read(&buf)
	if err != nil {
		panic(err)
	}
	fmt.Println("restored", y.Len(), "documents")
	// Output:
	// granite 2.296
	// marble 0.493
	// allowed: basalt
	// restored 3 documents
}
