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
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/quarry-rag/quarry/store"
)

func init() { store.Register("postgres", driver{}) }

type driver struct{}

func (driver) Open(ctx context.Context, url string) (store.Backend, error) {
	return Open(ctx, url)
}

// defaultMaxConns is the pool size when the URL names none
// (pool_max_conns).
const defaultMaxConns = 10

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
	// origins is set when quarry_sources has its origin column.
	origins bool
	// fence is set when raw fragments can run fenced (detectFence);
	// fenceSlots bounds how many run at once (nil: no bound, inside a
	// caller's transaction).
	fence      bool
	fenceSlots chan struct{}
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

// Open connects and makes sure the tables exist, creating them when the
// role may; a store set up by another Quarry version, or tables of the same
// names that are not Quarry's, are reported instead of used.
func Open(ctx context.Context, url string) (*Backend, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if !strings.Contains(url, "pool_max_conns") {
		// pgx's default, the number of CPUs (at least 4), lets a few slow
		// statements hold every connection of a small machine.
		cfg.MaxConns = max(cfg.MaxConns, defaultMaxConns)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	b := &Backend{pool: pool, db: pool, copyMin: copyThreshold, fenceSlots: make(chan struct{}, max(1, cfg.MaxConns/2))}
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
	b.origins = b.detectOrigins(ctx)
	b.identityNodeIDs(ctx)
	b.fence = b.detectFence(ctx)
	b.bm25, err = b.detectBM25(ctx)
	return err
}

// detectOrigins reports whether quarry_sources records each source's file
// (the origin column, added in place to stores set up before it). A role
// without the right to add it leaves origins unrecorded until `quarry
// setup` runs again; every other feature works as before.
func (b *Backend) detectOrigins(ctx context.Context) bool {
	var n int
	err := b.db.QueryRow(ctx, `SELECT count(*) FROM pg_attribute WHERE attrelid = to_regclass('quarry_sources') AND attname = 'origin' AND NOT attisdropped`).Scan(&n)
	if err == nil && n == 1 {
		return true
	}
	_, err = b.db.Exec(ctx, `ALTER TABLE quarry_sources ADD COLUMN IF NOT EXISTS origin text NOT NULL DEFAULT ''`)
	return err == nil
}

// identityNodeIDs makes quarry_nodes.id an identity column where an older
// setup made it bigserial: a row of an identity column needs only the
// table's INSERT grant, a serial's default also USAGE on its sequence,
// which a runtime role given DML grants alone lacks. A role that may not
// alter the table leaves it as it is, until `quarry setup` (or an open by
// the owner) runs.
func (b *Backend) identityNodeIDs(ctx context.Context) {
	var identity string
	err := b.db.QueryRow(ctx, `SELECT attidentity::text FROM pg_attribute WHERE attrelid = to_regclass('quarry_nodes') AND attname = 'id'`).Scan(&identity)
	if err != nil || identity != "" {
		return
	}
	_ = pgx.BeginFunc(ctx, b.db, func(tx pgx.Tx) error {
		for _, stmt := range []string{
			`SELECT pg_advisory_xact_lock(7412031)`,
			`ALTER TABLE quarry_nodes ALTER COLUMN id DROP DEFAULT`,
			`DROP SEQUENCE IF EXISTS quarry_nodes_id_seq`,
			`ALTER TABLE quarry_nodes ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY`,
			`SELECT setval(pg_get_serial_sequence('quarry_nodes', 'id'), COALESCE((SELECT max(id) FROM quarry_nodes), 0) + 1, false)`,
		} {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	})
}

// WithTx returns a view of the store whose reads and writes run inside tx:
// each write is a savepoint, so a failed batch rolls back alone and the
// caller's transaction decides whether anything is committed. Like tx
// itself, the view is for one goroutine; closing it does not end tx.
func (b *Backend) WithTx(tx pgx.Tx) *Backend {
	return &Backend{db: tx, bm25: b.bm25, copyMin: b.copyMin, origins: b.origins, fence: b.fence}
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

// Describe implements store.Describer: the server's version and those of
// the extensions Quarry uses.
func (b *Backend) Describe(ctx context.Context) (store.Engine, error) {
	e := store.Engine{Name: "postgresql", Extensions: map[string]string{}}
	if err := b.db.QueryRow(ctx, `SHOW server_version`).Scan(&e.Version); err != nil {
		return e, fmt.Errorf("postgres: describe: %w", err)
	}
	rows, err := b.db.Query(ctx, `SELECT extname, extversion FROM pg_extension WHERE extname IN ('vector', 'pg_search')`)
	if err != nil {
		return e, fmt.Errorf("postgres: describe: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, version string
		if err := rows.Scan(&name, &version); err != nil {
			return e, fmt.Errorf("postgres: describe: %w", err)
		}
		e.Extensions[name] = version
	}
	return e, rows.Err()
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
