package meilisearch_test

import (
	"context"
	"testing"

	"github.com/quarry-rag/quarry/internal/scifacttest"
	"github.com/quarry-rag/quarry/store"
)

// TestSciFactBesideEmbedded: on SciFact with the hash embedder, the
// Meilisearch store (through the fake, whose vector search is exact)
// ranks vectors within two points of nDCG@10 of the embedded store.
// Keyword search is Meilisearch's own — the first ten words, every word
// required, then words dropped from the end — which the fake imitates
// without Meilisearch's ranking rules, so its figure and hybrid's are held
// to floors only (docs/stores.md).
func TestSciFactBesideEmbedded(t *testing.T) {
	sf := scifacttest.Load(t)
	ms, err := store.Open(context.Background(), fake(t).StoreURL("prefix=scifact"))
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	c := sf.Index(t, ms)
	floor := map[store.Mode]float64{store.ModeKeyword: 0.45, store.ModeHybrid: 0.50}
	for _, mode := range []store.Mode{store.ModeKeyword, store.ModeVector, store.ModeHybrid} {
		got, want := sf.NDCG(t, c, mode), sf.Embedded(t, mode)
		t.Logf("%s: nDCG@10 %.4f on Meilisearch (fake), %.4f embedded", mode, got, want)
		switch d := want - got; {
		case mode == store.ModeVector && (d > 0.02 || d < -0.02):
			t.Errorf("%s: nDCG@10 %.4f on Meilisearch, %.4f embedded", mode, got, want)
		case mode != store.ModeVector && got < floor[mode]:
			t.Errorf("%s: nDCG@10 %.4f on Meilisearch, below its floor of %.2f", mode, got, floor[mode])
		}
	}
}
