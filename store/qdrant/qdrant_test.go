package qdrant_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/qdrant"
	"github.com/quarry-rag/quarry/store/qdrant/qdranttest"
	"github.com/quarry-rag/quarry/store/storetest"
)

// fake starts a fake Qdrant that fails the test, when it ends, if any
// request or answer did not conform to Qdrant's OpenAPI document.
func fake(t testing.TB, opts ...qdranttest.Option) *qdranttest.Server {
	t.Helper()
	srv, err := qdranttest.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		for _, msg := range srv.Invalid() {
			t.Errorf("not valid by Qdrant's OpenAPI document: %s", msg)
		}
	})
	return srv
}

// opener opens stores on srv, each under a prefix of its own so each
// starts empty.
func opener(srv *qdranttest.Server, query string) func(t testing.TB) *store.Store {
	var n atomic.Int64
	return func(t testing.TB) *store.Store {
		t.Helper()
		q := fmt.Sprintf("prefix=t%d", n.Add(1))
		if query != "" {
			q += "&" + query
		}
		s, err := store.Open(context.Background(), srv.StoreURL(q))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func TestConformance(t *testing.T) {
	open := opener(fake(t), "")
	storetest.Run(t, func(t *testing.T) *store.Store { return open(t) })
}

func TestOpenRefusesBadURLs(t *testing.T) {
	for _, u := range []string{
		"qdrant://",
		"qdrant://h:1?prefix=UPPER",
		"qdrant://h:1?hybrid=magic",
		"qdrant://h:1?prefix=a_b",
		"qdrant://h:1?prefx=a",
		"qdrant://h:1?api_key=k",
		"http://h:1",
	} {
		if _, err := qdrant.Open(context.Background(), u); err == nil {
			t.Errorf("%s: opened", u)
		}
	}
}

// TestAPIKey: the key from QDRANT_API_KEY, or the URL's password before
// it, is sent; without it the server refuses, and opening fails.
func TestAPIKey(t *testing.T) {
	srv := fake(t, qdranttest.WithAPIKey("secret"))
	t.Setenv("QDRANT_API_KEY", "")
	if _, err := qdrant.Open(context.Background(), srv.StoreURL("")); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("open without the key: %v", err)
	}
	t.Setenv("QDRANT_API_KEY", "secret")
	b, err := qdrant.Open(context.Background(), srv.StoreURL(""))
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	t.Setenv("QDRANT_API_KEY", "wrong")
	b, err = qdrant.Open(context.Background(), strings.Replace(srv.StoreURL(""), "qdrant://", "qdrant://:secret@", 1))
	if err != nil {
		t.Fatalf("the key in the URL: %v", err)
	}
	b.Close()
}

// TestNativeHybrid: with hybrid=qdrant Qdrant fuses the two branches, and
// every document gets the score Quarry's own RRF gives it (the data
// has no tied branch scores, whose order neither side promises).
func TestNativeHybrid(t *testing.T) {
	srv := fake(t)
	ctx := context.Background()
	open := func(query string) *store.Store {
		s, err := store.Open(ctx, srv.StoreURL("prefix=hyb"+query))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	quarry, native := open(""), open("&hybrid=qdrant")
	cfg := store.CollectionConfig{Name: "docs", Model: embed.ModelInfo{Provider: "p", Model: "m", Dimension: 3}}
	c, err := quarry.CreateCollection(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	words := []string{"refund policy", "gift cards", "refund of gift cards", "shipping times", "returns and refund", "store hours", "card payments", "policy on returns of goods bought"}
	var docs []*document.Document
	for i, w := range words {
		docs = append(docs, &document.Document{ID: fmt.Sprintf("d%d", i), Content: w, SourceType: "file", SourceName: "n.md",
			Embedding: []float32{float32(i%3) + 0.5, float32(i%5) + 0.25, float32(i%2) + 1}})
	}
	if err := c.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	nc, err := native.Collection(ctx, "docs")
	if err != nil {
		t.Fatal(err)
	}
	req := store.SearchRequest{Query: "refund gift policy", Embedding: []float32{1, 2, 1}, Mode: store.ModeHybrid, TopK: len(words)}
	scores := func(c *store.Collection) map[string]float64 {
		hits, err := c.Search(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for i, h := range hits {
			if i > 0 && h.Doc.Score > hits[i-1].Doc.Score {
				t.Errorf("hit %d scores %v after %v", i, h.Doc.Score, hits[i-1].Doc.Score)
			}
			out[h.Doc.ID] = h.Doc.Score
		}
		return out
	}
	before := srv.Calls()["POST /collections/{c}/points/query"]
	want, got := scores(c), scores(nc)
	if srv.Calls()["POST /collections/{c}/points/query"] != before+1 {
		t.Errorf("native hybrid did not send one fused query: %v", srv.Calls())
	}
	if len(got) != len(want) || len(want) < 5 {
		t.Fatalf("native %v, Quarry %v", got, want)
	}
	for id, w := range want {
		if g, ok := got[id]; !ok || math.Abs(g-w) > 1e-6 {
			t.Errorf("%s: native %v, Quarry %v", id, g, w)
		}
	}
}

// TestRefusesNonConformingRequests: the fake refuses and records a request
// the OpenAPI document does not allow, so a wire-format mistake in the
// store fails its tests.
func TestRefusesNonConformingRequests(t *testing.T) {
	srv, err := qdranttest.New()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/collections/x/points/query", "application/json", strings.NewReader(`{"limit":"ten"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || len(srv.Invalid()) != 1 {
		t.Errorf("status %d, invalid %v", resp.StatusCode, srv.Invalid())
	}
}
