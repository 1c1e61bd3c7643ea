package pinecone_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/pinecone"
	"github.com/quarry-rag/quarry/store/pinecone/pineconetest"
	"github.com/quarry-rag/quarry/store/storetest"
)

// fake starts an empty fake that wants an API key.
func fake(t *testing.T) *pineconetest.Server {
	t.Helper()
	srv := pineconetest.New(t)
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
		"pinecone://h:1?prefix=UPPER",
		"pinecone://h:1?prefix=a_b",
		"pinecone://h:1?prefix=abcdefghijklmnopqrstuvwxyz",
		"pinecone://h:1?cloud=moon",
		"pinecone://h:1?tls=maybe",
		"pinecone://h:1?api_key=k",
		"http://h:1",
	} {
		if _, err := pinecone.Open(context.Background(), u); err == nil {
			t.Errorf("%s: opened", u)
		}
	}
}

// TestAPIKey: the key from PINECONE_API_KEY, or the URL's password before
// it, is sent; without it the server refuses, and opening fails.
func TestAPIKey(t *testing.T) {
	srv := fake(t)
	bare := "pinecone://" + srv.Listener.Addr().String() + "?tls=false"
	t.Setenv("PINECONE_API_KEY", "")
	if _, err := pinecone.Open(context.Background(), bare); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("open without the key: %v", err)
	}
	t.Setenv("PINECONE_API_KEY", "secret")
	b, err := pinecone.Open(context.Background(), bare)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	t.Setenv("PINECONE_API_KEY", "wrong")
	if b, err = pinecone.Open(context.Background(), srv.StoreURL("")); err != nil {
		t.Fatalf("the key in the URL: %v", err)
	}
	b.Close()
}

