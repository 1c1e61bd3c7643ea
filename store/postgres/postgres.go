// Package postgres is Quarry's scale-out store on PostgreSQL with pgvector.
//
// All collections share one table, quarry_documents, whose embedding column
// is an untyped vector, so collections may differ in dimension; each
// collection gets its own partial HNSW index on (embedding::vector(n))
// WHERE collection_id = its id. Metadata is jsonb with a GIN index, and a
// generated tsvector over title and content (language per collection)
// serves keyword search with BM25 computed in SQL (or pg_search's BM25 when
// ParadeDB is installed). Filters compile to
// SQL with bound parameters only.
//
// Setup (creating the extension, tables and indexes) needs an owner role;
// afterwards reads and writes need only DML grants. Importing the package
// registers the "postgres://" and "postgresql://" URL schemes.
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgvector/pgvector-go"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
)

func init() { store.Register("postgres", driver{}) }

type driver struct{}

func (driver) Open(ctx context.Context, url string) (store.Backend, error) {
	return Open(ctx, url)
}

// MaxHNSWDimension is pgvector's limit for an HNSW index on vector.
const MaxHNSWDimension = 2000

// Backend is the PostgreSQL store.Backend.
type Backend struct {
	pool *pgxpool.Pool // nil when bound to a caller's transaction
	db   conn
	// bm25 is set when ParadeDB's pg_search is installed and its index
	// exists: keyword search then ranks with its BM25.
	bm25 bool
	// copyMin is the batch size from which writes use COPY (copyThreshold;
	// benchmarks move it to time both paths).
	copyMin int
}

// conn is what both a pool and a transaction offer; Begin on a transaction
// opens a savepoint, so every write below nests inside a caller's
// transaction without committing it.
type conn interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, rows pgx.CopyFromSource) (int64, error)
}

// SchemaVersion is the layout of the quarry_* tables this Quarry reads and
// writes; it is recorded in quarry_meta at setup.
const SchemaVersion = 2

// Open connects and makes sure the tables exist, creating them when the
// role may; a store set up by another Quarry version, or tables of the same
// names that are not Quarry's, are reported instead of used.
func Open(ctx context.Context, url string) (*Backend, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	b := &Backend{pool: pool, db: pool, copyMin: copyThreshold}
	if err := b.open(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return b, nil
}

func (b *Backend) open(ctx context.Context) error {
	ready, err := b.ready(ctx)
	if err != nil {
		return err
	}
	if !ready {
		if err := b.Setup(ctx); err != nil {
			return err
		}
	}
	if err := b.checkSchema(ctx); err != nil {
		return err
	}
	b.bm25, err = b.detectBM25(ctx)
	return err
}

// WithTx returns a view of the store whose reads and writes run inside tx:
// each write is a savepoint, so a failed batch rolls back alone and the
// caller's transaction decides whether anything is committed. Like tx
// itself, the view is for one goroutine; closing it does not end tx.
func (b *Backend) WithTx(tx pgx.Tx) *Backend {
	return &Backend{db: tx, bm25: b.bm25, copyMin: b.copyMin}
}

// Begin starts a transaction for WithTx.
func (b *Backend) Begin(ctx context.Context) (pgx.Tx, error) {
	tx, err := b.db.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres: begin: %w", err)
	}
	return tx, nil
}

// Analyze refreshes the planner's statistics of the documents table, which
// lag a bulk load until autovacuum gets to it; meanwhile the planner can
// pick a sequential scan over the HNSW index (31 ms against 2.6 ms on
// SciFact). A role that does not own the table is skipped by PostgreSQL
// with a warning, not an error.
func (b *Backend) Analyze(ctx context.Context) error {
	if _, err := b.db.Exec(ctx, `ANALYZE quarry_documents`); err != nil {
		return fmt.Errorf("postgres: analyze: %w", err)
	}
	return nil
}

// tables are the tables setupSQL creates.
var tables = []string{"quarry_meta", "quarry_collections", "quarry_documents", "quarry_sources", "quarry_embedding_cache", "quarry_jobs", "quarry_threads",
	"quarry_nodes", "quarry_node_chunks", "quarry_node_links"}

// ready reports whether every table exists, so a role with only DML grants
// can open a store an owner has set up.
func (b *Backend) ready(ctx context.Context) (bool, error) {
	var n int
	if err := b.db.QueryRow(ctx, `SELECT count(*) FROM unnest($1::text[]) t WHERE to_regclass(t) IS NOT NULL`, tables).Scan(&n); err != nil {
		return false, fmt.Errorf("postgres: %w", err)
	}
	return n == len(tables), nil
}

