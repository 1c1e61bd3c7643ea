package quarry_test

import (
	"context"
	"errors"
	"testing"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/quarrytest"
	"github.com/quarry-rag/quarry/store"
)

// TestMayIngestPaths is the rule every surface asks before it ingests the
// server's own files.
func TestMayIngestPaths(t *testing.T) {
	for _, tc := range []struct {
		name string
		sc   quarry.Scope
		ok   bool
	}{
		{"developer", quarry.Developer(), true},
		{"admin key", quarry.Scope{Collections: []string{"kb"}}, true},
		{"read-only", quarry.Scope{ReadOnly: true}, false},
		{"filtered", quarry.Scope{Filter: filter.Eq("tenant", "acme")}, false},
		{"below admin", quarry.Scope{NoServerPaths: true}, false},
	} {
		err := tc.sc.MayIngestPaths()
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, quarry.ErrForbidden)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestCreateCollection: the one rule for creating a collection, which the
// HTTP API's create endpoint calls.
func TestCreateCollection(t *testing.T) {
	ctx := context.Background()
	kb := quarrytest.NewKB(t)
	m := kb.Embedder().Model()
	info, err := kb.CreateCollection(ctx, quarry.Scope{Collections: []string{"kb"}}, quarry.NewCollectionRequest{Name: "kb", Embedder: m.Provider + "/" + m.Model})
	if err != nil || info.Name != "kb" || info.Documents != 0 || info.Model != m {
		t.Fatalf("create: %+v %v", info, err)
	}
	for name, tc := range map[string]struct {
		sc   quarry.Scope
		req  quarry.NewCollectionRequest
		want error
	}{
		"read-only":          {quarry.Scope{ReadOnly: true}, quarry.NewCollectionRequest{Name: "a"}, quarry.ErrForbidden},
		"held to a filter":   {quarry.Scope{Filter: filter.Eq("tenant", "acme")}, quarry.NewCollectionRequest{Name: "a"}, quarry.ErrForbidden},
		"limited to profile": {quarry.Scope{Profiles: []string{"p"}}, quarry.NewCollectionRequest{Name: "a"}, quarry.ErrForbidden},
		"another collection": {quarry.Scope{Collections: []string{"b"}}, quarry.NewCollectionRequest{Name: "a"}, quarry.ErrForbidden},
		"another embedder":   {quarry.Developer(), quarry.NewCollectionRequest{Name: "a", Embedder: "openai/text-embedding-3-small"}, quarry.ErrInvalid},
		"a bad name":         {quarry.Developer(), quarry.NewCollectionRequest{Name: "A b"}, quarry.ErrInvalid},
		"taken":              {quarry.Developer(), quarry.NewCollectionRequest{Name: "kb"}, store.ErrCollectionExists},
	} {
		if _, err := kb.CreateCollection(ctx, tc.sc, tc.req); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
}

// TestScopedCallerMakesNoCollection: a caller held to a filter adds to a
// collection that exists but cannot make one by adding to it, which every
// caller would then see.
func TestScopedCallerMakesNoCollection(t *testing.T) {
	ctx := context.Background()
	kb := quarrytest.NewKB(t)
	sc := quarry.Scope{Filter: filter.Eq("sourceName", "x")}
	doc := []quarry.NewDocument{{Text: "a tenant's text", Source: "x"}}
	if _, err := kb.AddDocuments(ctx, sc, "fresh", doc); !errors.Is(err, quarry.ErrForbidden) {
		t.Fatalf("a filtered caller's add made a collection: %v", err)
	}
	if _, err := kb.PutObjects(ctx, sc, "fresh", []byte(`{"id":"x","title":"T"}`)); !errors.Is(err, quarry.ErrForbidden) {
		t.Fatalf("a filtered caller's objects made a collection: %v", err)
	}
	cs, err := kb.Collections(ctx, quarry.Developer())
	if err != nil || len(cs) != 0 {
		t.Fatalf("collections after the refusals: %v %v", cs, err)
	}
	if _, err := kb.AddDocuments(ctx, quarry.Developer(), "fresh", []quarry.NewDocument{{Text: "the operator's", Source: "y"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := kb.AddDocuments(ctx, sc, "fresh", doc); err != nil {
		t.Fatalf("a filtered caller's add to an existing collection: %v", err)
	}
}

// TestDropCollection: dropping reaches every document of a collection.
func TestDropCollection(t *testing.T) {
	ctx := context.Background()
	kb := quarrytest.NewKB(t)
	if _, err := kb.AddDocuments(ctx, quarry.Developer(), "kb", []quarry.NewDocument{{Text: "x"}}); err != nil {
		t.Fatal(err)
	}
	for name, sc := range map[string]quarry.Scope{
		"read-only":          {ReadOnly: true},
		"filtered":           {Filter: filter.Eq("sourceName", "x")},
		"limited to profile": {Profiles: []string{"p"}},
		"another collection": {Collections: []string{"b"}},
	} {
		if err := kb.DropCollection(ctx, sc, "kb"); !errors.Is(err, quarry.ErrForbidden) {
			t.Errorf("%s: %v, want ErrForbidden", name, err)
		}
	}
	if err := kb.DropCollection(ctx, quarry.Developer(), "kb"); err != nil {
		t.Fatal(err)
	}
	if err := kb.DropCollection(ctx, quarry.Developer(), "kb"); !errors.Is(err, store.ErrCollectionNotFound) {
		t.Errorf("dropping it again: %v", err)
	}
}
