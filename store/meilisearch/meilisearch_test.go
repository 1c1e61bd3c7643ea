package meilisearch_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/meilisearch"
	"github.com/quarry-rag/quarry/store/meilisearch/meilisearchtest"
	"github.com/quarry-rag/quarry/store/storetest"
)

// fake starts an empty fake that wants an API key.
func fake(t *testing.T) *meilisearchtest.Server {
	t.Helper()
	srv := meilisearchtest.New(t)
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
		"meilisearch://",
		"meilisearch://h:1?prefix=UPPER",
		"meilisearch://h:1?prefix=a_b",
		"meilisearch://h:1?hybrid=magic",
		"meilisearch://h:1?api_key=k",
		"http://h:1",
	} {
		if _, err := meilisearch.Open(context.Background(), u); err == nil {
			t.Errorf("%s: opened", u)
		}
	}
}

// TestAPIKey: the key from MEILISEARCH_API_KEY, or the URL's password
// before it, is sent; without it the server refuses, and opening fails.
func TestAPIKey(t *testing.T) {
	srv := fake(t)
	bare := "meilisearch://" + srv.Listener.Addr().String()
	t.Setenv("MEILISEARCH_API_KEY", "")
	if _, err := meilisearch.Open(context.Background(), bare); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("open without the key: %v", err)
	}
	t.Setenv("MEILISEARCH_API_KEY", "secret")
	b, err := meilisearch.Open(context.Background(), bare)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	t.Setenv("MEILISEARCH_API_KEY", "wrong")
	if b, err = meilisearch.Open(context.Background(), srv.StoreURL("")); err != nil {
		t.Fatalf("the key in the URL: %v", err)
	}
	b.Close()
}

// TestNativeHybrid: with hybrid=meilisearch a plain hybrid request is one
// search carrying the query and the vector with semanticRatio 0.5, merged
// by Meilisearch, after the one request that counts the query's terms.
func TestNativeHybrid(t *testing.T) {
	srv := fake(t)
	ctx := context.Background()
	quarry, native := open(t, srv.StoreURL("prefix=hyb")), open(t, srv.StoreURL("prefix=hyb&hybrid=meilisearch"))
	c, err := quarry.CreateCollection(ctx, store.CollectionConfig{Name: "docs", Model: embed.ModelInfo{Provider: "p", Model: "m", Dimension: 3}})
	if err != nil {
		t.Fatal(err)
	}
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
	before := srv.Calls()["POST /multi-search"]
	hits, err := nc.Search(ctx, store.SearchRequest{Query: "refund gift policy", Embedding: []float32{1, 1, 4}, Mode: store.ModeHybrid, TopK: 3})
	if err != nil {
		t.Fatal(err)
	}
	if n := srv.Calls()["POST /multi-search"] - before; n != 2 {
		t.Errorf("native hybrid sent %d requests", n)
	}
	if got := ids(hits); len(hits) != 3 || !strings.Contains(strings.Join(got, " "), "d0:") {
		t.Errorf("hits %v: want three, d0 (the best keyword match, and near the vector) among them", got)
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].Doc.Score > hits[i-1].Doc.Score {
			t.Errorf("hit %d scores %v after %v", i, hits[i].Doc.Score, hits[i-1].Doc.Score)
		}
	}
}

// TestRefusesNonConformingRequests: the fake refuses and records a request
// the OpenAPI document does not allow, so a wire-format mistake in the
// store fails its tests.
func TestRefusesNonConformingRequests(t *testing.T) {
	srv := fake(t)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/multi-search", strings.NewReader(`{"queries":[{"indexUid":"x","limit":"ten"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if bad := srv.TakeInvalid(); resp.StatusCode != http.StatusBadRequest || len(bad) != 1 {
		t.Errorf("status %d, invalid %v", resp.StatusCode, bad)
	}
}

func ids(hits []store.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, fmt.Sprintf("%s:%.3f", h.Doc.ID, h.Doc.Score))
	}
	return out
}

// TestKeywordSendsTheTenRarestHeldTerms: Meilisearch considers a query's
// first ten words, so a long question sends its ten rarest terms that
// some document holds, rarest first, and a document holding only a rare
// term late in the question is still found.
func TestKeywordSendsTheTenRarestHeldTerms(t *testing.T) {
	ctx := context.Background()
	s := open(t, fake(t).StoreURL(""))
	c, err := s.CreateCollection(ctx, store.CollectionConfig{Name: "docs", Model: embed.ModelInfo{Provider: "p", Model: "m", Dimension: 2}})
	if err != nil {
		t.Fatal(err)
	}
	common := []string{"apple", "banana", "cherry", "grape", "lemon", "mango", "olive", "peach", "plum", "melon", "guava"}
	var docs []*document.Document
	for i := range 20 {
		docs = append(docs, &document.Document{ID: fmt.Sprintf("c%02d", i), Content: strings.Join(common, " "),
			SourceType: "manual", SourceName: "manual", Embedding: []float32{1, 0}})
	}
	docs = append(docs, &document.Document{ID: "rare", Content: "zucchini apple", SourceType: "manual", SourceName: "manual", Embedding: []float32{1, 0}})
	if err := c.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	// Twelve words, the rare one last and one held by no document.
	q := strings.Join(common, " ") + " quinoa zucchini"
	hits, err := c.Search(ctx, store.SearchRequest{Query: q, Mode: store.ModeKeyword, TopK: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(hits); len(hits) != 1 || hits[0].Doc.ID != "rare" {
		t.Errorf("keyword hits %v, want the document holding the rarest term", got)
	}
}
