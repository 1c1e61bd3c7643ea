package weaviate_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/internal/weaviatetest"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/storetest"
	"github.com/quarry-rag/quarry/store/weaviate"
)

func serverURL(t testing.TB, env string) string { return weaviatetest.URL(t, env) }

// openFresh opens the server under a class prefix of its own, so each
// test starts empty.
func openFresh(t testing.TB, base string) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), weaviatetest.Fresh(t, base))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	base := serverURL(t, "QUARRY_TEST_WEAVIATE_URL")
	storetest.Run(t, func(t *testing.T) *store.Store { return openFresh(t, base) })
}

// TestClusterConformance runs the suite on a three-node cluster: every
// class sharded over the nodes and replicated three times. Weaviate scores
// BM25 with each shard's own statistics (weaviate/weaviate #2918), and
// objects land on shards by their ids, which change with every write:
// which of five documents ranks first by keywords varies from run to run,
// so the suite asks only that the best be found.
//
// The suite reads its writes at once, so it runs at consistency ALL.
// Weaviate answers a search from one replica of each shard whatever the
// level, and a write at QUORUM returns once two of three replicas hold
// it: a search in the instant after it can meet the third still
// committing it (CI saw a vector search miss two of four documents, and
// a hybrid search two its reference search found). At ALL every replica
// holds a write before it is acknowledged. QUORUM, the default, is what
// the node-failure test in package server runs, with a node killed and
// brought back.
func TestClusterConformance(t *testing.T) {
	base := serverURL(t, "QUARRY_TEST_WEAVIATE_CLUSTER_URL")
	storetest.RunWith(t, func(t *testing.T) *store.Store { return openFresh(t, withQuery(base, "consistency=ALL")) },
		storetest.Options{ShardLocalScores: true})
}

// withQuery adds a query parameter to a weaviate:// URL.
func withQuery(base, param string) string {
	if strings.Contains(base, "?") {
		return base + "&" + param
	}
	return base + "?" + param
}

func TestOpenRefusesBadURLs(t *testing.T) {
	for _, u := range []string{
		"weaviate://",
		"weaviate://h:1?consistency=SOME",
		"weaviate://h:1?replicas=0",
		"weaviate://h:1?shards=x",
		"weaviate://h:1?prefix=lower",
		"weaviate://h:1?hybrid=magic",
	} {
		if _, err := weaviate.Open(context.Background(), u); err == nil {
			t.Errorf("%s: opened", u)
		}
	}
}

// TestNativeHybrid: with hybrid=weaviate, hybrid search is Weaviate's own
// fusion: filtered, ordered, explained from explainScore, and scored as
// Weaviate's rankedFusion scores (at most 1/60 with the weights summing to
// one), not Quarry's.
func TestNativeHybrid(t *testing.T) {
	base := serverURL(t, "QUARRY_TEST_WEAVIATE_URL")
	s := openFresh(t, base+"?hybrid=weaviate")
	defer s.Close()
	c, err := s.CreateCollection(t.Context(), store.CollectionConfig{Name: "docs", Schema: storetest.Schema(), Model: storetest.Model(2)})
	if err != nil {
		t.Fatal(err)
	}
	var docs []*document.Document
	for i, text := range []string{"refunds are paid in five days", "shipping takes two days", "returns are accepted, refunds follow", "privacy matters"} {
		d := document.New(text)
		d.ID = fmt.Sprintf("d%d", i)
		d.Embedding = []float32{float32(i), 1}
		d.Metadata = map[string]any{"tenant": "acme", "year": int64(2020 + i)}
		docs = append(docs, d)
	}
	if err := c.Upsert(t.Context(), docs); err != nil {
		t.Fatal(err)
	}
	hits, err := c.Search(t.Context(), store.SearchRequest{Query: "refunds", Embedding: []float32{3, 1}, Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 {
		t.Fatal("no hits")
	}
	for i, h := range hits {
		if h.Doc.Score <= 0 || h.Doc.Score > 1.0/60+1e-6 {
			t.Errorf("hit %s: score %v is not a rankedFusion score", h.Doc.ID, h.Doc.Score)
		}
		if i > 0 && store.Less(h.Doc, hits[i-1].Doc) {
			t.Error("hits out of order")
		}
		if h.Explain == nil || h.Explain.Vector == nil || h.Explain.Vector.Rank < 1 {
			t.Errorf("hit %s: explanation %+v", h.Doc.ID, h.Explain)
		}
	}
	if e := hits[0].Explain; e.Keyword == nil || e.Keyword.Rank < 1 {
		t.Errorf("top hit %s has no keyword rank: %+v", hits[0].Doc.ID, e)
	}
	filtered, err := c.Search(t.Context(), store.SearchRequest{Query: "refunds", Embedding: []float32{3, 1}, Filter: filter.Lte("year", 2021)})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range filtered {
		if y := h.Doc.Metadata["year"].(int64); y > 2021 {
			t.Errorf("hit %s of year %d outside the filter", h.Doc.ID, y)
		}
	}
	convex, err := c.Search(t.Context(), store.SearchRequest{Query: "refunds", Embedding: []float32{3, 1}, Fusion: store.Fusion{Method: store.FusionConvex, Alpha: 0.3}})
	if err != nil || len(convex) == 0 || convex[0].Doc.Score > 1+1e-6 {
		t.Errorf("convex: %v %v", convex, err)
	}
}