// documentColumns are quarry_documents' columns and types as Quarry
// creates them; a table of that name without them is someone else's.
var documentColumns = map[string]string{
	"collection_id": "integer", "id": "text", "search_id": "bigint", "content": "text", "source_type": "text",
	"source_name": "text", "metadata": "jsonb", "embedding": "vector", "provenance": "jsonb", "lang": "regconfig", "tsv": "tsvector",
}

// checkSchema compares the recorded schema version and the documents
// table's columns with what this Quarry expects.
func (b *Backend) checkSchema(ctx context.Context) error {
	var v string
	err := b.db.QueryRow(ctx, `SELECT value FROM quarry_meta WHERE key = 'schema_version'`).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return errors.New("postgres: quarry_meta has no schema_version: the quarry_* tables were not created by Quarry's setup; run `quarry setup --store URL` on an empty schema")
	}
	if err != nil {
		return fmt.Errorf("postgres: read schema version: %w", err)
	}
	n, err := strconv.Atoi(v)
	switch {
	case err != nil:
		return fmt.Errorf("postgres: schema version %q is not a number: the quarry_* tables are not Quarry's", v)
	case n > SchemaVersion:
		return fmt.Errorf("postgres: the store has schema version %d, newer than this Quarry's %d: upgrade Quarry", n, SchemaVersion)
	case n < SchemaVersion:
		return fmt.Errorf("postgres: the store has schema version %d, older than this Quarry's %d: migrate it with `quarry migrate --from OLD --to NEW` into a new schema", n, SchemaVersion)
	}
	return checkColumns(ctx, b.db)
}

// checkColumns compares quarry_documents' columns, when the table exists,
// with the ones Quarry creates.
func checkColumns(ctx context.Context, db conn) error {
	rows, err := db.Query(ctx, `SELECT a.attname, format_type(a.atttypid, NULL) FROM pg_attribute a
		WHERE a.attrelid = to_regclass('quarry_documents') AND a.attnum > 0 AND NOT a.attisdropped`)
	if err != nil {
		return fmt.Errorf("postgres: inspect quarry_documents: %w", err)
	}
	got := map[string]string{}
	var name, typ string
	if _, err := pgx.ForEachRow(rows, []any{&name, &typ}, func() error { got[name] = typ; return nil }); err != nil {
		return fmt.Errorf("postgres: inspect quarry_documents: %w", err)
	}
	if len(got) == 0 {
		return nil // not created yet
	}
	cols := make([]string, 0, len(documentColumns))
	for c := range documentColumns {
		cols = append(cols, c)
	}
	sort.Strings(cols)
	for _, c := range cols {
		if got[c] != documentColumns[c] {
			have := got[c]
			if have == "" {
				have = "no such column"
			}
			return fmt.Errorf("postgres: table quarry_documents is not compatible with Quarry: column %s should be %s (%s); use another schema (search_path) or drop the table", c, documentColumns[c], have)
		}
	}
	return nil
}

