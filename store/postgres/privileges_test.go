package postgres_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/postgres"
	"github.com/quarry-rag/quarry/store/storetest"
)

// TestRuntimeRole: the grants RuntimeGrants prints let a role with no
// other rights run Quarry on a store its owner set up, raw fragments
// fenced included, and the audit finds nothing in excess on it while it
// names the owner's superuser.
func TestRuntimeRole(t *testing.T) {
	ctx := context.Background()
	dsn := freshDSN(t)
	owner, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	p, err := owner.Privileges(ctx)
	if err != nil || !p.Fragments || len(p.Excess) == 0 || !strings.Contains(p.Excess[0], "SUPERUSER") {
		t.Fatalf("the superuser's audit: %+v %v", p, err)
	}
	schema, err := document.NewSchema(document.Field{Name: "tenant", Type: document.TypeString, Required: true, Filterable: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.New(owner).CreateCollection(ctx, store.CollectionConfig{Name: "kb", Schema: schema, Model: storetest.Model(2)}); err != nil {
		t.Fatal(err)
	}
	role := fmt.Sprintf("quarry_rt_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE ROLE `+role+` LOGIN`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), dsn)
		if err == nil {
			c.Exec(context.Background(), `DROP OWNED BY `+role)
			c.Exec(context.Background(), `DROP ROLE `+role)
			c.Close(context.Background())
		}
	})
	grants, err := owner.RuntimeGrants(ctx, role)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range grants {
		if _, err := conn.Exec(ctx, g); err != nil {
			t.Fatalf("%s: %v", g, err)
		}
	}
	u, _ := url.Parse(dsn)
	u.User = url.User(role)
	rt, err := postgres.Open(ctx, u.String())
	if err != nil {
		t.Fatalf("the run-time role cannot open the store: %v", err)
	}
	defer rt.Close()
	p, err = rt.Privileges(ctx)
	if err != nil || !p.Fragments || len(p.Excess) != 0 {
		t.Fatalf("the run-time role's audit: %+v %v", p, err)
	}
	c, err := store.New(rt).Collection(ctx, "kb")
	if err != nil {
		t.Fatal(err)
	}
	var docs []*document.Document
	for _, tenant := range []string{"acme", "globex"} {
		docs = append(docs, &document.Document{ID: tenant, Content: tenant + " refunds", SourceType: "manual", SourceName: tenant,
			Metadata: map[string]any{"tenant": tenant}, Embedding: []float32{1, 0}})
	}
	if err := c.Upsert(ctx, docs); err != nil {
		t.Fatalf("the run-time role cannot write: %v", err)
	}
	hits, err := c.Search(ctx, store.SearchRequest{Query: "refunds", Mode: store.ModeKeyword, TopK: 10,
		Filter: filter.Merge(filter.Eq("tenant", "acme"), filter.NewRaw(postgres.Dialect, "content like '%refund%' or true"))})
	if err != nil || len(hits) != 1 || hits[0].Doc.ID != "acme" {
		t.Fatalf("a fenced search as the run-time role: %v %v", hits, err)
	}
}
