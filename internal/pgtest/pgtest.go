// Package pgtest gives tests that need PostgreSQL a schema of their own on
// the server QUARRY_TEST_PG_DSN names, so tests never share tables (nor
// leave any in public, where every other test's search path would find
// them).
package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DSNEnv names the PostgreSQL server the integration tests use.
const DSNEnv = "QUARRY_TEST_PG_DSN"

var seq atomic.Int64

// FreshDSN creates an empty schema for one test, dropped when it ends, and
// returns a DSN whose search_path points at it (pgvector stays in public).
// Without DSNEnv the test is skipped, saying what would run it.
func FreshDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(DSNEnv)
	if dsn == "" {
		t.Skipf("%s is not set: PostgreSQL integration tests skipped (.ci/run starts a server with pgvector and sets it; scripts/pg-pgvector.sh does it by hand)", DSNEnv)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to %s: %v", DSNEnv, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS vector SCHEMA public`); err != nil {
		t.Fatal(err)
	}
	schema := fmt.Sprintf("quarry_test_%d_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9, seq.Add(1))
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), dsn)
		if err == nil {
			c.Exec(context.Background(), `DROP SCHEMA `+schema+` CASCADE`)
			c.Close(context.Background())
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema+",public")
	u.RawQuery = q.Encode()
	return u.String()
}
