// Postgres keeps a knowledge base in PostgreSQL + pgvector: every piece of
// state (documents, vectors, threads, jobs, the hierarchy) lives in
// quarry_* tables of the database named by QUARRY_PG_DSN, as
// postgres://user@host:5432/db. Run `quarry setup --store $QUARRY_PG_DSN`
// once with an administrator's rights; the program needs only DML grants.
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/quarry-rag/quarry"
)

func main() {
	ctx := context.Background()
	kb, err := quarry.Open(ctx, os.Getenv("QUARRY_PG_DSN"))
	if err != nil {
		log.Fatal(err)
	}
	defer kb.Close()
	docs := kb.Collection("handbook")
	if _, err := docs.Ingest(ctx, os.Args[1:]); err != nil {
		log.Fatal(err)
	}
	res, err := docs.Search(ctx, "how do refunds work", quarry.Mode("hybrid"), quarry.TopK(3))
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range res.Results {
		fmt.Printf("%.4f  %s\n", p.Score, p.Location)
	}
}
