package pinecone_test

import (
	"context"
	"testing"

	"github.com/quarry-rag/quarry/internal/scifacttest"
	"github.com/quarry-rag/quarry/store"
)

// TestSciFactBesideEmbedded: on SciFact with the hash embedder, the
// Pinecone store (through the fake, whose vector search is exact) ranks
// within two points of nDCG@10 of the embedded store in every mode:
// keyword search is BM25 by the sparse index's dot product, whose fixed
// average length is the one difference from the embedded store's.
func TestSciFactBesideEmbedded(t *testing.T) {
	sf := scifacttest.Load(t)
	ps, err := store.Open(context.Background(), fake(t).StoreURL("prefix=scifact"))
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	c := sf.Index(t, ps)
	for _, mode := range []store.Mode{store.ModeKeyword, store.ModeVector, store.ModeHybrid} {
		got, want := sf.NDCG(t, c, mode), sf.Embedded(t, mode)
		t.Logf("%s: nDCG@10 %.4f on Pinecone (fake), %.4f embedded", mode, got, want)
		if d := want - got; d > 0.02 || d < -0.02 {
			t.Errorf("%s: nDCG@10 %.4f on Pinecone, %.4f embedded", mode, got, want)
		}
	}
}
