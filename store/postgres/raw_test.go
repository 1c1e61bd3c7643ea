package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/postgres"
)

// TestRawFragmentCannotEscape runs the fragments that used to reach every
// tenant and collection against the real server: each is refused before
// any SQL runs, in every mode and in delete, and a well-formed fragment
// under a tenant scope only narrows it.
func TestRawFragmentCannotEscape(t *testing.T) {
	ctx := context.Background()
	s, err := store.Open(ctx, freshDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	schema, err := document.NewSchema(document.Field{Name: "tenant", Type: document.TypeString, Required: true, Filterable: true})
	if err != nil {
		t.Fatal(err)
	}
	model := embed.ModelInfo{Provider: "test", Model: "t", Dimension: 3}
	var colls []*store.Collection
	for _, name := range []string{"a", "b"} {
		c, err := s.CreateCollection(ctx, store.CollectionConfig{Name: name, Schema: schema, Model: model})
		if err != nil {
			t.Fatal(err)
		}
		var docs []*document.Document
		for _, tenant := range []string{"acme", "globex"} {
			docs = append(docs, &document.Document{ID: name + "-" + tenant, Content: "shared secret words for " + tenant,
				SourceType: "manual", SourceName: tenant + ".md", Metadata: map[string]any{"tenant": tenant}, Embedding: []float32{1, 0, 0}})
		}
		if err := c.Upsert(ctx, docs); err != nil {
			t.Fatal(err)
		}
		colls = append(colls, c)
	}
	scope := filter.Eq("tenant", "acme")
	for _, frag := range []string{"true) OR (true", "1=1)) OR ((1=1", "true; DELETE FROM quarry_documents", "true -- x", "source_name = $1"} {
		f := filter.Merge(scope, filter.NewRaw(postgres.Dialect, frag))
		for _, mode := range []store.Mode{store.ModeKeyword, store.ModeVector, store.ModeHybrid} {
			_, err := colls[0].Search(ctx, store.SearchRequest{Query: "secret", Embedding: []float32{1, 0, 0}, Mode: mode, Filter: f, TopK: 10})
			if err == nil || !strings.Contains(err.Error(), "postgres raw fragment") {
				t.Errorf("%s search with %q: %v", mode, frag, err)
			}
		}
		if n, err := colls[0].Delete(ctx, f); err == nil {
			t.Errorf("delete with %q removed %d rows", frag, n)
		}
	}
	for _, c := range colls {
		if n, err := c.Count(ctx, nil); err != nil || n != 2 {
			t.Fatalf("collection %s holds %d documents after the probes (%v), want 2", c.Name(), n, err)
		}
	}
	// A fragment that is one expression narrows inside the scope.
	f := filter.Merge(scope, filter.NewRaw(postgres.Dialect, "source_name LIKE '%.md' OR true"))
	hits, err := colls[0].Search(ctx, store.SearchRequest{Query: "secret", Mode: store.ModeKeyword, Filter: f, TopK: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].Doc.ID != "a-acme" {
		t.Fatalf("a scoped raw OR reached past the scope: %d hits", len(hits))
	}
	n, err := colls[0].Delete(ctx, f)
	if err != nil || n != 1 {
		t.Fatalf("scoped raw delete removed %d (%v), want 1", n, err)
	}
	if n, _ := colls[1].Count(ctx, nil); n != 2 {
		t.Fatalf("a delete in collection a removed rows of collection b: %d left", n)
	}
}
