package storetest

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
)

// testUncollected: documents without a collection live in the reserved
// store.Uncollected, apart from every named collection. The empty name is
// reserved and never stands for it, no other name can take it, an id is
// unique per collection only, and a handle on it reads, searches, counts
// and deletes its documents only.
func testUncollected(t *testing.T, s *store.Store) {
	for _, bad := range []string{"", "_other", "_uncollected2", "_"} {
		_, err := s.CreateCollection(ctx(t), store.CollectionConfig{Name: bad, Model: Model(2)})
		if !errors.Is(err, store.ErrInvalidRequest) {
			t.Errorf("collection %q: %v, want ErrInvalidRequest", bad, err)
		}
		if bad == "" && (err == nil || !strings.Contains(err.Error(), "reserved")) {
			t.Errorf("the empty name: %v, want it called reserved", err)
		}
	}
	un, err := s.EnsureCollection(ctx(t), store.CollectionConfig{Name: store.Uncollected, Model: Model(2)})
	if err != nil {
		t.Fatal(err)
	}
	team := mustCollection(t, s, "team-a", 2)
	mustUpsert(t, un, doc("x", "uncollected refunds note", []float32{1, 0}, map[string]any{}),
		doc("only-here", "uncollected shipping note", []float32{0.8, 0.6}, map[string]any{}))
	mustUpsert(t, team, doc("x", "team refunds note", []float32{1, 0}, map[string]any{}))
	if _, err := s.Collection(ctx(t), ""); !errors.Is(err, store.ErrCollectionNotFound) {
		t.Errorf("the empty name opened %v, want ErrCollectionNotFound: it never stands for the uncollected documents", err)
	}
	got, err := un.Get(ctx(t), []string{"x"})
	if err != nil || len(got) != 1 || got[0].Content != "uncollected refunds note" {
		t.Errorf("uncollected x: %v %v", got, err)
	}
	got, err = team.Get(ctx(t), []string{"x", "only-here"})
	if err != nil || len(got) != 1 || got[0].Content != "team refunds note" {
		t.Errorf("team-a x: %v %v", got, err)
	}
	hits, err := un.Search(ctx(t), store.SearchRequest{Embedding: []float32{1, 0}, TopK: 10})
	if err != nil || !slices.Equal(hitIDs(hits), []string{"x", "only-here"}) || hits[0].Doc.Content != "uncollected refunds note" {
		t.Errorf("uncollected vector search: %v %v", hitIDs(hits), err)
	}
	hits, err = un.Search(ctx(t), store.SearchRequest{Query: "refunds", TopK: 10})
	if errors.Is(err, store.ErrUnsupported) {
		err = nil
	} else if err != nil || len(hits) != 1 || hits[0].Doc.Content != "uncollected refunds note" {
		t.Errorf("uncollected keyword search: %v %v", hitIDs(hits), err)
	}
	if n, err := un.Delete(ctx(t), filter.Eq("sourceType", "manual")); err != nil || n != 2 {
		t.Errorf("uncollected delete: %d %v", n, err)
	}
	if n, _ := team.Count(ctx(t), nil); n != 1 {
		t.Errorf("deleting the uncollected documents touched team-a: %d left", n)
	}
	list, err := s.Collections(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range list {
		names = append(names, c.Name)
	}
	if !slices.Contains(names, store.Uncollected) || !slices.Contains(names, "team-a") {
		t.Errorf("collections %v", names)
	}
	if err := s.DropCollection(ctx(t), store.Uncollected); err != nil {
		t.Errorf("drop the uncollected documents: %v", err)
	}
}
