package opensearch_test

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
	"github.com/quarry-rag/quarry/store/opensearch"
	"github.com/quarry-rag/quarry/store/opensearch/opensearchtest"
	"github.com/quarry-rag/quarry/store/storetest"
)

// fake starts a fake OpenSearch that fails the test, when it ends, if any
// request or answer did not conform to OpenSearch's OpenAPI document.
func fake(t testing.TB, opts ...opensearchtest.Option) *opensearchtest.Server {
	t.Helper()
	srv, err := opensearchtest.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		for _, msg := range srv.Invalid() {
			t.Errorf("not valid by the engine's OpenAPI document: %s", msg)
		}
	})
	return srv
}

// opener opens stores on srv, each under a prefix of its own so each
// starts empty.
func opener(srv *opensearchtest.Server, query string) func(t testing.TB) *store.Store {
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

func TestConformanceElasticsearch(t *testing.T) {
	open := opener(fake(t, opensearchtest.Elasticsearch()), "")
	storetest.Run(t, func(t *testing.T) *store.Store { return open(t) })
}

// TestSchemeNamesTheEngine: a URL whose scheme names the other engine does
// not open, since the vector mappings and queries differ; the dialect is
// the engine's.
func TestSchemeNamesTheEngine(t *testing.T) {
	ctx := context.Background()
	os, es := fake(t), fake(t, opensearchtest.Elasticsearch())
	for _, tc := range []struct{ url, dialect string }{
		{os.StoreURL(""), opensearch.DialectOpenSearch},
		{es.StoreURL(""), opensearch.DialectElasticsearch},
	} {
		b, err := opensearch.Open(ctx, tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if b.Dialect() != tc.dialect {
			t.Errorf("%s: dialect %s", tc.url, b.Dialect())
		}
		b.Close()
	}
	swap := []string{
		strings.Replace(os.StoreURL(""), "opensearch://", "elasticsearch://", 1),
		strings.Replace(es.StoreURL(""), "elasticsearch://", "opensearch://", 1),
	}
	for _, u := range swap {
		if _, err := opensearch.Open(ctx, u); err == nil || !strings.Contains(err.Error(), "answers as") {
			t.Errorf("%s opened the other engine: %v", u, err)
		}
	}
}

// TestElasticsearchAPIKey: an Elasticsearch URL without a user sends
// ELASTICSEARCH_API_KEY; without it a secured cluster refuses.
func TestElasticsearchAPIKey(t *testing.T) {
	srv := fake(t, opensearchtest.Elasticsearch(), opensearchtest.WithAPIKey("k3y"))
	t.Setenv("ELASTICSEARCH_API_KEY", "")
	if _, err := opensearch.Open(context.Background(), srv.StoreURL("")); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("open without a key: %v", err)
	}
	t.Setenv("ELASTICSEARCH_API_KEY", "k3y")
	b, err := opensearch.Open(context.Background(), srv.StoreURL(""))
	if err != nil {
		t.Fatalf("the key from ELASTICSEARCH_API_KEY: %v", err)
	}
	b.Close()
}

func TestOpenRefusesBadURLs(t *testing.T) {
	for _, u := range []string{
		"opensearch://",
		"opensearch://h:1?prefix=UPPER",
		"opensearch://h:1?prefix=a_b",
		"opensearch://h:1?prefix=a.b",
		"opensearch://h:1?hybrid=magic",
		"opensearch://h:1?prefx=a",
		"opensearch://h:1?hybrid=elasticsearch",
		"elasticsearch://h:1?hybrid=opensearch",
		"elasticsearch://",
		"http://h:1",
	} {
		if _, err := opensearch.Open(context.Background(), u); err == nil {
			t.Errorf("%s: opened", u)
		}
	}
}

// TestBasicAuth: the URL's user and password (or OPENSEARCH_PASSWORD) are
// sent; without them a secured cluster refuses, and opening fails.
func TestBasicAuth(t *testing.T) {
	srv := fake(t, opensearchtest.WithBasicAuth("quarry", "secret"))
	with := func(userinfo string) string {
		return strings.Replace(srv.StoreURL(""), "opensearch://", "opensearch://"+userinfo, 1)
	}
	if _, err := opensearch.Open(context.Background(), srv.StoreURL("")); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("open without credentials: %v", err)
	}
	b, err := opensearch.Open(context.Background(), with("quarry:secret@"))
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	t.Setenv("OPENSEARCH_PASSWORD", "secret")
	if b, err = opensearch.Open(context.Background(), with("quarry@")); err != nil {
		t.Fatalf("the password from OPENSEARCH_PASSWORD: %v", err)
	}
	b.Close()
}

