package embedded

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver

	"github.com/quarry-rag/quarry/document"
)

// schemaVersion is bumped with every incompatible change to the tables.
const schemaVersion = 1

// ddl creates the tables. SQLite is the only source of truth: every index
// can be rebuilt from these rows. journal records, per collection, which
// document ids each committed write touched, so a checkpoint that is behind
// is brought up to date by replaying only the newer writes.
const ddl = `
CREATE TABLE IF NOT EXISTS quarry_meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS collections (
	id     INTEGER PRIMARY KEY,
	name   TEXT NOT NULL UNIQUE,
	config TEXT NOT NULL,
	seq      INTEGER NOT NULL DEFAULT 0,
	ckpt_seq INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS documents (
	collection_id INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
	id            TEXT NOT NULL,
	seq           INTEGER NOT NULL,
	content       TEXT NOT NULL,
	source_type   TEXT NOT NULL,
	source_name   TEXT NOT NULL,
	metadata      TEXT NOT NULL,
	embedding     BLOB NOT NULL,
	provenance    TEXT NOT NULL,
	PRIMARY KEY (collection_id, id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS documents_source ON documents(collection_id, source_type, source_name);
CREATE TABLE IF NOT EXISTS sources (
	collection_id INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
	source_type   TEXT NOT NULL,
	source_name   TEXT NOT NULL,
	hash          TEXT NOT NULL,
	chunks        INTEGER NOT NULL,
	PRIMARY KEY (collection_id, source_type, source_name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS jobs (
	id      TEXT PRIMARY KEY,
	started INTEGER NOT NULL,
	body    TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS threads (
	thread  TEXT NOT NULL,
	seq     INTEGER NOT NULL,
	role    TEXT NOT NULL,
	content TEXT NOT NULL,
	data    BLOB,
	created INTEGER NOT NULL,
	PRIMARY KEY (thread, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS embedding_cache (
	model  TEXT NOT NULL,
	key    TEXT NOT NULL,
	vector BLOB NOT NULL,
	PRIMARY KEY (model, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS journal (
	collection_id INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
	seq           INTEGER NOT NULL,
	id            TEXT NOT NULL,
	deleted       INTEGER NOT NULL,
	PRIMARY KEY (collection_id, seq, id)
) WITHOUT ROWID;
`

// readerOptions size the reader connections' memory map and page cache,
// in bytes; 0 leaves SQLite's default (no map, 2 MB of cache).
type readerOptions struct{ mmap, cache int64 }