// detectBM25 reports whether pg_search is installed and Quarry's BM25 index
// exists (setup creates it when the extension is there).
func (b *Backend) detectBM25(ctx context.Context) (bool, error) {
	var ok bool
	err := b.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_search')
		AND to_regclass('quarry_documents_bm25') IS NOT NULL`).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("postgres: detect pg_search: %w", err)
	}
	return ok, nil
}

// setupSQL creates what Quarry needs; it is idempotent.
const setupSQL = `
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE IF NOT EXISTS quarry_meta (
	key   text PRIMARY KEY,
	value text NOT NULL
);
CREATE TABLE IF NOT EXISTS quarry_collections (
	id       serial PRIMARY KEY,
	name     text NOT NULL UNIQUE,
	config   jsonb NOT NULL
);
CREATE TABLE IF NOT EXISTS quarry_documents (
	collection_id integer NOT NULL REFERENCES quarry_collections(id) ON DELETE CASCADE,
	id            text NOT NULL,
	search_id     bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
	content       text NOT NULL,
	source_type   text NOT NULL,
	source_name   text NOT NULL,
	metadata      jsonb NOT NULL,
	embedding     vector NOT NULL,
	provenance    jsonb NOT NULL,
	lang          regconfig NOT NULL,
	tsv           tsvector GENERATED ALWAYS AS (setweight(to_tsvector(lang, coalesce(metadata->>'title', '')), 'A') || setweight(to_tsvector(lang, content), 'A')) STORED,
	PRIMARY KEY (collection_id, id)
);
CREATE TABLE IF NOT EXISTS quarry_sources (
	collection_id integer NOT NULL REFERENCES quarry_collections(id) ON DELETE CASCADE,
	source_type   text NOT NULL,
	source_name   text NOT NULL,
	hash          text NOT NULL,
	chunks        integer NOT NULL,
	PRIMARY KEY (collection_id, source_type, source_name)
);
CREATE TABLE IF NOT EXISTS quarry_embedding_cache (
	model  text NOT NULL,
	key    text NOT NULL,
	vector vector NOT NULL,
	PRIMARY KEY (model, key)
);
CREATE TABLE IF NOT EXISTS quarry_jobs (
	id      text PRIMARY KEY,
	started timestamptz NOT NULL,
	body    jsonb NOT NULL
);
CREATE TABLE IF NOT EXISTS quarry_threads (
	thread  text NOT NULL,
	seq     integer NOT NULL,
	role    text NOT NULL,
	content text NOT NULL,
	data    text,
	created timestamptz NOT NULL,
	PRIMARY KEY (thread, seq)
);
CREATE INDEX IF NOT EXISTS quarry_documents_source ON quarry_documents (collection_id, source_type, source_name);
CREATE INDEX IF NOT EXISTS quarry_documents_metadata ON quarry_documents USING gin (metadata jsonb_path_ops);
CREATE INDEX IF NOT EXISTS quarry_documents_tsv ON quarry_documents USING gin (tsv);
INSERT INTO quarry_meta(key, value) VALUES ('schema_version', '2') ON CONFLICT (key) DO NOTHING;
`

// bm25SetupSQL indexes content for ParadeDB's BM25 when pg_search is
// installed; search_id is the unique key field pg_search requires (the
// primary key spans two columns), and collection_id rides in the index so
// the collection filter is applied inside it.
const bm25SetupSQL = `CREATE INDEX IF NOT EXISTS quarry_documents_bm25 ON quarry_documents
	USING bm25 (search_id, content, collection_id) WITH (key_field = 'search_id')`

// Setup creates the extension, tables and shared indexes, and the BM25
// index when pg_search is installed. Concurrent setups are serialised with
// an advisory lock.
func (b *Backend) Setup(ctx context.Context) error {
	return pgx.BeginFunc(ctx, b.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7412031)`); err != nil {
			return fmt.Errorf("postgres setup: %w", err)
		}
		// A table of Quarry's name that is someone else's is named as such,
		// not reported as whichever statement below trips over it.
		if err := checkColumns(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, setupSQL+hierarchySQL); err != nil {
			return fmt.Errorf("postgres setup (needs a role that may create the vector extension and tables): %w", err)
		}
		var paradedb bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_search')`).Scan(&paradedb); err != nil {
			return fmt.Errorf("postgres setup: %w", err)
		}
		if paradedb {
			if _, err := tx.Exec(ctx, bm25SetupSQL); err != nil {
				return fmt.Errorf("postgres setup: BM25 index for pg_search: %w", err)
			}
		}
		return nil
	})
}

// Dialect implements store.Backend.
func (b *Backend) Dialect() string { return Dialect }

// Close implements store.Backend.
func (b *Backend) Close() error {
	if b.pool != nil {
		b.pool.Close()
	}
	return nil
}

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

// Upsert implements store.Backend: one transaction (a savepoint inside a
// caller's transaction), so all or nothing.
func (b *Backend) Upsert(ctx context.Context, name string, docs []*document.Document) error {
	if len(docs) == 0 {
		return nil
	}
	ci, err := b.info(ctx, name)
	if err != nil {
		return err
	}
	rows, err := stageRows(docs)
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, b.db, func(tx pgx.Tx) error {
		if err := writeDocs(ctx, tx, ci, rows, b.copyMin); err != nil {
			return fmt.Errorf("write documents: %w", err)
		}
		return nil
	})
}

