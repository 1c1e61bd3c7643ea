package ingest_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed/hash"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/store"
	_ "github.com/quarry-rag/quarry/store/memory"
)

// countingEmbedder counts embedding calls, to show checks run first.
type countingEmbedder struct {
	*hash.Embedder
	calls int
}

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.calls++
	return c.Embedder.Embed(ctx, texts)
}

func TestAdd(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h, err := hash.New(hash.Config{})
	if err != nil {
		t.Fatal(err)
	}
	emb := &countingEmbedder{Embedder: h}
	schema, err := document.NewSchema(document.Field{Name: "tenant", Type: document.TypeString, Required: true, Filterable: true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.CreateCollection(ctx, store.CollectionConfig{Name: "kb", Schema: schema, Model: h.Model()})
	if err != nil {
		t.Fatal(err)
	}
	doc := func(id, tenant string) *document.Document {
		d := document.New("text of " + id)
		d.ID = id
		if tenant != "" {
			d.Metadata["tenant"] = tenant
		}
		return d
	}
	if err := ingest.Add(ctx, c, emb, []*document.Document{doc("g1", "globex")}, nil); err != nil {
		t.Fatal(err)
	}
	acme := filter.Eq("tenant", "acme")
	for _, tc := range []struct {
		name  string
		docs  []*document.Document
		scope filter.Expr
		is    error
		msg   string
	}{
		{"duplicate ids", []*document.Document{doc("a", "acme"), doc("a", "acme")}, nil, store.ErrInvalidRequest, "share id"},
		{"schema", []*document.Document{doc("a", "")}, nil, store.ErrInvalidRequest, "documents[0]"},
		{"outside the scope", []*document.Document{doc("a", "acme"), doc("b", "globex")}, acme, ingest.ErrOutOfScope, "documents[1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := emb.calls
			err := ingest.Add(ctx, c, emb, tc.docs, tc.scope)
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want %v with %q", err, tc.is, tc.msg)
			}
			if emb.calls != before {
				t.Error("the embedder was called before the checks")
			}
		})
	}
	// Ids live in the scope's id space: another tenant's id neither shows
	// it exists (no error to tell taken from free) nor is replaced.
	added := []*document.Document{doc("a1", "acme"), doc("a2", "acme"), doc("g1", "acme")}
	if err := ingest.Add(ctx, c, emb, added, acme); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Count(ctx, acme); n != 3 {
		t.Fatalf("%d acme documents, want 3", n)
	}
	if got, _ := c.Get(ctx, []string{"g1"}); len(got) != 1 || got[0].Metadata["tenant"] != "globex" {
		t.Fatalf("globex's document changed: %+v", got)
	}
	for _, d := range added {
		if _, id, ok := strings.Cut(d.ID, ":"); !ok || !strings.HasPrefix(d.ID, "s") || id == "" {
			t.Errorf("scoped id %q", d.ID)
		}
	}
	// Writing back a returned id updates that document, not a new one.
	again := doc(added[0].ID, "acme")
	again.Content = "new text"
	if err := ingest.Add(ctx, c, emb, []*document.Document{again}, acme); err != nil || again.ID != added[0].ID {
		t.Fatalf("rewrite %q: %v", again.ID, err)
	}
	if n, _ := c.Count(ctx, acme); n != 3 {
		t.Fatalf("%d acme documents after a rewrite, want 3", n)
	}
	// Globex, scoped the same way, keeps its own ids free of acme's claims.
	globex := filter.Eq("tenant", "globex")
	mine := []*document.Document{doc("a1", "globex")}
	if err := ingest.Add(ctx, c, emb, mine, globex); err != nil {
		t.Fatalf("globex adding the id acme claimed: %v", err)
	}
	if mine[0].ID == added[0].ID {
		t.Fatalf("two scopes share id %q", mine[0].ID)
	}
}
