package retrieve_test

import (
	"context"
	"slices"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed/hash"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/hierarchy"
	"github.com/quarry-rag/quarry/retrieve"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/memory"
)

func TestGraph(t *testing.T) {
	ctx := context.Background()
	schema, err := document.ParseSchema([]byte(`{"fields":[{"name":"tenant","type":"string","required":true,"filterable":true}]}`))
	if err != nil {
		t.Fatal(err)
	}
	emb, err := hash.New(hash.Config{})
	if err != nil {
		t.Fatal(err)
	}
	s := store.New(memory.New())
	defer s.Close()
	coll, err := s.CreateCollection(ctx, store.CollectionConfig{Name: "kb", Schema: schema, Model: emb.Model()})
	if err != nil {
		t.Fatal(err)
	}
	chunk := func(name string, i int, content, tenant string, headings ...string) *document.Document {
		d := document.New(content)
		d.SourceType, d.SourceName = document.SourceFile, name
		d.ID = document.ChunkID(d.SourceType, name, i, content)
		d.Metadata = map[string]any{"tenant": tenant}
		d.Provenance = document.Provenance{Source: name, HeadingPath: headings, ChunkIndex: i}
		return d
	}
	docs := []*document.Document{
		chunk("guides/billing/refunds.md", 0, "Refunds are paid within fourteen days.", "acme", "Refund Policy"),
		chunk("guides/billing/refunds.md", 1, "Gift cards are never refunded in cash.", "acme", "Refund Policy", "Gift Cards"),
		chunk("guides/shipping/parcels.md", 0, "Parcels ship within two days.", "acme", "Shipping"),
		chunk("guides/shipping/globex.md", 0, "Globex parcels ship by drone.", "globex", "Shipping"),
		chunk("api/faq.md", 0, "Gift cards gift cards gift cards: buy gift cards here.", "acme", "Shop"),
	}
	for _, d := range docs {
		vecs, err := emb.Embed(ctx, []string{d.Content})
		if err != nil {
			t.Fatal(err)
		}
		d.Embedding = vecs[0]
	}
	if err := coll.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	h, err := hierarchy.Open(coll)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Build(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.UpsertLink(ctx, "billing", "shipping", store.LinkCrossRef, 1, "refunds travel back by parcel"); err != nil {
		t.Fatal(err)
	}
	g := &retrieve.Graph{Collection: &retrieve.Collection{Collection: coll, Mode: store.ModeKeyword}, Hierarchy: h}
	for _, tc := range []struct {
		name  string
		query string
		scope filter.Expr
		want  []string
	}{
		{"trigger, then linked nodes", "Gift", nil, []string{"Gift cards are never refunded in cash.", "Refunds are paid within fourteen days.",
			"Globex parcels ship by drone.", "Parcels ship within two days."}},
		{"linked chunks stay in scope", "Gift", filter.Eq("tenant", "acme"), []string{"Gift cards are never refunded in cash.", "Refunds are paid within fourteen days.",
			"Parcels ship within two days."}},
		{"no trigger: plain search", "buy", nil, []string{"Gift cards gift cards gift cards: buy gift cards here."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := g.Retrieve(ctx, retrieve.Request{Query: tc.query, Scope: tc.scope, TopK: 2})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(contents(got), tc.want) {
				t.Errorf("got  %q\nwant %q", contents(got), tc.want)
			}
		})
	}
}
