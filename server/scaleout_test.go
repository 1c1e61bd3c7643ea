package server_test

import (
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/internal/pgtest"
	"github.com/quarry-rag/quarry/internal/weaviatetest"
	"github.com/quarry-rag/quarry/keys"
	"github.com/quarry-rag/quarry/store/chroma/chromatest"
	"github.com/quarry-rag/quarry/store/meilisearch/meilisearchtest"
	"github.com/quarry-rag/quarry/store/mongodb/mongotest"
	"github.com/quarry-rag/quarry/store/opensearch/opensearchtest"
	"github.com/quarry-rag/quarry/store/pinecone/pineconetest"
	_ "github.com/quarry-rag/quarry/store/postgres"
	"github.com/quarry-rag/quarry/store/qdrant/qdranttest"
	"github.com/quarry-rag/quarry/store/typesense/typesensetest"
)

// TestTwoServersOneStore runs two servers, each with its own knowledge
// base and store connection, over one PostgreSQL, Weaviate, Qdrant,
// OpenSearch, Typesense, Meilisearch, Pinecone or MongoDB Atlas (the fakes, which check every request against the engine's
// API) or Chroma (a real server, its exchanges checked against its own API) store — the
// shape of stateless `quarry serve` replicas behind a load balancer — and
// shows a write through one is read through the other at once.
func TestTwoServersOneStore(t *testing.T) {
	stores := map[string]func(t *testing.T) string{
		"postgres": func(t *testing.T) string { return pgtest.FreshDSN(t) },
		"weaviate": func(t *testing.T) string {
			return weaviatetest.Fresh(t, weaviatetest.URL(t, weaviatetest.NodeEnv))
		},
		"qdrant": func(t *testing.T) string {
			srv, err := qdranttest.New()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				srv.Close()
				for _, msg := range srv.Invalid() {
					t.Errorf("not valid by Qdrant's OpenAPI document: %s", msg)
				}
			})
			return srv.StoreURL("prefix=replicas")
		},
		"typesense": func(t *testing.T) string {
			srv := typesensetest.New(t)
			srv.Key = "k"
			return srv.StoreURL("prefix=replicas")
		},
		"chroma": func(t *testing.T) string { return chromatest.New(t).StoreURL("") },
		"meilisearch": func(t *testing.T) string {
			srv := meilisearchtest.New(t)
			srv.Key = "k"
			return srv.StoreURL("prefix=replicas")
		},
		"pinecone": func(t *testing.T) string {
			srv := pineconetest.New(t)
			srv.Key = "k"
			return srv.StoreURL("prefix=replicas")
		},
		"mongodb":       func(t *testing.T) string { return mongotest.New(t).URI("prefix=replicas") },
		"opensearch":    openSearchFake(),
		"elasticsearch": openSearchFake(opensearchtest.Elasticsearch()),
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			url := open(t)
			a := newFixture(t, func(c *config) { c.store = url })
			b := newFixture(t, func(c *config) { c.store = url })
			wa := mustKey(t, a.keys, keys.Spec{Permission: keys.PermWrite})
			rb := mustKey(t, b.keys, keys.Spec{Permission: keys.PermRead})
			expect(t, "write through a", a.do(t, "POST", "/v1/collections/shop/objects", wa,
				map[string]any{"id": "p-1", "title": "Kettle", "price": 30}), 200, "")
			r := b.do(t, "POST", "/v1/collections/shop/search", rb, map[string]any{"query": "kettle", "mode": "keyword"})
			expect(t, "search through b", r, 200, "")
			if !strings.Contains(r.raw, "Kettle") {
				t.Errorf("a write through one server is not read through the other: %s", r.raw)
			}
			expect(t, "replace through a", a.do(t, "POST", "/v1/collections/shop/objects", wa,
				map[string]any{"id": "p-1", "title": "Kettle", "price": 25}), 200, "")
			r = b.do(t, "POST", "/v1/collections/shop/search", rb, map[string]any{"query": "kettle", "mode": "keyword"})
			if !strings.Contains(r.raw, "price: 25") || strings.Contains(r.raw, "price: 30") {
				t.Errorf("the other server reads a replaced object's old version: %s", r.raw)
			}
		})
	}
}

// openSearchFake starts a fake OpenSearch or Elasticsearch for a test.
func openSearchFake(opts ...opensearchtest.Option) func(t *testing.T) string {
	return func(t *testing.T) string {
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
		return srv.StoreURL("prefix=replicas")
	}
}
