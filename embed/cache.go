package embed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// Cache stores vectors by model and content hash, so re-ingesting unchanged
// text makes no embedding call.
type Cache interface {
	// Get returns the cached vectors for the keys it has.
	Get(ctx context.Context, model ModelInfo, keys []string) (map[string][]float32, error)
	// Put stores vectors by key.
	Put(ctx context.Context, model ModelInfo, vecs map[string][]float32) error
}

// CacheKey is the cache key of a text: the hex SHA-256 of its bytes.
func CacheKey(text string) string {
	s := sha256.Sum256([]byte(text))
	return hex.EncodeToString(s[:])
}

// Cached consults Cache before Embedder and stores what it had to compute.
// Identical texts in one call are embedded once.
type Cached struct {
	Embedder Embedder
	Cache    Cache
}

// Model implements Embedder.
func (c Cached) Model() ModelInfo { return c.Embedder.Model() }

// Embed implements Embedder.
func (c Cached) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	m := c.Model()
	keys := make([]string, len(texts))
	for i, t := range texts {
		keys[i] = CacheKey(t)
	}
	hit, err := c.Cache.Get(ctx, m, keys)
	if err != nil {
		return nil, fmt.Errorf("embedding cache: %w", err)
	}
	var missTexts []string
	missAt := map[string]bool{}
	for i, k := range keys {
		if _, ok := hit[k]; !ok && !missAt[k] {
			missAt[k] = true
			missTexts = append(missTexts, texts[i])
		}
	}
	if len(missTexts) > 0 {
		vecs, err := c.Embedder.Embed(ctx, missTexts)
		if err != nil {
			return nil, err
		}
		if err := checkVectors(m, len(missTexts), vecs); err != nil {
			return nil, err
		}
		fresh := make(map[string][]float32, len(vecs))
		for i, v := range vecs {
			k := CacheKey(missTexts[i])
			fresh[k] = v
			hit[k] = v
		}
		if err := c.Cache.Put(ctx, m, fresh); err != nil {
			return nil, fmt.Errorf("embedding cache: %w", err)
		}
	}
	out := make([][]float32, len(texts))
	for i, k := range keys {
		out[i] = hit[k]
	}
	return out, nil
}