// copyThreshold is the batch size from which documents are written with
// COPY into a temporary table and one INSERT … SELECT; below it, one
// pipelined INSERT per document is cheaper than creating the table.
// BenchmarkUpsert on loopback: at 384 dimensions both paths run at the
// speed of HNSW maintenance from 64 documents (744 and 740 docs/s), while
// COPY costs 2–3× at 1–8 (one temporary table per batch); at 8 dimensions
// COPY leads from 64 (1,975 against 1,685 docs/s).
const copyThreshold = 64

// stageColumns are the columns of a staged document, in stageRows' order.
var stageColumns = []string{"ord", "id", "content", "source_type", "source_name", "metadata", "embedding", "provenance"}

// stageRows encodes documents as text columns: jsonb and vector are parsed
// by the server when the rows move into quarry_documents.
func stageRows(docs []*document.Document) ([][]any, error) {
	rows := make([][]any, len(docs))
	for i, d := range docs {
		md, err := document.MarshalValue(d.Metadata)
		if err != nil {
			return nil, fmt.Errorf("document %s: metadata: %w", d.ID, err)
		}
		if d.Metadata == nil {
			md = []byte("{}")
		}
		prov, err := json.Marshal(d.Provenance)
		if err != nil {
			return nil, fmt.Errorf("document %s: provenance: %w", d.ID, err)
		}
		rows[i] = []any{int32(i), d.ID, d.Content, d.SourceType, d.SourceName, string(md), vectorText(d.Embedding), string(prov)}
	}
	return rows, nil
}

// vectorText is pgvector's text form; 'g' with precision -1 for float32
// round-trips every value exactly.
func vectorText(v []float32) string {
	buf := make([]byte, 0, len(v)*10+2)
	buf = append(buf, '[')
	for i, x := range v {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendFloat(buf, float64(x), 'g', -1, 32)
	}
	return string(append(buf, ']'))
}

const upsertSet = `ON CONFLICT (collection_id, id) DO UPDATE SET content = excluded.content, source_type = excluded.source_type,
	source_name = excluded.source_name, metadata = excluded.metadata, embedding = excluded.embedding,
	provenance = excluded.provenance, lang = excluded.lang`

