package opensearch_test

import (
	"context"
	"testing"

	"github.com/quarry-rag/quarry/internal/scifacttest"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/opensearch/opensearchtest"
)

// TestSciFactBesideEmbedded: on SciFact with the hash embedder, the store
// on OpenSearch and on Elasticsearch (through the fake: exact vector
// search, Lucene's BM25 over the terms of Quarry's analyzer) ranks within
// two points of nDCG@10 of the embedded store in every mode, and the
// engines' own fusion (hybrid=opensearch, hybrid=elasticsearch) within two
// points of Quarry's; the figures are logged.
func TestSciFactBesideEmbedded(t *testing.T) {
	sf := scifacttest.Load(t)
	ctx := context.Background()
	near := func(what string, got float64, mode store.Mode) {
		want := sf.Embedded(t, mode)
		t.Logf("%s: nDCG@10 %.4f, embedded %.4f", what, got, want)
		if d := want - got; d > 0.02 || d < -0.02 {
			t.Errorf("%s: nDCG@10 %.4f, embedded %.4f", what, got, want)
		}
	}
	for _, eng := range []struct {
		name string
		opts []opensearchtest.Option
	}{{"opensearch", nil}, {"elasticsearch", []opensearchtest.Option{opensearchtest.Elasticsearch()}}} {
		srv := fake(t, eng.opts...)
		qs, err := store.Open(ctx, srv.StoreURL("prefix=scifact"))
		if err != nil {
			t.Fatal(err)
		}
		defer qs.Close()
		c := sf.Index(t, qs)
		for _, mode := range []store.Mode{store.ModeKeyword, store.ModeVector, store.ModeHybrid} {
			near(eng.name+" (fake) "+string(mode), sf.NDCG(t, c, mode), mode)
		}
		// The engine's fusion reads the same collection.
		ns, err := store.Open(ctx, srv.StoreURL("prefix=scifact&hybrid="+eng.name))
		if err != nil {
			t.Fatal(err)
		}
		defer ns.Close()
		nc, err := ns.Collection(ctx, "scifact")
		if err != nil {
			t.Fatal(err)
		}
		near(eng.name+" (fake) hybrid="+eng.name, sf.NDCG(t, nc, store.ModeHybrid), store.ModeHybrid)
	}
}
