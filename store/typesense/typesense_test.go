package typesense_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/storetest"
	"github.com/quarry-rag/quarry/store/typesense"
	"github.com/quarry-rag/quarry/store/typesense/typesensetest"
)

// fake starts an empty fake that wants an API key.
func fake(t *testing.T) *typesensetest.Server {
	t.Helper()
	srv := typesensetest.New(t)
	srv.Key = "secret"
	return srv
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

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) *store.Store {
		s, err := store.Open(context.Background(), fake(t).StoreURL(""))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestOpenRefusesBadURLs(t *testing.T) {
	for _, u := range []string{
		"typesense://",
		"typesense://h:1?prefix=UPPER",
		"typesense://h:1?prefix=a_b",
		"typesense://h:1?hybrid=magic",
		"typesense://h:1?api_key=k",
		"http://h:1",
	} {
		if _, err := typesense.Open(context.Background(), u); err == nil {
			t.Errorf("%s: opened", u)
		}
	}
}

// TestAPIKey: the key from TYPESENSE_API_KEY, or the URL's password before
// it, is sent; without it the server refuses, and opening fails.
func TestAPIKey(t *testing.T) {
	srv := fake(t)
	bare := "typesense://" + srv.Listener.Addr().String()
	t.Setenv("TYPESENSE_API_KEY", "")
	if _, err := typesense.Open(context.Background(), bare); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("open without the key: %v", err)
	}
	t.Setenv("TYPESENSE_API_KEY", "secret")
	b, err := typesense.Open(context.Background(), bare)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	t.Setenv("TYPESENSE_API_KEY", "wrong")
	if b, err = typesense.Open(context.Background(), srv.StoreURL("")); err != nil {
		t.Fatalf("the key in the URL: %v", err)
	}
	b.Close()
}

// TestNativeHybrid: with hybrid=typesense one search carries the text and
// the vector query and Typesense's rank fusion orders the results: each
// document scores 0.5/rank among the keyword results plus 0.5/rank among
// the vector ones, ranks from 1.
func TestNativeHybrid(t *testing.T) {
	srv := fake(t)
	ctx := context.Background()
	quarry, native := open(t, srv.StoreURL("prefix=hyb")), open(t, srv.StoreURL("prefix=hyb&hybrid=typesense"))
	c, err := quarry.CreateCollection(ctx, store.CollectionConfig{Name: "docs", Model: embed.ModelInfo{Provider: "p", Model: "m", Dimension: 3}})
	if err != nil {
		t.Fatal(err)
	}
	// Distinct keyword matches and distances, so neither ranking ties.
	words := []string{"refund policy gift", "gift cards", "refund of gift cards refund", "shipping times", "returns and refund", "store hours"}
	var docs []*document.Document
	for i, w := range words {
		docs = append(docs, &document.Document{ID: fmt.Sprintf("d%d", i), Content: w, SourceType: "file", SourceName: "n.md",
			Embedding: []float32{float32(i) + 0.5, 1, float32(6 - i)}})
	}
	if err := c.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	nc, err := native.Collection(ctx, "docs")
	if err != nil {
		t.Fatal(err)
	}
	req := store.SearchRequest{Query: "refund gift policy", Embedding: []float32{1, 1, 4}, TopK: len(words)}
	kw, err := c.Search(ctx, store.SearchRequest{Query: req.Query, Mode: store.ModeKeyword, TopK: len(words)})
	if err != nil {
		t.Fatal(err)
	}
	vec, err := c.Search(ctx, store.SearchRequest{Embedding: req.Embedding, Mode: store.ModeVector, TopK: len(words)})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{}
	for i, h := range kw {
		want[h.Doc.ID] += 0.5 / float64(i+1)
	}
	for i, h := range vec {
		want[h.Doc.ID] += 0.5 / float64(i+1)
	}
	before := srv.Calls()["POST /multi_search"]
	req.Mode = store.ModeHybrid
	hits, err := nc.Search(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	// One request counts the query's terms, one fused search follows.
	if srv.Calls()["POST /multi_search"] != before+2 {
		t.Errorf("native hybrid sent %d requests", srv.Calls()["POST /multi_search"]-before)
	}
	if len(hits) != len(words) {
		t.Fatalf("%d hits", len(hits))
	}
	for i, h := range hits {
		if d := h.Doc.Score - want[h.Doc.ID]; d > 1e-6 || d < -1e-6 {
			t.Errorf("%s: score %v, rank fusion %v", h.Doc.ID, h.Doc.Score, want[h.Doc.ID])
		}
		if i > 0 && h.Doc.Score > hits[i-1].Doc.Score {
			t.Errorf("hit %d scores %v after %v", i, h.Doc.Score, hits[i-1].Doc.Score)
		}
	}
}

// TestRefusesNonConformingRequests: the fake refuses and records a request
// the OpenAPI document does not allow, so a wire-format mistake in the
// store fails its tests.
func TestRefusesNonConformingRequests(t *testing.T) {
	srv := fake(t)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/multi_search", strings.NewReader(`{"searches":[{"collection":"x","q":"*","per_page":"ten"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-TYPESENSE-API-KEY", "secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if bad := srv.TakeInvalid(); resp.StatusCode != http.StatusBadRequest || len(bad) != 1 {
		t.Errorf("status %d, invalid %v", resp.StatusCode, bad)
	}
}
