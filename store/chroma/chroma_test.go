package chroma_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/chroma"
	"github.com/quarry-rag/quarry/store/chroma/chromatest"
	"github.com/quarry-rag/quarry/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) *store.Store {
		s, err := store.Open(context.Background(), chromatest.New(t).StoreURL(""))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestOpenRefusesBadURLs(t *testing.T) {
	for _, u := range []string{
		"chroma://",
		"chroma://h:1?prefix=UPPER",
		"chroma://h:1?prefix=a_b",
		"chroma://h:1?tenant=a/b",
		"chroma://h:1?api_key=k",
		"http://h:1",
	} {
		if _, err := chroma.Open(context.Background(), u); err == nil {
			t.Errorf("%s: opened", u)
		}
	}
}

// TestShortQueryRankedExactly: when Chroma answers a vector query with
// fewer records than asked for while the filter holds more (as it does
// for a moment while it indexes fresh records), the store ranks the
// filter's records exactly from their stored embeddings.
func TestShortQueryRankedExactly(t *testing.T) {
	srv := chromatest.New(t)
	ctx := context.Background()
	s := open(t, srv.StoreURL(""))
	c, err := s.CreateCollection(ctx, store.CollectionConfig{Name: "docs", Model: embed.ModelInfo{Provider: "p", Model: "m", Dimension: 2}})
	if err != nil {
		t.Fatal(err)
	}
	var docs []*document.Document
	for i := range 30 {
		docs = append(docs, &document.Document{ID: fmt.Sprintf("d%02d", i), Content: "x", SourceType: "manual", SourceName: "manual",
			Embedding: []float32{1, float32(i) / 10}})
	}
	if err := c.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	req := store.SearchRequest{Embedding: []float32{1, 0}, TopK: 10, Vectors: true}
	want, err := c.Search(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	srv.ShortQueries(3)
	got, err := c.Search(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d hits from a short answer, %d from a whole one", len(got), len(want))
	}
	for i := range got {
		if got[i].Doc.ID != want[i].Doc.ID || math.Abs(got[i].Doc.Score-want[i].Doc.Score) > 1e-6 || !slices.Equal(got[i].Doc.Embedding, docs[idx(got[i].Doc.ID)].Embedding) {
			t.Errorf("hit %d: %s %v %v, want %s %v", i, got[i].Doc.ID, got[i].Doc.Score, got[i].Doc.Embedding, want[i].Doc.ID, want[i].Doc.Score)
		}
	}
}

func idx(id string) int {
	var i int
	fmt.Sscanf(id, "d%d", &i)
	return i
}

func open(t *testing.T, url string) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
