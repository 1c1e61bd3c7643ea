package mariadb_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/internal/mariadbtest"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/mariadb"
)

// tenants opens a fresh store with a collection of two tenants' documents.
func tenants(t *testing.T) (*mariadb.Backend, *store.Collection) {
	t.Helper()
	ctx := context.Background()
	b, err := mariadb.Open(ctx, fresh(t, serverURL(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	schema, err := document.NewSchema(document.Field{Name: "tenant", Type: document.TypeString, Required: true, Filterable: true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := store.New(b).CreateCollection(ctx, store.CollectionConfig{Name: "a", Schema: schema,
		Model: embed.ModelInfo{Provider: "test", Model: "t", Dimension: 3}})
	if err != nil {
		t.Fatal(err)
	}
	var docs []*document.Document
	for _, tenant := range []string{"acme", "globex"} {
		for _, n := range []string{"one", "two"} {
			docs = append(docs, &document.Document{ID: tenant + "-" + n, Content: tenant + " " + n + " refund secret",
				SourceType: "manual", SourceName: tenant + ".md", Metadata: map[string]any{"tenant": tenant}, Embedding: []float32{1, 0, 0}})
		}
	}
	if err := c.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	return b, c
}

// TestFencedFragments: a scoped fragment narrows in every mode, counts and
// deletes inside the tenant, and one that is not an expression over the
// row is refused before any SQL runs.
func TestFencedFragments(t *testing.T) {
	_, c := tenants(t)
	ctx := context.Background()
	scope := filter.Eq("tenant", "acme")
	f := filter.Merge(scope, filter.NewRaw(mariadb.Dialect, "content LIKE '%one%' OR TRUE"))
	for _, mode := range []store.Mode{store.ModeKeyword, store.ModeVector, store.ModeHybrid} {
		hits, err := c.Search(ctx, store.SearchRequest{Query: "refund", Embedding: []float32{1, 0, 0}, Mode: mode, Filter: f, TopK: 10})
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		for _, h := range hits {
			if !strings.HasPrefix(h.Doc.ID, "acme-") {
				t.Errorf("%s: a fragment under the acme scope returned %s", mode, h.Doc.ID)
			}
		}
		if len(hits) != 2 {
			t.Errorf("%s: %d hits, want acme's 2", mode, len(hits))
		}
	}
	if n, err := c.Count(ctx, f); err != nil || n != 2 {
		t.Errorf("count: %d, %v", n, err)
	}
	for _, frag := range []string{"(SELECT COUNT(*) FROM quarry_collections) > 0", "sleep(3) = 0", "1=1) OR (1=1"} {
		if _, err := c.Search(ctx, store.SearchRequest{Query: "refund", Mode: store.ModeKeyword, TopK: 10,
			Filter: filter.Merge(scope, filter.NewRaw(mariadb.Dialect, frag))}); err == nil || !strings.Contains(err.Error(), "mariadb raw fragment") {
			t.Errorf("%q: %v", frag, err)
		}
	}
	n, err := c.Delete(ctx, filter.Merge(scope, filter.NewRaw(mariadb.Dialect, "content LIKE '%one%'")))
	if err != nil || n != 1 {
		t.Fatalf("fenced delete removed %d (%v), want 1", n, err)
	}
	if left, _ := c.Count(ctx, nil); left != 3 {
		t.Errorf("%d documents left, want 3", left)
	}
}

// TestFenceHoldsWithoutTheParser runs, as the fragment account, statements
// a parser defect could let through: the account reads only the
// collections' tables, no files, writes nothing, and a sleep is cut.
func TestFenceHoldsWithoutTheParser(t *testing.T) {
	b, _ := tenants(t)
	ctx := context.Background()
	got, err := mariadb.FencedQuery(ctx, b, "SELECT CAST(COUNT(*) AS CHAR) FROM `quarry_c_a`")
	if err != nil || got != "4" {
		t.Fatalf("the fragment account cannot read its collection: %q %v", got, err)
	}
	for _, q := range []string{
		"SELECT CAST(COUNT(*) AS CHAR) FROM quarry_collections",
		"SELECT CAST(COUNT(*) AS CHAR) FROM quarry_fragment_account",
		"SELECT CAST(COUNT(*) AS CHAR) FROM mysql.user",
		"SELECT CAST(COUNT(*) AS CHAR) FROM quarry_sources",
	} {
		if out, err := mariadb.FencedQuery(ctx, b, q); err == nil {
			t.Errorf("%s ran as the fragment account: %q", q, out)
		}
	}
	if out, err := mariadb.FencedQuery(ctx, b, "SELECT LOAD_FILE('/etc/hostname')"); err != nil || out != "" {
		t.Errorf("LOAD_FILE as the fragment account: %q %v", out, err)
	}
	start := time.Now()
	_, err = mariadb.FencedQuery(ctx, b, "SELECT CAST(SLEEP(30) AS CHAR)")
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("SLEEP(30) ran %s under the fence", d)
	}
	_ = errors.Is(err, store.ErrInvalidRequest) // SLEEP ends early without an error: the bound is the time
}

// TestFragmentUserAgrees: the test helper drops the account the store
// makes.
func TestFragmentUserAgrees(t *testing.T) {
	if got, want := mariadbtest.FragmentUser("quarry_test_1_2"), mariadb.FragmentUser("quarry_test_1_2"); got != want {
		t.Errorf("mariadbtest.FragmentUser = %s, the store's %s", got, want)
	}
}
