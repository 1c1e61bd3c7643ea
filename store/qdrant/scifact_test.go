package qdrant_test

import (
	"context"
	"testing"

	"github.com/quarry-rag/quarry/internal/scifacttest"
	"github.com/quarry-rag/quarry/store"
)

// TestSciFactBesideEmbedded: on SciFact with the hash embedder, the Qdrant
// store (through the fake, whose vector search is exact and whose BM25
// idf is Qdrant's) ranks within two points of nDCG@10 of the embedded
// store in every mode; the figures are logged. Keyword ranking differs a
// little because Qdrant's sparse vectors carry term frequencies weighted
// for a fixed average length (docs/stores.md).
func TestSciFactBesideEmbedded(t *testing.T) {
	sf := scifacttest.Load(t)
	qs, err := store.Open(context.Background(), fake(t).StoreURL("prefix=scifact"))
	if err != nil {
		t.Fatal(err)
	}
	defer qs.Close()
	c := sf.Index(t, qs)
	for _, mode := range []store.Mode{store.ModeKeyword, store.ModeVector, store.ModeHybrid} {
		got, want := sf.NDCG(t, c, mode), sf.Embedded(t, mode)
		t.Logf("%s: nDCG@10 %.4f on Qdrant (fake), %.4f embedded", mode, got, want)
		if d := want - got; d > 0.02 || d < -0.02 {
			t.Errorf("%s: nDCG@10 %.4f on Qdrant, %.4f embedded", mode, got, want)
		}
	}
}
