package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/postgres"
)

// TestOriginColumnAddedInPlace checks a store set up before sources
// recorded their files gains the column when it is opened, and keeps
// origins from then on.
func TestOriginColumnAddedInPlace(t *testing.T) {
	ctx := context.Background()
	dsn := freshDSN(t)
	pg, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	pg.Close()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `ALTER TABLE quarry_sources DROP COLUMN origin`); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)

	s, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := s.CreateCollection(ctx, store.CollectionConfig{Name: "docs", Model: embed.ModelInfo{Provider: "test", Model: "m", Dimension: 2}})
	if err != nil {
		t.Fatal(err)
	}
	src := document.Source{Type: document.SourceFile, Name: "a.md"}
	d := document.New("some text")
	d.SourceType, d.SourceName, d.Embedding = src.Type, src.Name, []float32{1, 0}
	if err := c.ReplaceSources(ctx, []store.SourceUpdate{{Source: src, Hash: "h", Docs: []*document.Document{d}, Origin: "/docs/a.md"}}); err != nil {
		t.Fatal(err)
	}
	states, err := c.Sources(ctx)
	if err != nil || len(states) != 1 || states[0].Origin != "/docs/a.md" {
		t.Fatalf("sources %+v %v", states, err)
	}
}
