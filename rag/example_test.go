package rag_test

import (
	"context"
	"fmt"
	"log"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/rag"
	"github.com/quarry-rag/quarry/retrieve"
)

// fixed is a retriever that always finds the same passages.
type fixed []*document.Document

func (f fixed) Retrieve(context.Context, retrieve.Request) ([]*document.Document, error) {
	return f, nil
}

// A pipeline answers from whatever its retriever finds; with no chat
// model the answer quotes the passages, each sentence cited.
func ExamplePipeline_Ask() {
	d := document.New("Refunds are paid within fourteen days of the return.")
	d.ID, d.SourceName = "r1", "refunds.md"
	d.SetScore(1)
	p := &rag.Pipeline{Retriever: fixed{d}}
	ans, err := p.Ask(context.Background(), rag.Request{Question: "When are refunds paid?"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ans.Text)
	fmt.Println(ans.Citations[0].Location())
	// Output:
	// Refunds are paid within fourteen days of the return. [1]
	// refunds.md
}
