package main

import (
	"context"
	"os"
	"testing"

	"github.com/quarry-rag/quarry"
)

// TestOnPostgres runs the example on the PostgreSQL that
// QUARRY_TEST_PG_DSN names (.ci/run starts one).
func TestOnPostgres(t *testing.T) {
	dsn := os.Getenv("QUARRY_TEST_PG_DSN")
	if dsn == "" {
		t.Skip("QUARRY_TEST_PG_DSN is not set: start PostgreSQL with pgvector (scripts/pg-pgvector.sh, as .ci/run does) to run the PostgreSQL example")
	}
	t.Setenv("QUARRY_PG_DSN", dsn)
	args := os.Args
	os.Args = []string{"postgres", "../minimal/testdata/docs"}
	defer func() { os.Args = args }()
	main()
	kb, err := quarry.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer kb.Close()
	if n, err := kb.Collection("handbook").Count(context.Background(), nil); err != nil || n == 0 {
		t.Errorf("the example stored %d chunks: %v", n, err)
	}
	if err := kb.Store().DropCollection(context.Background(), "handbook"); err != nil {
		t.Error(err)
	}
}
