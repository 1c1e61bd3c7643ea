package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/store"
)

// languages maps Quarry's analyzer languages to text search configurations.
var languages = map[string]string{
	"": "english", "english": "english", "german": "german", "french": "french", "spanish": "spanish",
	"italian": "italian", "dutch": "dutch", "portuguese": "portuguese", "simple": "simple",
}

// CreateCollection implements store.Backend: it inserts the collection and
// builds its partial HNSW index.
func (b *Backend) CreateCollection(ctx context.Context, cfg store.CollectionConfig) error {
	if cfg.Model.Dimension > MaxHNSWDimension {
		return fmt.Errorf("collection %q: pgvector's HNSW index supports at most %d dimensions, the model has %d: choose a smaller embedding model (or its shortened output)",
			cfg.Name, MaxHNSWDimension, cfg.Model.Dimension)
	}
	if _, ok := languages[cfg.Language]; !ok {
		return fmt.Errorf("collection %q: language %q has no PostgreSQL text search configuration", cfg.Name, cfg.Language)
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("encode configuration: %w", err)
	}
	return pgx.BeginFunc(ctx, b.db, func(tx pgx.Tx) error {
		var cid int
		err := tx.QueryRow(ctx, `INSERT INTO quarry_collections(name, config) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING RETURNING id`, cfg.Name, raw).Scan(&cid)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrCollectionExists
		}
		if err != nil {
			return fmt.Errorf("insert collection: %w", err)
		}
		// Identifiers and the dimension are integers Quarry generated, never input.
		idx := fmt.Sprintf(`CREATE INDEX quarry_hnsw_%d ON quarry_documents USING hnsw ((embedding::vector(%d)) vector_cosine_ops) WHERE collection_id = %d`,
			cid, cfg.Model.Dimension, cid)
		if _, err := tx.Exec(ctx, idx); err != nil {
			return fmt.Errorf("create vector index: %w", err)
		}
		for _, stmt := range fieldIndexes(cid, cfg.Schema) {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("create field index: %w", err)
			}
		}
		return nil
	})
}

type collInfo struct {
	id  int
	cfg store.CollectionConfig
}

func (b *Backend) info(ctx context.Context, name string) (collInfo, error) {
	var ci collInfo
	var raw []byte
	err := b.db.QueryRow(ctx, `SELECT id, config FROM quarry_collections WHERE name = $1`, name).Scan(&ci.id, &raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return ci, store.ErrCollectionNotFound
	}
	if err != nil {
		return ci, fmt.Errorf("read collection: %w", err)
	}
	if err := json.Unmarshal(raw, &ci.cfg); err != nil {
		return ci, fmt.Errorf("collection %q: stored configuration is corrupt: %w", name, err)
	}
	return ci, nil
}

// LoadCollection implements store.Backend.
func (b *Backend) LoadCollection(ctx context.Context, name string) (store.CollectionConfig, error) {
	ci, err := b.info(ctx, name)
	return ci.cfg, err
}

// ListCollections implements store.Backend.
func (b *Backend) ListCollections(ctx context.Context) ([]store.CollectionConfig, error) {
	rows, err := b.db.Query(ctx, `SELECT config FROM quarry_collections ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list collections: %w", err)
	}
	var out []store.CollectionConfig
	var raw []byte
	_, err = pgx.ForEachRow(rows, []any{&raw}, func() error {
		var cfg store.CollectionConfig
		if err := json.Unmarshal(raw, &cfg); err != nil {
			return fmt.Errorf("stored configuration is corrupt: %w", err)
		}
		out = append(out, cfg)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list collections: %w", err)
	}
	return out, nil
}

// DropCollection implements store.Backend.
func (b *Backend) DropCollection(ctx context.Context, name string) error {
	return pgx.BeginFunc(ctx, b.db, func(tx pgx.Tx) error {
		var cid int
		err := tx.QueryRow(ctx, `DELETE FROM quarry_collections WHERE name = $1 RETURNING id`, name).Scan(&cid)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrCollectionNotFound
		}
		if err != nil {
			return fmt.Errorf("delete collection: %w", err)
		}
		rows, err := tx.Query(ctx, `SELECT indexname FROM pg_indexes WHERE tablename = 'quarry_documents'
			AND (indexname = $1 OR indexname LIKE $2) AND schemaname = ANY(current_schemas(false))`,
			fmt.Sprintf("quarry_hnsw_%d", cid), fmt.Sprintf(`quarry\_f\_%d\_%%`, cid))
		if err != nil {
			return fmt.Errorf("list collection indexes: %w", err)
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("list collection indexes: %w", err)
		}
		for _, n := range names {
			// Names Quarry generated from the collection's numeric id.
			if _, err := tx.Exec(ctx, `DROP INDEX IF EXISTS `+pgx.Identifier{n}.Sanitize()); err != nil {
				return fmt.Errorf("drop index %s: %w", n, err)
			}
		}
		return nil
	})
}

// fieldIndexes are the partial indexes of a collection's filterable fields:
// a B-tree on the field's jsonb value, which serves eq, in and ranges as
// compileFilter writes them, and GIN for string[] fields, which serves
// contains_any (?|) and contains_all (?&). Field names are schema-checked
// identifiers ([A-Za-z_][A-Za-z0-9_]*), so they are safe as literals.
func fieldIndexes(cid int, s *document.Schema) []string {
	if s == nil {
		return nil
	}
	var out []string
	for i, f := range s.Fields {
		if !f.Filterable {
			continue
		}
		using := ""
		if f.Type == document.TypeStringList {
			using = "USING gin "
		}
		out = append(out, fmt.Sprintf(`CREATE INDEX quarry_f_%d_%d ON quarry_documents %s((metadata->'%s')) WHERE collection_id = %d`, cid, i, using, f.Name, cid))
	}
	return out
}