// TestNativeHybrid: with hybrid=opensearch the hybrid query and a search
// pipeline's RRF fuse the two branches, and every document gets the score
// Quarry's own RRF gives it (the data has no tied branch scores, whose
// order neither side promises).
func TestNativeHybrid(t *testing.T) {
	t.Run("opensearch", func(t *testing.T) {
		srv := fake(t)
		calls := nativeHybrid(t, srv, "opensearch")
		if calls["PUT /_search/pipeline/{id}"] != 1 {
			t.Errorf("native hybrid did not make its pipeline: %v", calls)
		}
	})
	// Elasticsearch's rrf retriever fuses with the same formula.
	t.Run("elasticsearch", func(t *testing.T) {
		nativeHybrid(t, fake(t, opensearchtest.Elasticsearch()), "elasticsearch")
	})
}

// nativeHybrid checks the engine's fusion against Quarry's and returns
// the calls the engine got.
func nativeHybrid(t *testing.T, srv *opensearchtest.Server, engine string) map[string]int {
	ctx := context.Background()
	open := func(query string) *store.Store {
		s, err := store.Open(ctx, srv.StoreURL("prefix=hyb"+query))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	quarry, native := open(""), open("&hybrid="+engine)
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
	want := scores(c)
	before := srv.Calls()["POST /{index}/_search"]
	got := scores(nc)
	if srv.Calls()["POST /{index}/_search"] != before+1 {
		t.Errorf("native hybrid did not send one search: %v", srv.Calls())
	}
	if len(got) != len(want) || len(want) < 5 {
		t.Fatalf("native %v, Quarry %v", got, want)
	}
	for id, w := range want {
		if g, ok := got[id]; !ok || math.Abs(g-w) > 1e-9 {
			t.Errorf("%s: native %v, Quarry %v", id, g, w)
		}
	}
	return srv.Calls()
}

// TestRefusesNonConformingRequests: the fake refuses and records a request
// the OpenAPI document does not allow, so a wire-format mistake in the
// store fails its tests; bodies of an _msearch are checked as searches.
// Each flavour refuses the other engine's vector search.
func TestRefusesNonConformingRequests(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []opensearchtest.Option
		reqs []struct{ path, ct, body string }
	}{
		{"opensearch", nil, []struct{ path, ct, body string }{
			{"/x/_search", "application/json", `{"size":"ten"}`},
			{"/x/_msearch", "application/x-ndjson", "{}\n{\"size\":\"ten\"}\n"},
		}},
		{"elasticsearch", []opensearchtest.Option{opensearchtest.Elasticsearch()}, []struct{ path, ct, body string }{
			{"/x/_search", "application/json", `{"size":"ten"}`},
			{"/x/_msearch", "application/x-ndjson", "{}\n{\"size\":\"ten\"}\n"},
			{"/x/_search", "application/json", `{"query":{"knn":{"embedding":{"vector":[1,0],"k":3}}}}`},
			{"/x/_search", "application/json", `{"query":{"term":{"a":{"valu":1}}}}`},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := opensearchtest.New(tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			for _, r := range tc.reqs {
				resp, err := http.Post(srv.URL+r.path, r.ct, strings.NewReader(r.body))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusBadRequest {
					t.Errorf("%s %s: status %d", r.path, r.body, resp.StatusCode)
				}
			}
			if n := len(srv.Invalid()); n != len(tc.reqs) {
				t.Errorf("%d invalid requests recorded, want %d: %v", n, len(tc.reqs), srv.Invalid())
			}
		})
	}
}
