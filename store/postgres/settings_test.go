package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/postgres"
)

// TestSettingsBeforeTheirTable reads settings of a store set up before
// they existed: none, an unknown collection still named, and inside a
// caller's transaction the missing table does not abort it; the first
// write adds the table.
func TestSettingsBeforeTheirTable(t *testing.T) {
	ctx := context.Background()
	pg, err := postgres.Open(ctx, freshDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	s := store.New(pg)
	c, err := s.CreateCollection(ctx, store.CollectionConfig{Name: "old", Model: embed.ModelInfo{Provider: "p", Model: "m", Dimension: 3}})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := pg.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op once committed
	if _, err := tx.Exec(ctx, `DROP TABLE quarry_collection_settings`); err != nil {
		t.Fatal(err)
	}
	in, err := store.New(pg.WithTx(tx)).Collection(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := in.Setting(ctx, "calibration"); err != nil || v != nil {
		t.Fatalf("a store without the table: %s, %v", v, err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1`); err != nil {
		t.Fatalf("the caller's transaction was aborted: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Setting(ctx, "calibration"); err != nil || v != nil {
		t.Fatalf("without the table: %s, %v", v, err)
	}
	if _, err := s.Collection(ctx, "gone"); !errors.Is(err, store.ErrCollectionNotFound) {
		t.Fatalf("unknown collection: %v", err)
	}
	if _, err := pg.Setting(ctx, "gone", "calibration"); !errors.Is(err, store.ErrCollectionNotFound) {
		t.Errorf("a setting of an unknown collection without the table: %v", err)
	}
	if err := c.PutSetting(ctx, "calibration", json.RawMessage(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Setting(ctx, "calibration"); err != nil || string(v) != `{"a": 1}` {
		t.Errorf("after the first write: %s, %v", v, err)
	}
}
