package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/postgres"
)

func batchOf(n int, prefix string) []*document.Document {
	docs := make([]*document.Document, n)
	for i := range docs {
		docs[i] = docAt(prefix+string(rune('a'+i%26))+strings.Repeat("x", i/26), "text", nil)
	}
	return docs
}

// TestWithTx writes inside a caller's transaction: each batch is a
// savepoint, a failed one rolls back alone, and nothing is visible outside
// until the caller commits.
func TestWithTx(t *testing.T) {
	ctx := context.Background()
	dsn := freshDSN(t)
	pg, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	outside := store.New(pg)
	c, err := outside.CreateCollection(ctx, store.CollectionConfig{Name: "tx", Model: embed.ModelInfo{Provider: "p", Model: "m", Dimension: 3}})
	if err != nil {
		t.Fatal(err)
	}
	base := 0
	for i, commit := range []bool{true, false} {
		tx, err := pg.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck // a no-op once committed
		p := string(rune('1' + i))
		in, err := store.New(pg.WithTx(tx)).Collection(ctx, "tx")
		if err != nil {
			t.Fatal(err)
		}
		// Both sides of the COPY threshold, then a batch the server refuses.
		if err := in.Upsert(ctx, batchOf(3, p+"s")); err != nil {
			t.Fatal(err)
		}
		if err := in.Upsert(ctx, batchOf(70, p+"c")); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE quarry_stage (x int)`); err != nil {
			t.Fatal(err)
		}
		// The staging table name is taken: this batch fails inside its
		// savepoint, and the transaction goes on.
		if err := in.Upsert(ctx, batchOf(65, p+"f")); err == nil {
			t.Fatal("a batch whose staging failed reported success")
		}
		if _, err := tx.Exec(ctx, `DROP TABLE quarry_stage`); err != nil {
			t.Fatalf("the transaction did not survive a failed batch: %v", err)
		}
		if n, err := in.Count(ctx, nil); err != nil || n != base+73 {
			t.Fatalf("inside: %d (%v), want %d", n, err, base+73)
		}
		if n, _ := c.Count(ctx, nil); n != base {
			t.Fatalf("outside before commit: %d, want %d", n, base)
		}
		if commit {
			err = tx.Commit(ctx)
		} else {
			err = tx.Rollback(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		if commit {
			base += 73
		}
		if n, _ := c.Count(ctx, nil); n != base {
			t.Fatalf("after commit=%v: %d, want %d", commit, n, base)
		}
	}
}

// TestSchemaChecks: a store of another schema version, and a table of
// Quarry's name that is not Quarry's, are refused with what to do.
func TestSchemaChecks(t *testing.T) {
	ctx := context.Background()
	exec := func(t *testing.T, dsn, sql string) {
		t.Helper()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, sql, want string
	}{
		{"newer", `UPDATE quarry_meta SET value = '99' WHERE key = 'schema_version'`, "upgrade Quarry"},
		{"older", `UPDATE quarry_meta SET value = '1' WHERE key = 'schema_version'`, "older than this Quarry's"},
		{"foreign", `DELETE FROM quarry_meta`, "not created by Quarry's setup"},
		{"incompatible", `ALTER TABLE quarry_documents DROP COLUMN provenance`, "column provenance should be jsonb (no such column)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dsn := freshDSN(t)
			pg, err := postgres.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			pg.Close()
			exec(t, dsn, tt.sql)
			_, err = postgres.Open(ctx, dsn)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("open: %v, want an error saying %q", err, tt.want)
			}
		})
	}
	t.Run("someone else's table", func(t *testing.T) {
		dsn := freshDSN(t)
		exec(t, dsn, `CREATE TABLE quarry_documents (id text PRIMARY KEY, body text)`)
		_, err := postgres.Open(ctx, dsn)
		if err == nil {
			t.Fatal("opened over a foreign quarry_documents table")
		}
		if !strings.Contains(err.Error(), "quarry_documents") {
			t.Errorf("error does not name the table: %v", err)
		}
	})
}
