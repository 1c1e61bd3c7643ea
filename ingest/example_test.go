package ingest_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/quarry-rag/quarry/embed/hash"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/load"
	"github.com/quarry-rag/quarry/store"
	_ "github.com/quarry-rag/quarry/store/memory"
)

// A run syncs folders into a collection by source: a second run over
// unchanged files redoes nothing.
func ExampleRun() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "quarry-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "refunds.md"), []byte("# Refunds\n\nRefunds take five days.\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	s, err := store.Open(ctx, "memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	emb, err := hash.New(hash.Config{})
	if err != nil {
		log.Fatal(err)
	}
	c, err := s.CreateCollection(ctx, store.CollectionConfig{Name: "docs", Model: emb.Model()})
	if err != nil {
		log.Fatal(err)
	}
	loader := load.New(load.Options{})
	defer loader.Close()
	opt := ingest.Options{Collection: c, Embedder: emb, Loader: loader}
	for range 2 {
		rep, err := ingest.Run(ctx, []string{dir}, opt)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%d written, %d unchanged\n", rep.Written, rep.Skipped)
	}
	// Output:
	// 1 written, 0 unchanged
	// 0 written, 1 unchanged
}
