// Package mariadb is Quarry's store on MariaDB 11.7 and later, whose
// VECTOR type and HNSW vector index (mhnsw) serve vector search and whose
// InnoDB full-text index serves keyword search.
//
// Each collection is a table of its own (quarry_c_NAME), since a VECTOR
// column has one dimension, keyed by a surrogate integer (a vector index
// takes primary keys of at most 256 bytes) with the document id unique,
// beside a postings table (quarry_p_NAME); quarry_collections names them with their
// configuration and quarry_sources keeps what ingestion needs to skip
// unchanged files. Keyword search is BM25 computed in SQL over postings of
// Quarry's own analyzer's terms (the embedded store's: stemmed, its stop
// words and code pairs, the same k1, b and idf), so a collection ranks the
// same on MariaDB as embedded; InnoDB's full-text relevance ranked SciFact
// a fifth lower. Metadata is JSON; filters compile to JSON_EXTRACT and
// JSON_VALUE tests with bound parameters only, with the portable filter's
// semantics (a missing field matches nothing, numbers compare
// numerically, strings exactly). Hybrid search runs the two ranked
// branches at once, each with the filter inside, and fuses them as every
// store does.
//
// Importing the package registers the "mariadb://" URL scheme:
// mariadb://USER:PASSWORD@HOST:PORT/DATABASE.
package mariadb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/store"
)

func init() { store.Register("mariadb", driver{}) }

type driver struct{}

func (driver) Open(ctx context.Context, url string) (store.Backend, error) { return Open(ctx, url) }

// Dialect is the tag raw filter fragments for this store carry.
const Dialect = "mariadb"

// Backend is the MariaDB store.Backend.
type Backend struct {
	db  *sql.DB
	dsn string // the driver's data source name, for the fragment account's connections

	// analyzers are by language, made on first use; a collection's
	// configuration is read each time, so a collection another process
	// drops or makes is seen at once (as on PostgreSQL).
	mu        sync.Mutex
	analyzers map[string]*bm25.Analyzer
	// fence is the fragment account's pool (fence.go); nil without one,
	// and raw fragments are then refused. Guarded by mu.
	fence *sql.DB
}

// collInfo is a collection's configuration and its analyzer.
type collInfo struct {
	cfg      store.CollectionConfig
	analyzer *bm25.Analyzer
}

// DSN turns a mariadb:// URL into the driver's data source name.
func DSN(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("mariadb: %w", err)
	}
	if u.Scheme != "mariadb" {
		return "", fmt.Errorf("mariadb: URL %q: want mariadb://USER:PASSWORD@HOST:PORT/DATABASE", raw)
	}
	c := mysql.NewConfig()
	c.Net, c.Addr = "tcp", u.Host
	if u.Port() == "" {
		c.Addr = u.Host + ":3306"
	}
	if u.User != nil {
		c.User = u.User.Username()
		c.Passwd, _ = u.User.Password()
	}
	c.DBName = strings.TrimPrefix(u.Path, "/")
	if c.DBName == "" {
		return "", fmt.Errorf("mariadb: URL %q names no database", raw)
	}
	c.Collation = "utf8mb4_bin"
	c.ParseTime = true
	c.Timeout = 10 * time.Second
	c.Params = map[string]string{}
	for k, vs := range u.Query() {
		c.Params[k] = vs[len(vs)-1]
	}
	return c.FormatDSN(), nil
}

