package postgres_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/postgres"
	"github.com/quarry-rag/quarry/store/storetest"
)

// DSNEnv names the PostgreSQL server the integration tests use.
const DSNEnv = "QUARRY_TEST_PG_DSN"

var schemaSeq atomic.Int64

// freshDSN creates an empty schema for one test and returns a DSN whose
// search_path points at it (pgvector stays in public).
func freshDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv(DSNEnv)
	if dsn == "" {
		t.Skipf("%s is not set: PostgreSQL integration tests skipped (.ci/run starts a server and sets it)", DSNEnv)
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
	schema := fmt.Sprintf("quarry_test_%d_%d", time.Now().UnixNano()%1e9, schemaSeq.Add(1))
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

func TestStoreConformance(t *testing.T) {
	freshDSN(t) // skip early without a server
	storetest.Run(t, func(t *testing.T) *store.Store {
		s, err := store.Open(context.Background(), freshDSN(t))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestDimensionLimit(t *testing.T) {
	s, err := store.Open(context.Background(), freshDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.CreateCollection(context.Background(), store.CollectionConfig{Name: "big", Model: storetest.Model(postgres.MaxHNSWDimension + 1)})
	if err == nil {
		t.Fatal("a collection above the HNSW dimension limit was created")
	}
}
