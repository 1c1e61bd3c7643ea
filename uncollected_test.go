package quarry_test

import (
	"context"
	"errors"
	"testing"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/quarrytest"
)

// TestUncollectedScope: a knowledge base whose default is the uncollected
// scope keeps what is added without a collection apart from the named
// collections; a call naming none reads only those, the same id lives once
// per collection, and a scope limited to named collections never reaches
// the uncollected documents.
func TestUncollectedScope(t *testing.T) {
	ctx := context.Background()
	kb := quarrytest.NewKB(t, quarry.WithCollection(quarry.Uncollected))
	add := func(collection, text string) {
		t.Helper()
		if _, err := kb.AddDocuments(ctx, quarry.Developer(), collection, []quarry.NewDocument{{ID: "x", Text: text, Source: "note.md"}}); err != nil {
			t.Fatal(err)
		}
	}
	add("", "The uncollected refund note says fourteen days.")
	add("team-a", "Team A's refund note says thirty days.")
	res, err := kb.Search(ctx, quarry.Developer(), quarry.SearchRequest{Query: "refund note"})
	if err != nil || res.Collection != quarry.Uncollected || len(res.Results) != 1 || res.Results[0].Text != "The uncollected refund note says fourteen days." {
		t.Errorf("a search naming no collection: %+v %v", res, err)
	}
	res, err = kb.Search(ctx, quarry.Developer(), quarry.SearchRequest{Query: "refund note", Collection: "team-a"})
	if err != nil || len(res.Results) != 1 || res.Results[0].Text != "Team A's refund note says thirty days." {
		t.Errorf("team-a's x: %+v %v", res, err)
	}
	team := quarry.Scope{Collections: []string{"team-a"}}
	if _, err := kb.Search(ctx, team, quarry.SearchRequest{Query: "refund note"}); !errors.Is(err, quarry.ErrForbidden) {
		t.Errorf("a team-a scope searching without a collection: %v, want ErrForbidden", err)
	}
	cs, err := kb.Collections(ctx, team)
	if err != nil || len(cs) != 1 || cs[0].Name != "team-a" {
		t.Errorf("collections a team-a scope sees: %+v %v", cs, err)
	}
	if _, err := kb.EnsureCollection(ctx, "_mine", nil); !errors.Is(err, quarry.ErrInvalid) {
		t.Errorf("a collection named like the reserved one: %v", err)
	}
	if n, err := kb.Delete(ctx, quarry.Developer(), quarry.DeleteRequest{Source: "note.md"}); err != nil || n != 1 {
		t.Errorf("delete naming no collection: %d %v, want the uncollected note only", n, err)
	}
	if n, _ := kb.Collection("team-a").Count(ctx, nil); n != 1 {
		t.Errorf("team-a after deleting the uncollected note: %d", n)
	}
}
