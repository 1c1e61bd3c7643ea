package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/internal/pgtest"
	"github.com/quarry-rag/quarry/store"
)

// fencedStore is a store with two tenants' documents in collection "a" and
// a third document in collection "b".
func fencedStore(t *testing.T) (*Backend, int) {
	t.Helper()
	ctx := context.Background()
	b, err := Open(ctx, pgtest.FreshDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if !b.fence {
		t.Fatal("the fence is not ready on a store its owner opened")
	}
	s := store.New(b)
	schema, err := document.NewSchema(document.Field{Name: "tenant", Type: document.TypeString, Required: true, Filterable: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		c, err := s.CreateCollection(ctx, store.CollectionConfig{Name: name, Model: testModel, Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		docs := tenantDocs(name)
		if err := c.Upsert(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	ci, err := b.info(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	return b, ci.id
}

// TestFenceHoldsWithoutTheParser runs, inside the fence, statements that
// a parser defect could let through, as the fragment role would meet them:
// the database itself keeps them to the collection and the tenant, from
// server functions and files, and from changing anything that outlives
// the statement.
func TestFenceHoldsWithoutTheParser(t *testing.T) {
	b, cid := fencedStore(t)
	ctx := context.Background()
	scope := filter.And(filter.Eq("tenant", "acme"), filter.NewRaw(Dialect, "true"))
	w := clause{fenced: true, cid: cid, f: scope}
	run := func(sql string) (string, error) {
		var out string
		err := b.read(ctx, w, func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, sql).Scan(&out)
		})
		return out, err
	}
	// Rows: only the tenant's, only the collection's.
	got, err := run(`SELECT string_agg(content, ' | ' ORDER BY id) FROM quarry_documents`)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got, "globex") || strings.Contains(got, "collection b") || !strings.Contains(got, "acme") {
		t.Errorf("a statement under the fence read %q", got)
	}
	for _, sql := range []string{
		`SELECT pg_read_file('/etc/hostname')`,
		`SELECT lo_import('/etc/hostname')::text`,
		`SELECT count(*)::text FROM quarry_fragment_scope, quarry_collections`,
		`SELECT count(*)::text FROM quarry_sources`,
		`SELECT count(*)::text FROM pg_authid`,
		`SELECT set_config('role', 'postgres', false) || (SELECT count(*) FROM pg_authid)`,
		`DELETE FROM quarry_documents RETURNING id`,
		`INSERT INTO quarry_fragment_scope VALUES (pg_backend_pid(), 0, '{}', NULL, NULL) RETURNING 'x'`,
	} {
		if out, err := run(sql); err == nil {
			t.Errorf("%s ran under the fence: %q", sql, out)
		}
	}
	// A role switch made inside the statement changes nothing the
	// statement was planned and checked with: row-level security still
	// holds it to the tenant.
	got, err = run(`SELECT set_config('role', 'postgres', false) || ':' || (SELECT count(*) FROM quarry_documents)`)
	if err != nil || !strings.HasSuffix(got, ":2") {
		t.Errorf("after a role switch inside the statement: %q, %v (want the tenant's 2 rows)", got, err)
	}
	// A session setting, a large object: gone with the transaction.
	for _, sql := range []string{
		`SELECT set_config('search_path', 'pg_catalog', false)`,
		`SELECT lo_from_bytea(0, 'x')::text`,
	} {
		_, _ = run(sql)
	}
	for range 3 { // every pooled connection answers as before
		var n int
		if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM quarry_documents`).Scan(&n); err != nil || n != 5 {
			t.Fatalf("after the fence: %d rows, %v", n, err)
		}
	}
	var objects int
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_largeobject_metadata`).Scan(&objects); err != nil || objects != 0 {
		t.Errorf("large objects left: %d (%v)", objects, err)
	}
	// A sleep is cut by the fence's timeout and reported as the request's
	// fault.
	start := time.Now()
	_, err = run(`SELECT pg_sleep(30)::text`)
	if !errors.Is(err, store.ErrInvalidRequest) || time.Since(start) > 10*time.Second {
		t.Errorf("pg_sleep(30) under the fence: %v after %s", err, time.Since(start))
	}
}

// TestFencedDelete: a delete with a raw fragment removes what it selects
// inside the tenant's scope and nothing else, and a fragment that fails
// deletes nothing.
func TestFencedDelete(t *testing.T) {
	b, _ := fencedStore(t)
	ctx := context.Background()
	s := store.New(b)
	c, err := s.Collection(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	f := filter.And(filter.Eq("tenant", "acme"), filter.NewRaw(Dialect, "content LIKE '%one%' OR true"))
	n, err := c.Delete(ctx, f)
	if err != nil || n != 2 {
		t.Fatalf("fenced delete removed %d (%v), want the tenant's 2", n, err)
	}
	if left, _ := c.Count(ctx, nil); left != 2 {
		t.Fatalf("%d documents left in a, want globex's 2", left)
	}
	if _, err := c.Delete(ctx, filter.And(filter.Eq("tenant", "globex"), filter.NewRaw(Dialect, "1/0 = 1"))); err == nil {
		t.Error("a failing fragment deleted")
	}
	if left, _ := c.Count(ctx, nil); left != 2 {
		t.Fatalf("%d documents left in a after a failed delete, want 2", left)
	}
}

var testModel = embed.ModelInfo{Provider: "test", Model: "t", Dimension: 3}

// tenantDocs are collection a's four documents, two per tenant, or b's one.
func tenantDocs(coll string) []*document.Document {
	doc := func(id, content, tenant string) *document.Document {
		return &document.Document{ID: id, Content: content, SourceType: "manual", SourceName: tenant + ".md",
			Metadata: map[string]any{"tenant": tenant}, Embedding: []float32{1, 0, 0}}
	}
	if coll == "b" {
		return []*document.Document{doc("b1", "collection b of acme", "acme")}
	}
	return []*document.Document{doc("a1", "acme one", "acme"), doc("a2", "acme two", "acme"),
		doc("g1", "globex one", "globex"), doc("g2", "globex two", "globex")}
}