// Open connects and makes sure the tables exist.
func Open(ctx context.Context, raw string) (*Backend, error) {
	dsn, err := DSN(raw)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	db.SetMaxOpenConns(16)
	db.SetConnMaxIdleTime(time.Minute)
	b := &Backend{db: db, dsn: dsn, analyzers: map[string]*bm25.Analyzer{}}
	if err := b.setup(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := b.openFence(ctx); err != nil {
		b.Close()
		return nil, err
	}
	if b.fence == nil {
		// A store set up before the fragment account existed gets one
		// when this user may create it; otherwise fragments are refused
		// until `quarry setup` runs.
		_ = b.setupFence(ctx)
	}
	return b, nil
}

const schemaSQL = `
CREATE TABLE IF NOT EXISTS quarry_collections (
	name   VARBINARY(64) NOT NULL PRIMARY KEY,
	config LONGTEXT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE IF NOT EXISTS quarry_sources (
	collection  VARBINARY(64) NOT NULL,
	source_type VARBINARY(64) NOT NULL,
	source_name VARBINARY(2900) NOT NULL,
	hash        VARBINARY(128) NOT NULL,
	chunks      INT NOT NULL,
	origin      TEXT NOT NULL,
	PRIMARY KEY (collection, source_type, source_name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`

// tables are Quarry's own tables beside the collections'.
var tables = []string{"quarry_collections", "quarry_sources", "quarry_jobs", "quarry_settings", "quarry_threads",
	"quarry_nodes", "quarry_node_chunks", "quarry_node_links", "quarry_embedding_cache"}

// setup checks the server and creates Quarry's tables when one is
// missing. When all are there it changes nothing, so a runtime user with
// only SELECT, INSERT, UPDATE and DELETE grants opens the store.
func (b *Backend) setup(ctx context.Context) error {
	var version string
	if err := b.db.QueryRowContext(ctx, `SELECT VERSION()`).Scan(&version); err != nil {
		return fmt.Errorf("mariadb: %w", err)
	}
	if !strings.Contains(version, "MariaDB") {
		return fmt.Errorf("mariadb: the server is %s, not MariaDB (11.7 or later is needed for VECTOR)", version)
	}
	args := make([]any, len(tables))
	for i, t := range tables {
		args[i] = t
	}
	var n int
	if err := b.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name IN (`+
		placeholders(len(tables))+`)`, args...).Scan(&n); err != nil {
		return fmt.Errorf("mariadb: %w", err)
	}
	if n == len(tables) {
		return nil
	}
	return b.Setup(ctx)
}

// Setup implements store.Installer: it creates Quarry's tables, which
// needs the CREATE privilege on the database (quarry setup). Creating and
// dropping a collection also needs CREATE and DROP, since each is a table.
func (b *Backend) Setup(ctx context.Context) error {
	for _, stmt := range append(strings.Split(schemaSQL+";"+recordsSQL+";"+hierarchySQL, ";"), threadsSQL, cacheSQL, fragmentTableSQL) {
		if _, err := b.db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("mariadb: create Quarry's tables (a user with the CREATE privilege runs quarry setup): %w", err)
		}
	}
	// The fragment account needs CREATE USER, which a user holding only
	// the database's privileges lacks: raw fragments are then refused,
	// everything else works, and quarry doctor says so.
	_ = b.setupFence(ctx)
	return nil
}

// hnswM is the vector index's M, its links per node: MariaDB's default 6
// found 46% of SciFact's relevant passages in the top 100 where an exact
// search finds 70%; 16 (the embedded store's, and pgvector's) comes close.
const hnswM = 16

// table is a collection's table, quoted. Collection names are lowercase
// letters, digits, '_' and '-' (store.CollectionConfig.Check), at most 48
// characters: inside backticks they are safe, and the name stays within
// MariaDB's 64.
func table(name string) string { return "`quarry_c_" + name + "`" }

// postings is a collection's keyword postings table: a term, a document
// (by its table's surrogate key), the term's count in it and the
// document's length, which BM25 needs beside the count.
func postings(name string) string { return "`quarry_p_" + name + "`" }

// Dialect implements store.Backend.
func (b *Backend) Dialect() string { return Dialect }

// Close implements store.Backend.
func (b *Backend) Close() error {
	b.mu.Lock()
	fence := b.fence
	b.fence = nil
	b.mu.Unlock()
	if fence != nil {
		fence.Close()
	}
	return b.db.Close()
}

// Describe implements store.Describer.
func (b *Backend) Describe(ctx context.Context) (store.Engine, error) {
	var v string
	if err := b.db.QueryRowContext(ctx, `SELECT VERSION()`).Scan(&v); err != nil {
		return store.Engine{}, fmt.Errorf("mariadb: %w", err)
	}
	return store.Engine{Name: "mariadb", Version: v}, nil
}

// CreateCollection implements store.Admin.
func (b *Backend) CreateCollection(ctx context.Context, cfg store.CollectionConfig) error {
	if _, err := bm25.NewAnalyzer(bm25.AnalyzerConfig{Language: cfg.Language}); err != nil {
		return fmt.Errorf("%w: %v", store.ErrInvalidRequest, err)
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("mariadb: %w", err)
	}
	if _, err := b.db.ExecContext(ctx, `INSERT INTO quarry_collections (name, config) VALUES (?, ?)`, cfg.Name, string(raw)); err != nil {
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == 1062 {
			return fmt.Errorf("%w: %q", store.ErrCollectionExists, cfg.Name)
		}
		return fmt.Errorf("mariadb: create collection %q: %w", cfg.Name, err)
	}
	// A table without its row is what a drop that stopped midway leaves.
	ddl := []string{
		`DROP TABLE IF EXISTS ` + table(cfg.Name),
		fmt.Sprintf(`CREATE TABLE %s (
	pk          BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
	id          VARBINARY(1024) NOT NULL,
	content     LONGTEXT NOT NULL,
	source_type VARBINARY(64) NOT NULL,
	source_name VARBINARY(2900) NOT NULL,
	metadata    LONGTEXT NOT NULL,
	provenance  LONGTEXT NOT NULL,
	kwlen       INT NOT NULL,
	embedding   VECTOR(%d) NOT NULL,
	UNIQUE KEY id (id),
	KEY source (source_type, source_name(700)),
	KEY kwlen (kwlen),
	VECTOR INDEX embedding (embedding) M=%d DISTANCE=cosine
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`, table(cfg.Name), cfg.Model.Dimension, hnswM),
		`DROP TABLE IF EXISTS ` + postings(cfg.Name),
		`CREATE TABLE ` + postings(cfg.Name) + ` (
	term VARBINARY(255) NOT NULL,
	pk   BIGINT NOT NULL,
	tf   INT NOT NULL,
	len  INT NOT NULL,
	PRIMARY KEY (term, pk),
	KEY pk (pk),
	FOREIGN KEY (pk) REFERENCES ` + table(cfg.Name) + ` (pk) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
	}
	for _, stmt := range ddl {
		if _, err := b.db.ExecContext(ctx, stmt); err != nil {
			_, _ = b.db.ExecContext(ctx, `DELETE FROM quarry_collections WHERE name = ?`, cfg.Name)
			return fmt.Errorf("mariadb: create the table of %q (each collection is a table: the user needs CREATE and DROP on the database): %w", cfg.Name, err)
		}
	}
	b.mu.Lock()
	fenced := b.fence != nil
	b.mu.Unlock()
	if fenced {
		// A user without GRANT OPTION leaves the collection without raw
		// fragments (errNoFence names the fix); nothing else changes.
		_ = b.grantFragment(ctx, cfg.Name)
	}
	return nil
}

// LoadCollection implements store.Admin.
func (b *Backend) LoadCollection(ctx context.Context, name string) (store.CollectionConfig, error) {
	ci, err := b.info(ctx, name)
	if err != nil {
		return store.CollectionConfig{}, err
	}
	return ci.cfg, nil
}

func (b *Backend) info(ctx context.Context, name string) (*collInfo, error) {
	var raw string
	err := b.db.QueryRowContext(ctx, `SELECT config FROM quarry_collections WHERE name = ?`, name).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: %q", store.ErrCollectionNotFound, name)
	}
	if err != nil {
		return nil, fmt.Errorf("mariadb: collection %q: %w", name, err)
	}
	ci := &collInfo{}
	if err := json.Unmarshal([]byte(raw), &ci.cfg); err != nil {
		return nil, fmt.Errorf("mariadb: collection %q: stored configuration: %w", name, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if ci.analyzer = b.analyzers[ci.cfg.Language]; ci.analyzer == nil {
		if ci.analyzer, err = bm25.NewAnalyzer(bm25.AnalyzerConfig{Language: ci.cfg.Language}); err != nil {
			return nil, fmt.Errorf("mariadb: collection %q: %w", name, err)
		}
		b.analyzers[ci.cfg.Language] = ci.analyzer
	}
	return ci, nil
}

// ListCollections implements store.Admin.
func (b *Backend) ListCollections(ctx context.Context) ([]store.CollectionConfig, error) {
	rows, err := b.db.QueryContext(ctx, `SELECT config FROM quarry_collections ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("mariadb: list collections: %w", err)
	}
	defer rows.Close()
	var out []store.CollectionConfig
	for rows.Next() {
		var raw string
		if err := rows.Scan(&raw); err != nil {
			return nil, fmt.Errorf("mariadb: list collections: %w", err)
		}
		var cfg store.CollectionConfig
		if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
			return nil, fmt.Errorf("mariadb: list collections: %w", err)
		}
		out = append(out, cfg)
	}
	return out, rows.Err()
}

// DropCollection implements store.Admin. The rows go in one transaction
// first, so a crash before the table is dropped leaves no collection, only
// a table the next create of the name drops.
func (b *Backend) DropCollection(ctx context.Context, name string) error {
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("mariadb: %w", err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `DELETE FROM quarry_collections WHERE name = ?`, name)
	if err != nil {
		return fmt.Errorf("mariadb: drop collection %q: %w", name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: %q", store.ErrCollectionNotFound, name)
	}
	for _, t := range append([]string{"quarry_sources", "quarry_settings"}, hierarchyTables...) {
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+t+` WHERE collection = ?`, name); err != nil {
			return fmt.Errorf("mariadb: drop collection %q: %w", name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("mariadb: drop collection %q: %w", name, err)
	}
	if _, err := b.db.ExecContext(ctx, `DROP TABLE IF EXISTS `+postings(name)+`, `+table(name)); err != nil {
		return fmt.Errorf("mariadb: drop the table of %q: %w", name, err)
	}
	return nil
}
