// Minimal is the shortest Quarry program: it opens (or creates) the
// knowledge base in ./.quarry, ingests ./docs, searches it and asks it a
// question, offline. It does what `quarry ingest docs`, `quarry search`
// and `quarry ask` do, with the same chunks, hits and answer.
package main

import (
	"context"
	"log"

	"github.com/quarry-rag/quarry"
)

func main() {
	ctx := context.Background()
	kb := must(quarry.Open(ctx, "", quarry.Create()))
	defer kb.Close()
	docs := kb.Collection("")
	must(docs.Ingest(ctx, []string{"docs"}))
	hits := must(docs.Search(ctx, "when are refunds paid"))
	answer := must(docs.Ask(ctx, "How long do refunds take?"))
	log.Println(hits.Results[0].Location, "\n"+answer.Answer)
}

func must[T any](v T, err error) T {
	if err != nil {
		log.Fatal(err)
	}
	return v
}
