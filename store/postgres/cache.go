package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/quarry-rag/quarry/embed"
)

// EmbeddingCache returns the store's persistent embedding cache, in the
// quarry_embedding_cache table.
func (b *Backend) EmbeddingCache() embed.Cache { return pgCache{b} }

type pgCache struct{ b *Backend }

// Get implements embed.Cache.
func (c pgCache) Get(ctx context.Context, m embed.ModelInfo, keys []string) (map[string][]float32, error) {
	rows, err := c.b.db.Query(ctx, `SELECT key, vector FROM quarry_embedding_cache WHERE model = $1 AND key = ANY($2)`, m.String(), keys)
	if err != nil {
		return nil, fmt.Errorf("read embedding cache: %w", err)
	}
	out := make(map[string][]float32, len(keys))
	var k string
	var v pgvector.Vector
	_, err = pgx.ForEachRow(rows, []any{&k, &v}, func() error {
		if vec := v.Slice(); len(vec) == m.Dimension {
			out[k] = append([]float32(nil), vec...)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read embedding cache: %w", err)
	}
	return out, nil
}

// Put implements embed.Cache.
func (c pgCache) Put(ctx context.Context, m embed.ModelInfo, vecs map[string][]float32) error {
	batch := &pgx.Batch{}
	for k, v := range vecs {
		batch.Queue(`INSERT INTO quarry_embedding_cache(model, key, vector) VALUES ($1, $2, $3)
			ON CONFLICT (model, key) DO UPDATE SET vector = excluded.vector`, m.String(), k, pgvector.NewVector(v))
	}
	if err := c.b.db.SendBatch(ctx, batch).Close(); err != nil {
		return fmt.Errorf("write embedding cache: %w", err)
	}
	return nil
}
