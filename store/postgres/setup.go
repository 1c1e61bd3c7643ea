package postgres

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// SchemaVersion is the layout of the quarry_* tables this Quarry reads and
// writes; it is recorded in quarry_meta at setup.
const SchemaVersion = 2

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

// documentTableColumns are quarry_documents' columns and their types;
// none when the table does not exist.
func documentTableColumns(ctx context.Context, db conn) (map[string]string, error) {
	rows, err := db.Query(ctx, `SELECT a.attname, format_type(a.atttypid, NULL) FROM pg_attribute a
		WHERE a.attrelid = to_regclass('quarry_documents') AND a.attnum > 0 AND NOT a.attisdropped`)
	if err != nil {
		return nil, fmt.Errorf("postgres: inspect quarry_documents: %w", err)
	}
	got := map[string]string{}
	var name, typ string
	if _, err := pgx.ForEachRow(rows, []any{&name, &typ}, func() error { got[name] = typ; return nil }); err != nil {
		return nil, fmt.Errorf("postgres: inspect quarry_documents: %w", err)
	}
	return got, nil
}

// checkColumns compares quarry_documents' columns, when the table exists,
// with the ones Quarry creates.
func checkColumns(ctx context.Context, db conn) error {
	got, err := documentTableColumns(ctx, db)
	if err != nil {
		return err
	}
	if len(got) == 0 {
		return nil // not created yet
	}
	cols := make([]string, 0, len(documentColumns))
	for c := range documentColumns {
		cols = append(cols, c)
	}
	sort.Strings(cols)
	if _, has := got["search_id"]; !has && maps.Equal(got, v1DocumentColumns()) {
		return errors.New("postgres: the quarry_* tables have an older Quarry's layout (version 1): upgrade them in place with `quarry migrate --upgrade --store URL` (as their owner)")
	}
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
	origin        text NOT NULL DEFAULT '',
	PRIMARY KEY (collection_id, source_type, source_name)
);
ALTER TABLE quarry_sources ADD COLUMN IF NOT EXISTS origin text NOT NULL DEFAULT '';
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
		if _, err := tx.Exec(ctx, setupSQL+hierarchySQL+settingsSQL+fragmentSQL); err != nil {
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
