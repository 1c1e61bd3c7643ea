package embedded_test

import (
	"context"
	"testing"

	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/embed/hash"
)

// counting wraps an embedder and counts the texts it is asked to embed.
type counting struct {
	embed.Embedder
	texts int
}

func (c *counting) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.texts += len(texts)
	return c.Embedder.Embed(ctx, texts)
}

func TestEmbeddingCachePersists(t *testing.T) {
	dir := t.TempDir()
	h, err := hash.New(hash.Config{Dimension: 64})
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"alpha", "beta", "alpha", "gamma"}
	s, b := openStore(t, dir)
	inner := &counting{Embedder: h}
	first, err := embed.Cached{Embedder: inner, Cache: b.EmbeddingCache()}.Embed(t.Context(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if inner.texts != 3 {
		t.Errorf("embedded %d texts, want 3 (duplicates once)", inner.texts)
	}
	s.Close()

	s, b = openStore(t, dir)
	defer s.Close()
	inner = &counting{Embedder: h}
	again, err := embed.Cached{Embedder: inner, Cache: b.EmbeddingCache()}.Embed(t.Context(), append(texts, "delta"))
	if err != nil {
		t.Fatal(err)
	}
	if inner.texts != 1 {
		t.Errorf("after reopen embedded %d texts, want only the new one", inner.texts)
	}
	for i := range first {
		for j := range first[i] {
			if first[i][j] != again[i][j] {
				t.Fatalf("cached vector %d differs", i)
			}
		}
	}
	// Another model never reads these entries.
	other, _ := hash.New(hash.Config{Dimension: 32})
	inner = &counting{Embedder: other}
	if _, err := (embed.Cached{Embedder: inner, Cache: b.EmbeddingCache()}).Embed(t.Context(), texts); err != nil {
		t.Fatal(err)
	}
	if inner.texts != 3 {
		t.Errorf("another model hit the cache: embedded %d", inner.texts)
	}
}
