package weaviate_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/storetest"
	"github.com/quarry-rag/quarry/store/weaviate"
)

// serverURL is a Weaviate under test: QUARRY_TEST_WEAVIATE_URL names one
// node (weaviate://host:port), QUARRY_TEST_WEAVIATE_CLUSTER_URL a cluster
// (with shards=N&replicas=N); the tests skip without them.
func serverURL(t testing.TB, env string) string {
	t.Helper()
	u := os.Getenv(env)
	if u == "" {
		t.Skipf("%s is not set: start Weaviate with scripts/weaviate.sh (`. scripts/weaviate.sh; weaviate_up 1` for one node, `weaviate_up 3` for a cluster), which sets it", env)
	}
	return u
}

// openFresh opens the server under a class prefix of its own, so each
// test starts empty, and drops that prefix's classes afterwards.
func openFresh(t testing.TB, base string) *store.Store {
	t.Helper()
	var r [5]byte
	_, _ = rand.Read(r[:])
	prefix := "T" + strings.ToUpper(hex.EncodeToString(r[:]))
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	s, err := store.Open(context.Background(), base+sep+"prefix="+prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropPrefix(t, base, prefix) })
	return s
}

func httpBase(t testing.TB, u string) string {
	host := strings.TrimPrefix(u, "weaviate://")
	host, _, _ = strings.Cut(host, "?")
	if _, h, ok := strings.Cut(host, "@"); ok {
		host = h
	}
	return "http://" + host
}

func dropPrefix(t testing.TB, u, prefix string) {
	base := httpBase(t, u)
	resp, err := http.Get(base + "/v1/schema")
	if err != nil {
		t.Errorf("list classes: %v", err)
		return
	}
	defer resp.Body.Close()
	var schema struct {
		Classes []struct {
			Class string `json:"class"`
		} `json:"classes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&schema); err != nil {
		t.Errorf("list classes: %v", err)
		return
	}
	for _, c := range schema.Classes {
		if strings.HasPrefix(c.Class, prefix) {
			req, _ := http.NewRequest(http.MethodDelete, base+"/v1/schema/"+c.Class, nil)
			if resp, err := http.DefaultClient.Do(req); err != nil {
				t.Errorf("drop %s: %v", c.Class, err)
			} else {
				resp.Body.Close()
			}
		}
	}
}

func TestConformance(t *testing.T) {
	base := serverURL(t, "QUARRY_TEST_WEAVIATE_URL")
	storetest.Run(t, func(t *testing.T) *store.Store { return openFresh(t, base) })
}

// TestClusterConformance runs the suite on a three-node cluster: every
// class sharded over the nodes and replicated, reads and writes at QUORUM.
func TestClusterConformance(t *testing.T) {
	base := serverURL(t, "QUARRY_TEST_WEAVIATE_CLUSTER_URL")
	storetest.Run(t, func(t *testing.T) *store.Store { return openFresh(t, base) })
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