// writeDocs inserts or replaces staged rows in tx. When an id repeats in
// one batch, the last occurrence wins, as if written one after another;
// search_id stays that of the existing row.
func writeDocs(ctx context.Context, tx pgx.Tx, ci collInfo, rows [][]any, copyMin int) error {
	lang := languages[ci.cfg.Language]
	if len(rows) < copyMin {
		batch := &pgx.Batch{}
		for _, r := range rows {
			batch.Queue(`INSERT INTO quarry_documents(collection_id, id, content, source_type, source_name, metadata, embedding, provenance, lang)
				VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::vector, $8::jsonb, $9::regconfig) `+upsertSet,
				ci.id, r[1], r[2], r[3], r[4], r[5], r[6], r[7], lang)
		}
		return tx.SendBatch(ctx, batch).Close()
	}
	if _, err := tx.Exec(ctx, `CREATE TEMP TABLE quarry_stage (ord integer, id text, content text, source_type text,
		source_name text, metadata text, embedding text, provenance text) ON COMMIT DROP`); err != nil {
		return fmt.Errorf("stage: %w", err)
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"quarry_stage"}, stageColumns, pgx.CopyFromRows(rows)); err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO quarry_documents(collection_id, id, content, source_type, source_name, metadata, embedding, provenance, lang)
		SELECT DISTINCT ON (id) $1::integer, id, content, source_type, source_name, metadata::jsonb, embedding::vector, provenance::jsonb, $2::regconfig
		FROM quarry_stage ORDER BY id, ord DESC `+upsertSet, ci.id, lang); err != nil {
		return err
	}
	// Dropped now, not at commit, so a caller's transaction can stage again.
	_, err := tx.Exec(ctx, `DROP TABLE quarry_stage`)
	return err
}

// Sources implements store.SourceSyncer.
func (b *Backend) Sources(ctx context.Context, name string) ([]store.SourceState, error) {
	ci, err := b.info(ctx, name)
	if err != nil {
		return nil, err
	}
	rows, err := b.db.Query(ctx, `SELECT source_type, source_name, hash, chunks FROM quarry_sources WHERE collection_id = $1 ORDER BY source_type, source_name`, ci.id)
	if err != nil {
		return nil, fmt.Errorf("read sources: %w", err)
	}
	var out []store.SourceState
	var st store.SourceState
	_, err = pgx.ForEachRow(rows, []any{&st.Source.Type, &st.Source.Name, &st.Hash, &st.Chunks}, func() error {
		out = append(out, st)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read sources: %w", err)
	}
	return out, nil
}

// ReplaceSources implements store.SourceSyncer in one transaction.
func (b *Backend) ReplaceSources(ctx context.Context, name string, updates []store.SourceUpdate) error {
	if len(updates) == 0 {
		return nil
	}
	ci, err := b.info(ctx, name)
	if err != nil {
		return err
	}
	del, sources := &pgx.Batch{}, &pgx.Batch{}
	var docs []*document.Document
	for _, u := range updates {
		del.Queue(`DELETE FROM quarry_documents WHERE collection_id = $1 AND source_type = $2 AND source_name = $3`, ci.id, u.Source.Type, u.Source.Name)
		docs = append(docs, u.Docs...)
		if u.Hash == "" {
			sources.Queue(`DELETE FROM quarry_sources WHERE collection_id = $1 AND source_type = $2 AND source_name = $3`, ci.id, u.Source.Type, u.Source.Name)
		} else {
			sources.Queue(`INSERT INTO quarry_sources(collection_id, source_type, source_name, hash, chunks) VALUES ($1, $2, $3, $4, $5)
				ON CONFLICT (collection_id, source_type, source_name) DO UPDATE SET hash = excluded.hash, chunks = excluded.chunks`,
				ci.id, u.Source.Type, u.Source.Name, u.Hash, len(u.Docs))
		}
	}
	rows, err := stageRows(docs)
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, b.db, func(tx pgx.Tx) error {
		if err := tx.SendBatch(ctx, del).Close(); err != nil {
			return fmt.Errorf("replace sources: %w", err)
		}
		if len(rows) > 0 {
			if err := writeDocs(ctx, tx, ci, rows, b.copyMin); err != nil {
				return fmt.Errorf("replace sources: %w", err)
			}
		}
		if err := tx.SendBatch(ctx, sources).Close(); err != nil {
			return fmt.Errorf("replace sources: %w", err)
		}
		return nil
	})
}

const docColumns = `id, content, source_type, source_name, metadata::text, embedding, provenance::text`

// docRow is one row as scanned, before decoding.
type docRow struct {
	id, content, sourceType, sourceName, metadata, provenance string
	embedding                                                 pgvector.Vector
	score                                                     float64
}

// dest returns scan destinations for docColumns, plus the score when scored.
func (r *docRow) dest(scored bool) []any {
	d := []any{&r.id, &r.content, &r.sourceType, &r.sourceName, &r.metadata, &r.embedding, &r.provenance}
	if scored {
		d = append(d, &r.score)
	}
	return d
}

func (r *docRow) document() (*document.Document, error) {
	d := &document.Document{ID: r.id, Content: r.content, SourceType: r.sourceType, SourceName: r.sourceName}
	v, err := document.DecodeJSONValue([]byte(r.metadata))
	if err != nil {
		return nil, fmt.Errorf("document %s: metadata: %w", d.ID, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("document %s: stored metadata is not an object", d.ID)
	}
	for k := range m {
		if document.IsReserved(k) {
			return nil, fmt.Errorf("document %s: stored metadata field %q is reserved by Quarry: the row is corrupt", d.ID, k)
		}
	}
	d.Metadata = m
	if err := json.Unmarshal([]byte(r.provenance), &d.Provenance); err != nil {
		return nil, fmt.Errorf("document %s: provenance: %w", d.ID, err)
	}
	d.Embedding = r.embedding.Slice()
	return d, nil
}

// Get implements store.Backend.
func (b *Backend) Get(ctx context.Context, name string, ids []string) ([]*document.Document, error) {
	ci, err := b.info(ctx, name)
	if err != nil {
		return nil, err
	}
	rows, err := b.db.Query(ctx, `SELECT `+docColumns+` FROM quarry_documents WHERE collection_id = $1 AND id = ANY($2)`, ci.id, ids)
	if err != nil {
		return nil, fmt.Errorf("read documents: %w", err)
	}
	defer rows.Close()
	byID := map[string]*document.Document{}
	for rows.Next() {
		var r docRow
		if err := rows.Scan(r.dest(false)...); err != nil {
			return nil, fmt.Errorf("read documents: %w", err)
		}
		d, err := r.document()
		if err != nil {
			return nil, err
		}
		byID[d.ID] = d
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read documents: %w", err)
	}
	out := make([]*document.Document, 0, len(byID))
	for _, id := range ids {
		if d, ok := byID[id]; ok {
			out = append(out, d)
			delete(byID, id)
		}
	}
	return out, nil
}

// where builds the WHERE clause of a collection and a filter. It always
// starts with "collection_id = N", the filter following after " AND ":
// bm25CTE relies on that shape.
func where(cid int, f filter.Expr, argBase int) (string, []any, error) {
	w := "collection_id = " + strconv.Itoa(cid) // inlined so partial indexes apply
	if f == nil {
		return w, nil, nil
	}
	c, err := compileFilter(f, argBase)
	if err != nil {
		return "", nil, err
	}
	return w + " AND " + c.sql, c.args, nil
}

// Delete implements store.Backend.
func (b *Backend) Delete(ctx context.Context, name string, f filter.Expr) (int, error) {
	ci, err := b.info(ctx, name)
	if err != nil {
		return 0, err
	}
	w, args, err := where(ci.id, f, 0)
	if err != nil {
		return 0, err
	}
	var n int
	err = pgx.BeginFunc(ctx, b.db, func(tx pgx.Tx) error {
		// A source that loses chunks no longer matches its recorded hash.
		if _, err := tx.Exec(ctx, `DELETE FROM quarry_sources s USING (SELECT DISTINCT source_type, source_name FROM quarry_documents WHERE `+w+`) d
			WHERE s.collection_id = `+strconv.Itoa(ci.id)+` AND s.source_type = d.source_type AND s.source_name = d.source_name`, args...); err != nil {
			return fmt.Errorf("forget sources: %w", err)
		}
		tag, err := tx.Exec(ctx, `DELETE FROM quarry_documents WHERE `+w, args...)
		if err != nil {
			return fmt.Errorf("delete documents: %w", err)
		}
		n = int(tag.RowsAffected())
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// Count implements store.Backend.
func (b *Backend) Count(ctx context.Context, name string, f filter.Expr) (int, error) {
	ci, err := b.info(ctx, name)
	if err != nil {
		return 0, err
	}
	w, args, err := where(ci.id, f, 0)
	if err != nil {
		return 0, err
	}
	var n int
	if err := b.db.QueryRow(ctx, `SELECT count(*) FROM quarry_documents WHERE `+w, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count documents: %w", err)
	}
	return n, nil
}

// hnswMinEf is the floor of hnsw.ef_search. The embedded store's floor is
// 128 (hnsw.DefaultMinEfSearch); here 128 makes pgvector's cost model
// prefer a sequential scan on collections of a few thousand rows, which ran
// 31 ms against 2.6 ms at 64 on SciFact (BenchmarkSciFactStores).
const hnswMinEf = 64

// tieSlack extra rows let ties at the k-th place be ordered by id.
const tieSlack = 8

// SearchVector implements store.Backend. Iterative index scans keep a
// selective filter from starving the result: pgvector keeps walking the
// graph until k rows pass the filter.
func (b *Backend) SearchVector(ctx context.Context, name string, q []float32, f filter.Expr, k int) ([]*document.Document, error) {
	ci, err := b.info(ctx, name)
	if err != nil {
		return nil, err
	}
	w, args, err := where(ci.id, f, 1)
	if err != nil {
		return nil, err
	}
	sql := vectorSQL(strconv.Itoa(ci.cfg.Model.Dimension), w, k+tieSlack)
	var out []*document.Document
	err = pgx.BeginFunc(ctx, b.db, func(tx pgx.Tx) error {
		ef := max(hnswMinEf, 2*(k+tieSlack))
		if _, err := tx.Exec(ctx, `SET LOCAL hnsw.iterative_scan = relaxed_order; SET LOCAL hnsw.ef_search = `+strconv.Itoa(min(ef, 1000))); err != nil {
			return fmt.Errorf("configure search: %w", err)
		}
		out, err = queryScored(ctx, tx, sql, append([]any{pgvector.NewVector(q)}, args...)...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("vector search: %w", err)
	}
	return topK(out, k), nil
}

// SearchKeyword implements store.Backend. With ParadeDB's pg_search it
// ranks by pg_search's BM25 over content; otherwise by Okapi BM25 computed
// in SQL over the generated tsvector of title and content (see bm25CTE),
// with query terms ORed as BM25 matches.
func (b *Backend) SearchKeyword(ctx context.Context, name string, query string, f filter.Expr, k int) ([]*document.Document, error) {
	ci, err := b.info(ctx, name)
	if err != nil {
		return nil, err
	}
	lead := keywordArgs(b.bm25, languages[ci.cfg.Language], query)
	w, args, err := where(ci.id, f, len(lead))
	if err != nil {
		return nil, err
	}
	var out []*document.Document
	err = pgx.BeginFunc(ctx, b.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, keywordSettings); err != nil {
			return fmt.Errorf("configure search: %w", err)
		}
		out, err = queryScored(ctx, tx, keywordSQL(b.bm25, w, k), append(lead, args...)...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("keyword search: %w", err)
	}
	return topK(out, k), nil
}

// keywordSettings keep BM25's term conditions on the GIN index (see
// bm25CTE): with fresh statistics the planner chose a sequential scan per
// term (11 ms each on SciFact, 0.3 ms through the index).
const keywordSettings = `SET LOCAL enable_seqscan = off`

// keywordArgs are the leading arguments of keywordSQL: the query, and the
// text search configuration unless BM25 ranks.
func keywordArgs(bm25 bool, lang, query string) []any {
	if bm25 {
		return []any{query}
	}
	return []any{lang, query}
}

// keywordSQL selects the top k documents matching the query under the
// WHERE clause w. With bm25, $1 is the query and pg_search's ||| matches
// any of its terms (disjunction, as BM25 does); otherwise $1 is the text
// search configuration and $2 the query.
func keywordSQL(bm25 bool, w string, k int) string {
	if bm25 {
		return `SELECT ` + docColumns + `, pdb.score(search_id) AS score
		FROM quarry_documents WHERE content ||| $1 AND ` + w + `
		ORDER BY score DESC, id LIMIT ` + strconv.Itoa(k)
	}
	return `WITH ` + bm25CTE(w, k) + `
		SELECT ` + docColumns + `, kw.s AS score FROM kw JOIN quarry_documents USING (id) WHERE ` + w + `
		ORDER BY score DESC, id`
}

// bm25CTE defines kw(id, s): the top k documents under w by Okapi BM25
// (k1 0.9, b 0.4, as the embedded store) computed in SQL; $1 is the text
// search configuration and $2 the query. Document frequencies are counted
// over the collection through the GIN index. Scoring reads each candidate's
// tsvector, so candidates are first cut to the best max(100, 10·k) by
// ts_rank; a document's length is its number of distinct lexemes and the
// average is taken over the candidates. On SciFact this keeps the cost of
// ts_rank alone and moves keyword overlap@10 with the embedded store's BM25
// from 0.58 (ts_rank) to 0.79; see docs/stores.md for nDCG.
func bm25CTE(w string, k int) string {
	coll := w
	if i := strings.Index(w, " AND "); i >= 0 {
		coll = w[:i]
	}
	// "collection_id + 0" cannot use the primary key, which leaves the GIN
	// index on tsv for the term conditions: the terms are values the
	// planner cannot see, and it otherwise walked the whole collection by
	// its key for every term (12.7 ms a term on SciFact against 0.3 ms).
	noKey := strings.Replace(coll, "collection_id", "collection_id + 0", 1)
	wNoKey := noKey + strings.TrimPrefix(w, coll)
	return `terms AS MATERIALIZED (SELECT lexeme, quote_literal(lexeme)::tsquery AS tq FROM unnest(to_tsvector($1::regconfig, $2))),
		nd AS (SELECT count(*)::float8 AS n FROM quarry_documents WHERE ` + coll + `),
		idf AS MATERIALIZED (SELECT t.lexeme, ln(1 + (nd.n - d.df + 0.5) / (d.df + 0.5)) AS idf FROM terms t, nd,
			LATERAL (SELECT count(*)::float8 AS df FROM quarry_documents WHERE ` + noKey + ` AND tsv @@ t.tq) d),
		cand AS MATERIALIZED (SELECT id, tsv, length(tsv)::float8 AS dl FROM quarry_documents, (SELECT string_agg(tq::text, ' | ')::tsquery AS q FROM terms) tq
			WHERE tsv @@ tq.q AND ` + wNoKey + ` ORDER BY ts_rank(tsv, tq.q, 1) DESC LIMIT ` + strconv.Itoa(max(100, 10*k)) + `),
		avgdl AS (SELECT avg(dl) AS a FROM cand),
		tl AS (SELECT array_agg(lexeme) AS l FROM terms),
		tf AS MATERIALIZED (SELECT c.id, c.dl, u.lexeme, array_length(u.positions, 1)::float8 AS tf
			FROM cand c, tl, LATERAL (SELECT * FROM unnest(c.tsv) WHERE lexeme = ANY(tl.l)) u),
		kw AS (SELECT tf.id, sum(idf.idf * tf.tf * 1.9 / (tf.tf + 0.9 * (0.6 + 0.4 * tf.dl / avgdl.a))) AS s
			FROM tf JOIN idf USING (lexeme) CROSS JOIN avgdl
			GROUP BY tf.id ORDER BY s DESC, tf.id LIMIT ` + strconv.Itoa(k) + `)`
}

// vectorSQL selects the k nearest documents to $1 under w by cosine
// distance on the collection's dimension, which the partial index covers.
func vectorSQL(dim, w string, k int) string {
	return `SELECT ` + docColumns + `, 1 - (embedding::vector(` + dim + `) <=> $1::vector(` + dim + `)) AS score
		FROM quarry_documents WHERE ` + w + `
		ORDER BY embedding::vector(` + dim + `) <=> $1::vector(` + dim + `) LIMIT ` + strconv.Itoa(k)
}

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func queryScored(ctx context.Context, q querier, sql string, args ...any) ([]*document.Document, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*document.Document
	for rows.Next() {
		var r docRow
		if err := rows.Scan(r.dest(true)...); err != nil {
			return nil, err
		}
		d, err := r.document()
		if err != nil {
			return nil, err
		}
		d.SetScore(r.score)
		out = append(out, d)
	}
	return out, rows.Err()
}

func topK(docs []*document.Document, k int) []*document.Document {
	sort.SliceStable(docs, func(i, j int) bool { return store.Less(docs[i], docs[j]) })
	if len(docs) > k {
		docs = docs[:k]
	}
	return docs
}

// PutJob implements store.JobStore.
func (b *Backend) PutJob(ctx context.Context, j store.Job) error {
	raw, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("encode job: %w", err)
	}
	if _, err := b.db.Exec(ctx, `INSERT INTO quarry_jobs(id, started, body) VALUES ($1, $2, $3::text::jsonb)
		ON CONFLICT (id) DO UPDATE SET body = excluded.body`, j.ID, j.Started, string(raw)); err != nil {
		return fmt.Errorf("record job %s: %w", j.ID, err)
	}
	return nil
}

// GetJob implements store.JobStore.
func (b *Backend) GetJob(ctx context.Context, id string) (store.Job, error) {
	var raw string
	err := b.db.QueryRow(ctx, `SELECT body::text FROM quarry_jobs WHERE id = $1`, id).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Job{}, store.ErrJobNotFound
	}
	if err != nil {
		return store.Job{}, fmt.Errorf("read job %s: %w", id, err)
	}
	var j store.Job
	if err := json.Unmarshal([]byte(raw), &j); err != nil {
		return store.Job{}, fmt.Errorf("job %s is corrupt: %w", id, err)
	}
	return j, nil
}

// ListJobs implements store.JobStore.
func (b *Backend) ListJobs(ctx context.Context, limit int) ([]store.Job, error) {
	rows, err := b.db.Query(ctx, `SELECT body::text FROM quarry_jobs ORDER BY started DESC, id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	var out []store.Job
	var raw string
	_, err = pgx.ForEachRow(rows, []any{&raw}, func() error {
		var j store.Job
		if err := json.Unmarshal([]byte(raw), &j); err != nil {
			return fmt.Errorf("a job record is corrupt: %w", err)
		}
		out = append(out, j)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return out, nil
}

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

// Scan implements store.Scanner.
func (b *Backend) Scan(ctx context.Context, name string, after string, limit int) ([]*document.Document, error) {
	ci, err := b.info(ctx, name)
	if err != nil {
		return nil, err
	}
	rows, err := b.db.Query(ctx, `SELECT `+docColumns+` FROM quarry_documents WHERE collection_id = $1 AND id > $2 ORDER BY id COLLATE "C" LIMIT $3`, ci.id, after, limit)
	if err != nil {
		return nil, fmt.Errorf("scan documents: %w", err)
	}
	defer rows.Close()
	var out []*document.Document
	for rows.Next() {
		var r docRow
		if err := rows.Scan(r.dest(false)...); err != nil {
			return nil, fmt.Errorf("scan documents: %w", err)
		}
		d, err := r.document()
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}