// TestRefusesNonConformingRequests: the fake refuses and records a request
// either plane's OpenAPI document does not allow, so a wire-format mistake
// in the store fails its tests.
func TestRefusesNonConformingRequests(t *testing.T) {
	srv := fake(t)
	s := open(t, srv.StoreURL(""))
	if _, err := s.CreateCollection(context.Background(), store.CollectionConfig{Name: "docs", Model: embed.ModelInfo{Provider: "p", Model: "m", Dimension: 2}}); err != nil {
		t.Fatal(err)
	}
	data := "http://" + srv.Host("quarry-sparse")
	for _, c := range []struct {
		url, body string
		version   bool
	}{
		{srv.URL + "/indexes", `{"name":"x","dimension":"ten","spec":{"serverless":{"cloud":"aws","region":"r"}}}`, true},
		{data + "/query", `{"namespace":"docs","topK":"ten","sparseVector":{"indices":[1],"values":[1]}}`, true},
		{data + "/vectors/upsert", `{"namespace":"docs","vectors":[{"values":[1]}]}`, true},
		{data + "/describe_index_stats", `{}`, false}, // the version header is required
	} {
		req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Api-Key", "secret")
		if c.version {
			req.Header.Set("X-Pinecone-Api-Version", pinecone.APIVersion)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if bad := srv.TakeInvalid(); resp.StatusCode != http.StatusBadRequest || len(bad) != 1 {
			t.Errorf("%s %s: status %d, invalid %v", c.url, c.body, resp.StatusCode, bad)
		}
	}
}

// TestLayout: a store's collections share one sparse index and one dense
// index per dimension, each a namespace in them, beside the meta index.
func TestLayout(t *testing.T) {
	srv := fake(t)
	ctx := context.Background()
	s := open(t, srv.StoreURL("prefix=lay"))
	for i, dim := range []int{3, 3, 5} {
		cfg := store.CollectionConfig{Name: fmt.Sprintf("c%d", i), Model: embed.ModelInfo{Provider: "p", Model: "m", Dimension: dim}}
		if _, err := s.CreateCollection(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	want := "lay-dense-3 lay-dense-5 lay-meta lay-sparse"
	if got := strings.Join(srv.Indexes(), " "); got != want {
		t.Errorf("indexes %q, want %q", got, want)
	}
	if _, err := s.CreateCollection(ctx, store.CollectionConfig{Name: "c1", Model: embed.ModelInfo{Provider: "p", Model: "m", Dimension: 3}}); !errors.Is(err, store.ErrCollectionExists) {
		t.Errorf("second c1: %v", err)
	}
}

// TestMetadataOverPineconesLimit: a chunk whose metadata passes Pinecone's
// 40 KB is refused with a message before anything is written.
func TestMetadataOverPineconesLimit(t *testing.T) {
	ctx := context.Background()
	s := open(t, fake(t).StoreURL(""))
	c, err := s.CreateCollection(ctx, store.CollectionConfig{Name: "docs", Model: embed.ModelInfo{Provider: "p", Model: "m", Dimension: 2}})
	if err != nil {
		t.Fatal(err)
	}
	docs := []*document.Document{
		{ID: "small", Content: "fine", SourceType: "manual", SourceName: "m", Embedding: []float32{1, 0}},
		{ID: "big", Content: strings.Repeat("word ", 9000), SourceType: "manual", SourceName: "m", Embedding: []float32{1, 0}},
	}
	if err := c.Upsert(ctx, docs); err == nil || !strings.Contains(err.Error(), "40 KB") {
		t.Fatalf("upsert: %v", err)
	}
	if n, err := c.Count(ctx, nil); err != nil || n != 0 {
		t.Errorf("count %d, %v: want nothing written", n, err)
	}
}

// TestKeywordCountsAreKeptUntilAWrite: a keyword search counts each new
// query term's documents with a sparse query of its own; a second search
// reuses the counts (one query), and a write through the same store
// forgets them, so the next search counts again and ranks by the new
// frequencies.
func TestKeywordCountsAreKeptUntilAWrite(t *testing.T) {
	srv := fake(t)
	ctx := context.Background()
	s := open(t, srv.StoreURL(""))
	c, err := s.CreateCollection(ctx, store.CollectionConfig{Name: "docs", Model: embed.ModelInfo{Provider: "p", Model: "m", Dimension: 2}})
	if err != nil {
		t.Fatal(err)
	}
	doc := func(id, text string) *document.Document {
		return &document.Document{ID: id, Content: text, SourceType: "manual", SourceName: "m", Embedding: []float32{1, 0}}
	}
	if err := c.Upsert(ctx, []*document.Document{doc("a", "apple pie"), doc("b", "banana bread"), doc("c", "cherry tart")}); err != nil {
		t.Fatal(err)
	}
	queries := func() int { return srv.Calls()["POST /query"] }
	search := func() []store.Hit {
		t.Helper()
		hits, err := c.Search(ctx, store.SearchRequest{Query: "apple banana", Mode: store.ModeKeyword, TopK: 5})
		if err != nil {
			t.Fatal(err)
		}
		return hits
	}
	before := queries()
	search()
	if n := queries() - before; n != 3 {
		t.Errorf("first search: %d queries, want 3 (two counts, one search)", n)
	}
	before = queries()
	first := search()
	if n := queries() - before; n != 1 {
		t.Errorf("second search: %d queries, want 1", n)
	}
	if len(first) != 2 || first[0].Doc.Score != first[1].Doc.Score {
		t.Fatalf("hits %v: want a and b, tied", first)
	}
	// Two more apples make apple the commoner term, so banana ranks first.
	if err := c.Upsert(ctx, []*document.Document{doc("d", "apple juice"), doc("e", "apple cider")}); err != nil {
		t.Fatal(err)
	}
	before = queries()
	hits := search()
	if n := queries() - before; n != 3 {
		t.Errorf("search after a write: %d queries, want 3", n)
	}
	if len(hits) != 4 || hits[0].Doc.ID != "b" {
		t.Errorf("hits after a write: %v, want b first", hits)
	}
}

// TestNoGoroutinesLeft: closing the store drops its idle connections and
// the fake's hosts end theirs: nothing is left running after a search
// that counted terms in parallel.
func TestNoGoroutinesLeft(t *testing.T) {
	before := runtime.NumGoroutine()
	srv := fake(t)
	ctx := context.Background()
	s, err := store.Open(ctx, srv.StoreURL(""))
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.CreateCollection(ctx, store.CollectionConfig{Name: "docs", Model: embed.ModelInfo{Provider: "p", Model: "m", Dimension: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Upsert(ctx, []*document.Document{{ID: "a", Content: "apple pie crust", SourceType: "manual", SourceName: "m", Embedding: []float32{1, 0}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Search(ctx, store.SearchRequest{Query: "apple pie crust", Embedding: []float32{1, 0}, Mode: store.ModeHybrid, TopK: 3}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines before, %d after:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

// TestRetriesRateLimits: a request Pinecone answers with 429 or 503 is
// sent again, as its Retry-After asks, and the write lands; five refusals
// in a row are the caller's error.
func TestRetriesRateLimits(t *testing.T) {
	srv := fake(t)
	ctx := context.Background()
	s := open(t, srv.StoreURL(""))
	c, err := s.CreateCollection(ctx, store.CollectionConfig{Name: "docs", Model: embed.ModelInfo{Provider: "p", Model: "m", Dimension: 2}})
	if err != nil {
		t.Fatal(err)
	}
	doc := []*document.Document{{ID: "a", Content: "apple", SourceType: "manual", SourceName: "m", Embedding: []float32{1, 0}}}
	srv.FailNext(2, http.StatusTooManyRequests)
	if err := c.Upsert(ctx, doc); err != nil {
		t.Fatalf("upsert after two 429s: %v", err)
	}
	if n, err := c.Count(ctx, nil); err != nil || n != 1 {
		t.Errorf("count %d, %v", n, err)
	}
	srv.FailNext(5, http.StatusServiceUnavailable)
	if err := c.Upsert(ctx, doc); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("upsert after five 503s: %v", err)
	}
	srv.FailNext(0, 0)
}
