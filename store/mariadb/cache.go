package mariadb

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/quarry-rag/quarry/embed"
)

const cacheSQL = `CREATE TABLE IF NOT EXISTS quarry_embedding_cache (
	model  VARBINARY(255) NOT NULL,
	k      VARBINARY(64) NOT NULL,
	vec    LONGBLOB NOT NULL,
	PRIMARY KEY (model, k)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`

// EmbeddingCache implements store.EmbeddingCacher: embeddings by model and
// text hash in quarry_embedding_cache, so a text re-ingested is never
// embedded again.
func (b *Backend) EmbeddingCache() embed.Cache { return cache{b} }

type cache struct{ b *Backend }

// Get implements embed.Cache.
func (c cache) Get(ctx context.Context, m embed.ModelInfo, keys []string) (map[string][]float32, error) {
	out := make(map[string][]float32, len(keys))
	for start := 0; start < len(keys); start += insertBatch {
		part := keys[start:min(start+insertBatch, len(keys))]
		args := []any{m.String()}
		for _, k := range part {
			args = append(args, k)
		}
		rows, err := c.b.db.QueryContext(ctx, `SELECT k, vec FROM quarry_embedding_cache WHERE model = ? AND k IN (`+placeholders(len(part))+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("mariadb: read the embedding cache: %w", err)
		}
		for rows.Next() {
			var (
				k   string
				raw []byte
			)
			if err := rows.Scan(&k, &raw); err != nil {
				rows.Close()
				return nil, fmt.Errorf("mariadb: read the embedding cache: %w", err)
			}
			if len(raw) == 4*m.Dimension { // another dimension is not this model's
				v := make([]float32, m.Dimension)
				for i := range v {
					v[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
				}
				out[k] = v
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("mariadb: read the embedding cache: %w", err)
		}
	}
	return out, nil
}

// Put implements embed.Cache.
func (c cache) Put(ctx context.Context, m embed.ModelInfo, vecs map[string][]float32) error {
	var args []any
	flush := func() error {
		if len(args) == 0 {
			return nil
		}
		n := len(args) / 3
		q := `INSERT INTO quarry_embedding_cache (model, k, vec) VALUES (?, ?, ?)` + strings.Repeat(`, (?, ?, ?)`, n-1) +
			` ON DUPLICATE KEY UPDATE vec = VALUES(vec)`
		if _, err := c.b.db.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("mariadb: write the embedding cache: %w", err)
		}
		args = args[:0]
		return nil
	}
	for k, v := range vecs {
		raw := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(x))
		}
		args = append(args, m.String(), k, raw)
		if len(args) >= 3*insertBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}
