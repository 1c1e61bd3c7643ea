package embedded

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver

	"github.com/quarry-rag/quarry/document"
)

// schemaVersion is bumped with every incompatible change to the tables;
// migrate brings an older database up to it in place.
//
//   - 1: documents kept each chunk's embedding in its row, a WITHOUT ROWID
//     table keyed by (collection, id).
//   - 2: embeddings live in vectors, keyed by the document's rowid, and
//     documents is a rowid table: a search reads its hits' rows, and with
//     the vector beside them nearly every row spilled into overflow pages
//     (a WITHOUT ROWID row keeps about 1 KB of a 4 KB page in place, a
//     rowid row about 4 KB; a 512-d vector alone is 2 KB), so reading a
//     hit's provenance walked the vector's pages.
const schemaVersion = 2

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
	rid           INTEGER PRIMARY KEY,
	collection_id INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
	id            TEXT NOT NULL,
	seq           INTEGER NOT NULL,
	source_type   TEXT NOT NULL,
	source_name   TEXT NOT NULL,
	metadata      TEXT NOT NULL,
	provenance    TEXT NOT NULL,
	content       TEXT NOT NULL,
	UNIQUE (collection_id, id)
);
CREATE INDEX IF NOT EXISTS documents_source ON documents(collection_id, source_type, source_name);
CREATE TABLE IF NOT EXISTS vectors (
	rid       INTEGER PRIMARY KEY REFERENCES documents(rid) ON DELETE CASCADE,
	embedding BLOB NOT NULL
);
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
func openDB(ctx context.Context, path string, rd readerOptions, log *slog.Logger) (w, r, s *sql.DB, err error) {
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
		return nil, nil, nil, fmt.Errorf("open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	if err := migrate(ctx, w, log); err != nil {
		w.Close()
		return nil, nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if _, err := w.ExecContext(ctx, ddl+hierarchyDDL+settingsDDL); err != nil {
		w.Close()
		return nil, nil, nil, fmt.Errorf("create tables in %s: %w", path, err)
	}
	if err := checkVersion(ctx, w); err != nil {
		w.Close()
		return nil, nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := addColumn(ctx, w, "sources", "origin", "TEXT NOT NULL DEFAULT ''"); err != nil {
		w.Close()
		return nil, nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	readOnly := func(extra ...string) url.Values {
		q := url.Values{}
		for _, p := range append([]string{"foreign_keys(1)", "busy_timeout(10000)", "query_only(1)"}, extra...) {
			q.Add("_pragma", p)
		}
		return q
	}
	rq := readOnly()
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
		return nil, nil, nil, fmt.Errorf("open %s for reading: %w", path, err)
	}
	r.SetMaxOpenConns(4)
	// Whole-collection reads (a scan for the hierarchy, a rebuild of the
	// indexes) go through a connection of their own that maps nothing: a
	// mapped page read once stays in the process's resident set, and a
	// scan of a large collection would count the whole database there
	// (930 MB of an ingest's 1.7 GB peak on Go's source tree). Read with
	// pread, those pages are the kernel's page cache only.
	s, err = sql.Open("sqlite", "file:"+path+"?"+readOnly("mmap_size(0)").Encode())
	if err != nil {
		r.Close()
		w.Close()
		return nil, nil, nil, fmt.Errorf("open %s for scanning: %w", path, err)
	}
	s.SetMaxOpenConns(2)
	return w, r, s, nil
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

// migrate brings a database an older Quarry wrote up to schemaVersion, in
// one transaction before the tables are created, so a crash part-way
// leaves the database as it was and the next open starts over. A new
// database, or one of a version this Quarry does not know, is left to
// checkVersion.
func migrate(ctx context.Context, db *sql.DB, log *slog.Logger) error {
	var tables int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'quarry_meta'`).Scan(&tables); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if tables == 0 {
		return nil
	}
	v, err := readVersion(ctx, db)
	if err != nil {
		return err
	}
	if v != "1" {
		return nil
	}
	t0 := time.Now()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate schema 1 to 2: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	var n int64
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM documents`).Scan(&n); err != nil {
		return fmt.Errorf("migrate schema 1 to 2: %w", err)
	}
	log.Info("embedded store: moving embeddings out of the document rows (schema 1 to 2)", "documents", n)
	// Nothing references documents in schema 1, so renaming it and
	// dropping it later touch no other table.
	for _, q := range []string{
		`ALTER TABLE documents RENAME TO documents_v1`,
		`DROP INDEX documents_source`,
		ddl,
		`INSERT INTO documents(collection_id, id, seq, source_type, source_name, metadata, provenance, content)
			SELECT collection_id, id, seq, source_type, source_name, metadata, provenance, content FROM documents_v1`,
		`INSERT INTO vectors(rid, embedding)
			SELECT d.rid, o.embedding FROM documents_v1 o JOIN documents d ON d.collection_id = o.collection_id AND d.id = o.id`,
		`DROP TABLE documents_v1`,
		`UPDATE quarry_meta SET value = '2' WHERE key = 'schema_version'`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("migrate schema 1 to 2: %w", err)
		}
	}
	var moved int64
	if err := tx.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM documents) + (SELECT count(*) FROM vectors)`).Scan(&moved); err != nil {
		return fmt.Errorf("migrate schema 1 to 2: %w", err)
	}
	if moved != 2*n {
		return fmt.Errorf("migrate schema 1 to 2: %d documents became %d rows, not %d", n, moved, 2*n)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate schema 1 to 2: %w", err)
	}
	log.Info("embedded store: schema 2", "documents", n, "took", time.Since(t0).Round(time.Millisecond))
	return nil
}

// readVersion returns the recorded schema version, "" when none is.
func readVersion(ctx context.Context, db *sql.DB) (string, error) {
	var v string
	err := db.QueryRowContext(ctx, `SELECT value FROM quarry_meta WHERE key = 'schema_version'`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

func checkVersion(ctx context.Context, db *sql.DB) error {
	v, err := readVersion(ctx, db)
	if err != nil {
		return err
	}
	if v == "" {
		_, err = db.ExecContext(ctx, `INSERT INTO quarry_meta(key, value) VALUES ('schema_version', ?)`, fmt.Sprint(schemaVersion))
		return err
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
