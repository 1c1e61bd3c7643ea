package chroma_test

import (
	"context"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/internal/scifacttest"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/chroma/chromatest"
)

// TestSciFactBesideEmbedded: on SciFact with the hash embedder, the store
// on a real Chroma server ranks within two points of nDCG@10 of the
// embedded store in every mode: vector search through Chroma's HNSW index,
// keyword search BM25 over Chroma's full-text index (its fixed average
// length is the one difference from the embedded store's); the figures
// and the time per query are logged. It talks to the server directly: the
// validating proxy would be most of the time measured.
func TestSciFactBesideEmbedded(t *testing.T) {
	sf := scifacttest.Load(t)
	srv := chromatest.New(t)
	cs, err := store.Open(context.Background(), srv.DirectURL(""))
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	c := sf.Index(t, cs)
	for _, mode := range []store.Mode{store.ModeKeyword, store.ModeVector, store.ModeHybrid} {
		start := time.Now()
		got := sf.NDCG(t, c, mode)
		per := time.Since(start) / time.Duration(len(sf.Queries))
		want := sf.Embedded(t, mode)
		t.Logf("%s: nDCG@10 %.4f on Chroma, %.4f embedded; %v a query on Chroma", mode, got, want, per.Round(time.Microsecond))
		if d := want - got; d > 0.02 || d < -0.02 {
			t.Errorf("%s: nDCG@10 %.4f on Chroma, %.4f embedded", mode, got, want)
		}
	}
}
