package main

import (
	"context"
	"os"
	"testing"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/internal/pgtest"
)

// TestOnPostgres runs the example on the PostgreSQL that
// QUARRY_TEST_PG_DSN names (.ci/run starts one).
func TestOnPostgres(t *testing.T) {
	dsn := pgtest.FreshDSN(t)
	// The example reads the knowledge base from QUARRY_PG_DSN; the store
	// needs its tables, which `quarry setup` (or the first open) makes.
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
}
