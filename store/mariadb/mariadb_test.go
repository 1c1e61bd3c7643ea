package mariadb_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/internal/mariadbtest"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/mariadb"
	"github.com/quarry-rag/quarry/store/storetest"
)

// serverURL is the test server's URL, or a skip saying how to get one.
func serverURL(t *testing.T) string { return mariadbtest.URL(t) }

// fresh creates an empty database on the server and returns its URL.
func fresh(t *testing.T, base string) string { return mariadbtest.Fresh(t, base) }

// dbSeq numbers the users tests make.
var dbSeq atomic.Int64

// freshB is fresh for tests and benchmarks alike.
func freshB(t testing.TB, base string) string { return mariadbtest.Fresh(t, base) }

func TestStoreConformance(t *testing.T) {
	base := serverURL(t)
	storetest.Run(t, func(t *testing.T) *store.Store {
		s, err := store.Open(context.Background(), fresh(t, base))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestRuntimeNeedsOnlyDML: once the tables and a collection exist, a user
// granted only SELECT, INSERT, UPDATE and DELETE opens the store, writes,
// searches, deletes and keeps threads; creating a collection (a table)
// is refused with a message that says what it needs.
func TestRuntimeNeedsOnlyDML(t *testing.T) {
	ctx := context.Background()
	u := fresh(t, serverURL(t))
	admin, err := store.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateCollection(ctx, store.CollectionConfig{Name: "kb", Model: storetest.Model(2)}); err != nil {
		t.Fatal(err)
	}
	admin.Close()
	dsn, _ := mariadb.DSN(u)
	cfg, _ := mysql.ParseDSN(dsn)
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	user := fmt.Sprintf("quarry_rt_%d", dbSeq.Add(1))
	for _, stmt := range []string{
		"DROP USER IF EXISTS '" + user + "'@'%'",
		"CREATE USER '" + user + "'@'%' IDENTIFIED BY 'runtime-pw'",
		"GRANT SELECT, INSERT, UPDATE, DELETE ON " + cfg.DBName + ".* TO '" + user + "'@'%'",
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { db.Exec("DROP USER IF EXISTS '" + user + "'@'%'") })
	rt, err := store.Open(ctx, "mariadb://"+user+":runtime-pw@"+cfg.Addr+"/"+cfg.DBName)
	if err != nil {
		t.Fatalf("the runtime user cannot open the store: %v", err)
	}
	defer rt.Close()
	c, err := rt.Collection(ctx, "kb")
	if err != nil {
		t.Fatal(err)
	}
	d := document.New("Refunds are paid within fourteen days.")
	d.ID, d.Embedding = "d1", []float32{1, 0}
	src := document.Source{Type: document.SourceFile, Name: "refunds.md"}
	d.SourceType, d.SourceName = src.Type, src.Name
	if err := c.ReplaceSources(ctx, []store.SourceUpdate{{Source: src, Hash: "h1", Docs: []*document.Document{d}}}); err != nil {
		t.Fatalf("write: %v", err)
	}
	if hits, err := c.Search(ctx, store.SearchRequest{Query: "refunds", Embedding: []float32{1, 0}}); err != nil || len(hits) != 1 {
		t.Fatalf("search: %v %v", hits, err)
	}
	ts, _ := rt.Threads()
	if err := ts.AppendTurns(ctx, "t1", []store.Turn{{Role: "user", Content: "hi"}}); err != nil {
		t.Errorf("threads: %v", err)
	}
	if n, err := c.Delete(ctx, filter.Eq("sourceName", "refunds.md")); err != nil || n != 1 {
		t.Errorf("delete: %d %v", n, err)
	}
	if _, err := rt.CreateCollection(ctx, store.CollectionConfig{Name: "more", Model: storetest.Model(2)}); err == nil || !strings.Contains(err.Error(), "CREATE") {
		t.Errorf("a runtime user creating a collection: %v", err)
	}
	if _, err := rt.Collection(ctx, "more"); err == nil {
		t.Error("a refused create left a collection behind")
	}
}

// TestTwoProcessesOneDatabase: a collection one backend drops or makes is
// seen by another on the same database at once.
func TestTwoProcessesOneDatabase(t *testing.T) {
	ctx := context.Background()
	u := fresh(t, serverURL(t))
	a, err := store.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := store.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := a.CreateCollection(ctx, store.CollectionConfig{Name: "kb", Model: storetest.Model(2)}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Collection(ctx, "kb"); err != nil {
		t.Fatalf("b does not see a's collection: %v", err)
	}
	if err := a.DropCollection(ctx, "kb"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Collection(ctx, "kb"); !errors.Is(err, store.ErrCollectionNotFound) {
		t.Errorf("b still sees the dropped collection: %v", err)
	}
	if _, err := a.CreateCollection(ctx, store.CollectionConfig{Name: "kb", Model: storetest.Model(3)}); err != nil {
		t.Fatal(err)
	}
	c, err := b.Collection(ctx, "kb")
	if err != nil || c.Config().Model.Dimension != 3 {
		t.Errorf("b sees the new collection as %+v, %v", c.Config(), err)
	}
}

// TestEmbeddingCache: vectors round-trip bit for bit by model and key, and
// a model of another dimension misses.
func TestEmbeddingCache(t *testing.T) {
	ctx := context.Background()
	b, err := mariadb.Open(ctx, fresh(t, serverURL(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c := b.EmbeddingCache()
	m := storetest.Model(3)
	want := map[string][]float32{"a": {1, -0.5, float32(math.Pi)}, "b": {0, math.SmallestNonzeroFloat32, math.MaxFloat32}}
	if err := c.Put(ctx, m, want); err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(ctx, m, []string{"a", "b", "missing"})
	if err != nil || len(got) != 2 {
		t.Fatalf("get: %v %v", got, err)
	}
	for k, v := range want {
		if !slices.Equal(got[k], v) {
			t.Errorf("%s: %v, want %v", k, got[k], v)
		}
	}
	if other, _ := c.Get(ctx, storetest.Model(4), []string{"a"}); len(other) != 0 {
		t.Errorf("another model hit: %v", other)
	}
}
