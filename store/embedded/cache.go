package embedded

import (
	"context"
	"fmt"

	"github.com/quarry-rag/quarry/embed"
)

// EmbeddingCache returns the store's persistent embedding cache: vectors by
// model identity and content hash, in quarry.db beside the documents.
func (b *Backend) EmbeddingCache() embed.Cache { return cache{b} }

type cache struct{ b *Backend }

// Get implements embed.Cache.
func (c cache) Get(ctx context.Context, m embed.ModelInfo, keys []string) (map[string][]float32, error) {
	out := make(map[string][]float32, len(keys))
	model := m.String()
	for start := 0; start < len(keys); start += maxParams {
		part := keys[start:min(start+maxParams, len(keys))]
		args := make([]any, 0, len(part)+1)
		args = append(args, model)
		for _, k := range part {
			args = append(args, k)
		}
		rows, err := c.b.r.QueryContext(ctx, `SELECT key, vector FROM embedding_cache WHERE model = ? AND key IN (`+placeholders(len(part))+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("read embedding cache: %w", err)
		}
		for rows.Next() {
			var k string
			var blob []byte
			if err := rows.Scan(&k, &blob); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read embedding cache: %w", err)
			}
			v, err := decodeVector(blob)
			if err != nil || len(v) != m.Dimension {
				continue // a damaged entry is a miss: it is recomputed and replaced
			}
			out[k] = v
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("read embedding cache: %w", err)
		}
	}
	return out, nil
}

// Put implements embed.Cache.
func (c cache) Put(ctx context.Context, m embed.ModelInfo, vecs map[string][]float32) error {
	if len(vecs) == 0 {
		return nil
	}
	tx, err := c.b.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("write embedding cache: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	st, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO embedding_cache(model, key, vector) VALUES (?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("write embedding cache: %w", err)
	}
	defer st.Close()
	model := m.String()
	for k, v := range vecs {
		if _, err := st.ExecContext(ctx, model, k, encodeVector(v)); err != nil {
			return fmt.Errorf("write embedding cache: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("write embedding cache: %w", err)
	}
	return nil
}