// openDB opens the database with one writer connection and a small pool of
// readers. WAL lets readers run while a write commits; synchronous=FULL
// makes an acknowledged write survive power loss, not only a process crash;
// write transactions begin IMMEDIATE, so writers in other processes wait
// for each other within the busy timeout instead of failing.
func openDB(ctx context.Context, path string, rd readerOptions) (w, r *sql.DB, err error) {
	q := url.Values{}
	for _, p := range []string{"journal_mode(WAL)", "synchronous(FULL)", "foreign_keys(1)", "busy_timeout(10000)"} {
		q.Add("_pragma", p)
	}
	// Every write transaction takes the write lock when it begins
	// (BEGIN IMMEDIATE). A deferred one that reads first and then writes
	// cannot be helped by the busy timeout: when another process wrote in
	// between, SQLite fails it at once with "database is locked" instead of
	// waiting, which is how concurrent `ingest` and `serve` used to lose
	// the hierarchy step.
	q.Set("_txlock", "immediate")
	dsn := "file:" + path + "?" + q.Encode()
	w, err = sql.Open("sqlite", dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	if _, err := w.ExecContext(ctx, ddl+hierarchyDDL); err != nil {
		w.Close()
		return nil, nil, fmt.Errorf("create tables in %s: %w", path, err)
	}
	if err := checkVersion(ctx, w); err != nil {
		w.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := addColumn(ctx, w, "sources", "origin", "TEXT NOT NULL DEFAULT ''"); err != nil {
		w.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	rq := url.Values{}
	for _, p := range []string{"foreign_keys(1)", "busy_timeout(10000)", "query_only(1)"} {
		rq.Add("_pragma", p)
	}
	// Readers map the database and keep a page cache of their own: a
	// search reads its hits' rows, whose content spills into overflow
	// pages, and through pread every one of those was a system call. The
	// map is address space, not memory: the kernel's page cache backs it.
	if rd.mmap > 0 {
		rq.Add("_pragma", fmt.Sprintf("mmap_size(%d)", rd.mmap))
	}
	if rd.cache > 0 {
		rq.Add("_pragma", fmt.Sprintf("cache_size(-%d)", rd.cache>>10))
	}
	r, err = sql.Open("sqlite", "file:"+path+"?"+rq.Encode())
	if err != nil {
		w.Close()
		return nil, nil, fmt.Errorf("open %s for reading: %w", path, err)
	}
	r.SetMaxOpenConns(4)
	return w, r, nil
}

// addColumn adds a column a newer Quarry keeps to a table of an older
// database, in place: additions only, so the schema version stays and an
// older Quarry still reads the database.
func addColumn(ctx context.Context, db *sql.DB, table, column, decl string) error {
	rows, err := db.QueryContext(ctx, `SELECT name FROM pragma_table_info(?)`, table)
	if err != nil {
		return fmt.Errorf("read the columns of %s: %w", table, err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return fmt.Errorf("read the columns of %s: %w", table, err)
		}
		if name == column {
			return nil
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the columns of %s: %w", table, err)
	}
	if _, err := db.ExecContext(ctx, fmt.Sprintf(`ALTER TABLE %s ADD COLUMN %s %s`, table, column, decl)); err != nil {
		return fmt.Errorf("add %s.%s: %w", table, column, err)
	}
	return nil
}

func checkVersion(ctx context.Context, db *sql.DB) error {
	var v string
	err := db.QueryRowContext(ctx, `SELECT value FROM quarry_meta WHERE key = 'schema_version'`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		_, err = db.ExecContext(ctx, `INSERT INTO quarry_meta(key, value) VALUES ('schema_version', ?)`, fmt.Sprint(schemaVersion))
		return err
	}
	if err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if v != fmt.Sprint(schemaVersion) {
		return fmt.Errorf("database schema version %s; this Quarry reads version %d", v, schemaVersion)
	}
	return nil
}

// row is a document as stored.
type row struct {
	id, content, sourceType, sourceName string
	metadata, provenance                string
	embedding                           []byte
}

// MetadataKey is the storage key of a document's metadata payload: the
// whole metadata as one JSON object, so undeclared and nested values
// round-trip exactly.
const MetadataKey = "_quarry_metadata"

// toStorage maps metadata to its stored form: the JSON payload under
// MetadataKey plus the schema's filterable fields projected beside it, for
// engines that index them as columns.
func toStorage(s *document.Schema, md map[string]any) (map[string]any, error) {
	payload, err := document.MarshalValue(md)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	out := map[string]any{MetadataKey: string(payload)}
	if s != nil {
		for _, f := range s.Fields {
			if v, ok := md[f.Name]; ok && f.Filterable {
				c, _ := document.Canonical(v)
				out[f.Name] = c
			}
		}
	}
	return out, nil
}

// hydrate reads metadata back from its stored form. A payload that is not a
// JSON string, not valid JSON, not an object, or holds a reserved key is
// corruption and an error: never silently dropped.
func hydrate(stored map[string]any) (map[string]any, error) {
	p, ok := stored[MetadataKey].(string)
	if !ok {
		return nil, fmt.Errorf("stored document metadata payload must be a JSON string, got %s", document.TypeName(stored[MetadataKey]))
	}
	return decodeMetadata(p)
}

func decodeMetadata(p string) (map[string]any, error) {
	v, err := document.DecodeJSONValue([]byte(p))
	if err != nil {
		return nil, fmt.Errorf("stored document metadata payload contains invalid JSON: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("stored document metadata payload must decode to an object, got %s", document.TypeName(v))
	}
	for k := range m {
		if document.IsReserved(k) || k == "" {
			return nil, fmt.Errorf("stored document metadata field %q is reserved by Quarry: the row is corrupt", k)
		}
	}
	return m, nil
}

func encodeRow(d *document.Document) (row, error) {
	md, err := document.MarshalValue(d.Metadata)
	if err != nil {
		return row{}, fmt.Errorf("document %s: metadata: %w", d.ID, err)
	}
	if d.Metadata == nil {
		md = []byte("{}")
	}
	prov, err := json.Marshal(d.Provenance)
	if err != nil {
		return row{}, fmt.Errorf("document %s: provenance: %w", d.ID, err)
	}
	return row{
		id: d.ID, content: d.Content, sourceType: d.SourceType, sourceName: d.SourceName,
		metadata: string(md), provenance: string(prov), embedding: encodeVector(d.Embedding),
	}, nil
}

func decodeRow(r row) (*document.Document, error) {
	md, err := decodeMetadata(r.metadata)
	if err != nil {
		return nil, fmt.Errorf("document %s: %w", r.id, err)
	}
	d := &document.Document{
		ID: r.id, Content: r.content, SourceType: r.sourceType, SourceName: r.sourceName, Metadata: md,
	}
	if err := json.Unmarshal([]byte(r.provenance), &d.Provenance); err != nil {
		return nil, fmt.Errorf("document %s: provenance: %w", r.id, err)
	}
	if len(r.embedding) > 0 {
		if d.Embedding, err = decodeVector(r.embedding); err != nil {
			return nil, fmt.Errorf("document %s: %w", r.id, err)
		}
	}
	return d, nil
}

// encodeVector stores a vector as little-endian float32s.
func encodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func decodeVector(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("stored embedding has %d bytes, not a multiple of 4", len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// placeholders returns "?,?,…" for n parameters.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

// maxParams keeps IN lists under SQLite's bound-parameter limit.
const maxParams = 500
