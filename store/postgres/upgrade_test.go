package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/postgres"
	"github.com/quarry-rag/quarry/store/storetest"
)

// v1Store sets a store up, writes a document, and takes the layout back to
// schema version 1: no quarry_meta, no search_id, no hierarchy tables, no
// origin column.
func v1Store(t *testing.T) string {
	t.Helper()
	dsn := freshDSN(t)
	ctx := context.Background()
	s, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.CreateCollection(ctx, store.CollectionConfig{Name: "docs", Model: storetest.Model(2)})
	if err != nil {
		t.Fatal(err)
	}
	d := document.New("written by an older Quarry")
	d.ID, d.Embedding = "old-1", []float32{1, 0}
	if err := c.Upsert(ctx, []*document.Document{d}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, stmt := range []string{
		`DROP TABLE quarry_meta, quarry_nodes, quarry_node_chunks, quarry_node_links`,
		`DROP INDEX IF EXISTS quarry_documents_bm25`,
		`ALTER TABLE quarry_documents DROP COLUMN search_id`,
		`ALTER TABLE quarry_sources DROP COLUMN origin`,
	} {
		if _, err := pool(t, dsn).Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	return dsn
}

func TestUpgradeFromVersion1(t *testing.T) {
	ctx := context.Background()
	dsn := v1Store(t)
	if _, err := store.Open(ctx, dsn); err == nil || !strings.Contains(err.Error(), "migrate --upgrade") {
		t.Fatalf("opening a version 1 store: %v, want advice to upgrade", err)
	}
	// Inside a caller's transaction that rolls back, nothing changes.
	tx, err := pool(t, dsn).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if from, err := postgres.UpgradeTx(ctx, tx); err != nil || from != 1 {
		t.Fatalf("upgrade in a transaction: %d, %v", from, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Open(ctx, dsn); err == nil {
		t.Fatal("a rolled-back upgrade left the store upgraded")
	}
	for run, want := range []int{1, postgres.SchemaVersion} { // the second finds it done
		if from, err := postgres.Upgrade(ctx, dsn); err != nil || from != want {
			t.Fatalf("upgrade %d: from %d, %v; want from %d", run+1, from, err, want)
		}
	}
	s, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("open after the upgrade: %v", err)
	}
	defer s.Close()
	c, err := s.Collection(ctx, "docs")
	if err != nil {
		t.Fatal(err)
	}
	hits, err := c.Search(ctx, store.SearchRequest{Query: "older", Embedding: []float32{1, 0}, Mode: store.ModeHybrid})
	if err != nil || len(hits) != 1 || hits[0].Doc.ID != "old-1" {
		t.Errorf("search after the upgrade: %v %v", hits, err)
	}
	if hs, err := s.Hierarchy(); err != nil {
		t.Error(err)
	} else if _, err := hs.PutNodes(ctx, "docs", []store.Node{{Kind: store.NodeRoot, Name: "Root", Path: "/Root"}}); err != nil {
		t.Errorf("the hierarchy after the upgrade: %v", err)
	}
}

func TestUpgradeRefusesPartialAndForeign(t *testing.T) {
	ctx := context.Background()
	for name, breakIt := range map[string]string{
		"partial": `DROP TABLE quarry_threads`,
		"foreign": `ALTER TABLE quarry_documents ADD COLUMN extra text`,
	} {
		t.Run(name, func(t *testing.T) {
			dsn := v1Store(t)
			if _, err := pool(t, dsn).Exec(ctx, breakIt); err != nil {
				t.Fatal(err)
			}
			if _, err := postgres.Upgrade(ctx, dsn); err == nil || !strings.Contains(err.Error(), "not upgraded") {
				t.Errorf("upgrade: %v, want a refusal", err)
			}
			var meta bool
			if err := pool(t, dsn).QueryRow(ctx, `SELECT to_regclass('quarry_meta') IS NOT NULL`).Scan(&meta); err != nil || meta {
				t.Errorf("a refused upgrade changed the store (quarry_meta %v, %v)", meta, err)
			}
		})
	}
}
