package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
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

// TestSelectiveFilterUsesIndex forces the HNSW index and checks that a
// filter matching a handful of rows still returns all of them: iterative
// index scans keep walking the graph until enough rows pass.
func TestSelectiveFilterUsesIndex(t *testing.T) {
	dsn := freshDSN(t)
	ctx := context.Background()
	s, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := s.CreateCollection(ctx, store.CollectionConfig{Name: "sel", Schema: storetest.Schema(), Model: storetest.Model(8)})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	var docs []*document.Document
	for i := range 3000 {
		d := document.New(fmt.Sprintf("doc %d", i))
		d.ID = fmt.Sprintf("d%04d", i)
		d.Embedding = make([]float32, 8)
		for j := range d.Embedding {
			d.Embedding[j] = r.Float32() - 0.5
		}
		tenant := "common"
		if i%600 == 7 {
			tenant = "rare"
		}
		d.Metadata = map[string]any{"tenant": tenant}
		docs = append(docs, d)
	}
	if err := c.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// The query shape Quarry sends must be able to use the partial
	// expression index (the planner may still prefer a scan on small data).
	if _, err := conn.Exec(ctx, `ANALYZE quarry_documents; SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off`); err != nil {
		t.Fatal(err)
	}
	var plan string
	rows, err := conn.Query(ctx, `EXPLAIN SELECT id FROM quarry_documents WHERE collection_id = 1 ORDER BY embedding::vector(8) <=> $1::vector(8) LIMIT 10`, "[1,0,0,0,0,0,0,0]")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var line string
		rows.Scan(&line)
		plan += line + "\n"
	}
	if !strings.Contains(plan, "quarry_hnsw_1") {
		t.Errorf("the vector query cannot use the collection's HNSW index:\n%s", plan)
	}
	hits, err := c.Search(ctx, store.SearchRequest{Embedding: docs[0].Embedding, Filter: filter.Eq("tenant", "rare"), TopK: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 5 {
		t.Errorf("a filter matching 5 rows returned %d", len(hits))
	}
}
