// Package embedded is Quarry's default store: zero services, one directory.
//
// SQLite (quarry.db, WAL) is the only source of truth for collections,
// documents, metadata and vectors. The indexes — an HNSW graph, a BM25
// inverted index and bitsets for filterable fields — live in memory, derived
// from the rows, and are checkpointed under index/<collection>/ with the
// sequence number of the last write they reflect. On open a checkpoint that
// is missing, corrupt or behind is repaired by replaying rows, so a crash at
// any point loses no acknowledged write and corrupts nothing.
//
// Importing the package registers the "embedded:DIR" URL scheme.
package embedded

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
)

func init() { store.Register("embedded", driver{}) }

type driver struct{}

func (driver) Open(ctx context.Context, url string) (store.Backend, error) {
	dir := strings.TrimPrefix(strings.TrimPrefix(url, "embedded:"), "//")
	if dir == "" {
		return nil, fmt.Errorf("embedded store needs a directory: embedded:DIR")
	}
	return Open(ctx, dir, Options{})
}

// Options tune an embedded store. Zero values mean the defaults.
type Options struct {
	// Logger receives repairs and checkpoint events; slog.Default() when nil.
	Logger *slog.Logger
	// A loaded collection is checkpointed in the background once its
	// journal holds CheckpointRows ids (DefaultCheckpointRows when 0), or
	// CheckpointAge after an unsaved write (DefaultCheckpointAge when 0),
	// so reopening after any history of small writes — a server taking
	// API adds — replays little. A negative CheckpointRows turns the
	// background checkpoints off (checkpoints then happen after
	// ingestions and on Close).
	CheckpointRows int
	CheckpointAge  time.Duration
	// MmapBytes is how much of the database each reader connection maps
	// into memory (DefaultMmapBytes when 0, none when negative);
	// CacheBytes is each reader's page cache (DefaultCacheBytes when 0,
	// SQLite's 2 MB when negative). Four readers share the database.
	MmapBytes  int64
	CacheBytes int64
	// MapVectorsBytes is the size of a collection's float32 vectors (or,
	// when its graph opens from a checkpoint, of the graph's file) from
	// which the graph keeps them in a memory-mapped scratch file in the
	// store's directory instead of the heap (hnsw.Index.MapVectors);
	// DefaultMapVectorsBytes when 0, never when negative. Searches walk
	// int8 codes and read only the rows they re-score, so a large
	// collection needs about a third of the resident memory at the same
	// speed, and under memory pressure the kernel drops pages of the file
	// rather than the process failing.
	MapVectorsBytes int64
}

// DefaultMapVectorsBytes maps the vectors of collections past 64 MiB of
// them (about 44,000 chunks of 384 dimensions): below that the heap's
// copy costs little and the file would only add writes.
const DefaultMapVectorsBytes = 64 << 20

// Defaults for the readers. The map is address space backed by the
// kernel's page cache, so it costs no memory of its own on a small machine;
// the page caches together hold at most 64 MiB.
const (
	DefaultMmapBytes  = 1 << 30
	DefaultCacheBytes = 16 << 20
)

// Defaults for background checkpoints. Replaying a journal entry costs
// about a millisecond (a row read and an HNSW insert), so a thousand keep
// a reopen near a second at the most.
const (
	DefaultCheckpointRows = 1000
	DefaultCheckpointAge  = time.Minute
)

// DBFile is the database's file name inside the store directory.
const DBFile = "quarry.db"

// Backend is the embedded store.Backend.
type Backend struct {
	dir string
	w   *sql.DB // the single writer connection
	r   *sql.DB // readers
	rs  *stmts  // the read path's statements, prepared on r
	s   *sql.DB // whole-collection scans, unmapped (openDB)
	ss  *stmts  // their statements, prepared on s
	log *slog.Logger

	mu     sync.Mutex // guards colls, loading and closed
	colls  map[string]*coll
	closed bool
	// loading holds the collections being loaded: a first open replays
	// rows without holding mu, so it never blocks the other collections,
	// and callers of the same one wait for that one load.
	loading map[string]*load
	loads   sync.WaitGroup // the loads in progress, which Close waits for
	// beforeLoad, when set, runs as a collection's load begins (tests hold
	// a load there).
	beforeLoad func(name string)
	// indexOnly, set only by tests, ends searches before they read rows,
	// so a benchmark can report the index's share of a search.
	indexOnly bool

	ckptRows   int
	ckptAge    time.Duration
	mapVectors int64         // Options.MapVectorsBytes resolved; 0: never
	stop       chan struct{} // closed by Close to end the checkpointer
	stopped    chan struct{} // closed when it has ended
}

// Open opens (creating when needed) the store in dir.
func Open(ctx context.Context, dir string, opt Options) (*Backend, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("embedded store %s: %w", dir, err)
	}
	rd := readerOptions{mmap: opt.MmapBytes, cache: opt.CacheBytes}
	if rd.mmap == 0 {
		rd.mmap = DefaultMmapBytes
	}
	if rd.cache == 0 {
		rd.cache = DefaultCacheBytes
	}
	log := opt.Logger
	if log == nil {
		log = slog.Default()
	}
	w, r, sc, err := openDB(ctx, filepath.Join(dir, DBFile), rd, log)
	if err != nil {
		return nil, fmt.Errorf("embedded store: %w", err)
	}
	b := &Backend{dir: dir, w: w, r: r, rs: newStmts(r), s: sc, ss: newStmts(sc), log: log, colls: map[string]*coll{}, loading: map[string]*load{},
		ckptRows: opt.CheckpointRows, ckptAge: opt.CheckpointAge, stop: make(chan struct{}), stopped: make(chan struct{})}
	if b.ckptRows == 0 {
		b.ckptRows = DefaultCheckpointRows
	}
	if b.ckptAge <= 0 {
		b.ckptAge = DefaultCheckpointAge
	}
	switch {
	case opt.MapVectorsBytes == 0:
		b.mapVectors = DefaultMapVectorsBytes
	case opt.MapVectorsBytes > 0:
		b.mapVectors = opt.MapVectorsBytes
	}
	if b.ckptRows > 0 {
		go b.checkpointer()
	} else {
		close(b.stopped)
	}
	return b, nil
}

// checkpointer checkpoints loaded collections whose journal has grown
// past ckptRows ids, or that have held an unsaved write for ckptAge.
func (b *Backend) checkpointer() {
	defer close(b.stopped)
	poll := min(time.Second, b.ckptAge/4)
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
		}
		b.mu.Lock()
		colls := make([]*coll, 0, len(b.colls))
		for _, c := range b.colls {
			colls = append(colls, c)
		}
		b.mu.Unlock()
		for _, c := range colls {
			if err := c.checkpointIfDue(context.Background(), b.ckptRows, b.ckptAge); err != nil {
				b.log.Warn("embedded store: background checkpoint failed; it is retried, and the rows stay the truth", "collection", c.cfg.Name, "err", err)
			}
		}
	}
}

// Dir returns the store's directory.
func (b *Backend) Dir() string { return b.dir }

// Dialect implements store.Backend: filters are evaluated in process.
func (b *Backend) Dialect() string { return "" }

// collection returns the loaded collection, loading its indexes on first
// use: from a valid checkpoint, else by replaying rows.
func (b *Backend) collection(ctx context.Context, name string) (*coll, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, store.ErrClosed
	}
	if c, ok := b.colls[name]; ok {
		b.mu.Unlock()
		return c, nil
	}
	if l, ok := b.loading[name]; ok {
		b.mu.Unlock()
		select {
		case <-l.done:
			return l.c, l.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	l := &load{done: make(chan struct{})}
	b.loading[name] = l
	b.loads.Add(1)
	b.mu.Unlock()

	// The load runs to its end even if this caller gives up, so the
	// callers waiting on it get a result: its context is not the caller's.
	l.c, l.err = b.loadCollection(context.WithoutCancel(ctx), name)
	b.mu.Lock()
	delete(b.loading, name)
	switch {
	case l.err != nil:
	case b.closed:
		l.c, l.err = nil, store.ErrClosed
	default:
		b.colls[name] = l.c
	}
	b.mu.Unlock()
	close(l.done)
	b.loads.Done()
	return l.c, l.err
}

// load is a collection's first open in progress.
type load struct {
	done chan struct{} // closed when c and err are set
	c    *coll
	err  error
}

// loadCollection reads a collection's configuration and brings its
// indexes up to its rows (from the checkpoint, then replaying what came
// after).
func (b *Backend) loadCollection(ctx context.Context, name string) (*coll, error) {
	if b.beforeLoad != nil {
		b.beforeLoad(name)
	}
	var cid int64
	var raw string
	err := b.r.QueryRowContext(ctx, `SELECT id, config FROM collections WHERE name = ?`, name).Scan(&cid, &raw)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrCollectionNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read collection %q: %w", name, err)
	}
	cfg, err := decodeConfig(raw)
	if err != nil {
		return nil, fmt.Errorf("collection %q: %w", name, err)
	}
	c, err := newColl(b, cid, cfg)
	if err != nil {
		return nil, err
	}
	c.sweepTemporary()
	c.mu.Lock()
	err = c.load(ctx)
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return c, nil
}

func decodeConfig(raw string) (store.CollectionConfig, error) {
	var cfg store.CollectionConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		return cfg, fmt.Errorf("stored configuration is corrupt: %w", err)
	}
	return cfg, nil
}

func (b *Backend) collectionSeq(ctx context.Context, cid int64) (int64, error) {
	var seq int64
	row, err := b.rs.queryRow(ctx, `SELECT seq FROM collections WHERE id = ?`, cid)
	if err == nil {
		err = row.Scan(&seq)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return 0, store.ErrCollectionNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("read collection sequence: %w", err)
	}
	return seq, nil
}

// CreateCollection implements store.Backend.
func (b *Backend) CreateCollection(ctx context.Context, cfg store.CollectionConfig) error {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("encode configuration: %w", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return store.ErrClosed
	}
	res, err := b.w.ExecContext(ctx, `INSERT INTO collections(name, config) VALUES (?, ?) ON CONFLICT(name) DO NOTHING`, cfg.Name, string(raw))
	if err != nil {
		return fmt.Errorf("insert collection: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return store.ErrCollectionExists
	}
	// A leftover checkpoint of a dropped namesake must never be loaded.
	return os.RemoveAll(b.indexDir(cfg.Name))
}

// LoadCollection implements store.Backend.
func (b *Backend) LoadCollection(ctx context.Context, name string) (store.CollectionConfig, error) {
	c, err := b.collection(ctx, name)
	if err != nil {
		return store.CollectionConfig{}, err
	}
	return c.cfg, nil
}

// ListCollections implements store.Backend.
func (b *Backend) ListCollections(ctx context.Context) ([]store.CollectionConfig, error) {
	rows, err := b.r.QueryContext(ctx, `SELECT config FROM collections ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list collections: %w", err)
	}
	defer rows.Close()
	var out []store.CollectionConfig
	for rows.Next() {
		var raw string
		if err := rows.Scan(&raw); err != nil {
			return nil, fmt.Errorf("list collections: %w", err)
		}
		cfg, err := decodeConfig(raw)
		if err != nil {
			return nil, err
		}
		out = append(out, cfg)
	}
	return out, rows.Err()
}

// DropCollection implements store.Backend.
func (b *Backend) DropCollection(ctx context.Context, name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	// A load in progress would put the dropped collection back: wait for
	// it first.
	for l, ok := b.loading[name]; ok; l, ok = b.loading[name] {
		b.mu.Unlock()
		<-l.done
		b.mu.Lock()
	}
	if b.closed {
		return store.ErrClosed
	}
	res, err := b.w.ExecContext(ctx, `DELETE FROM collections WHERE name = ?`, name)
	if err != nil {
		return fmt.Errorf("delete collection: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return store.ErrCollectionNotFound
	}
	delete(b.colls, name)
	return os.RemoveAll(b.indexDir(name))
}

// Upsert implements store.Backend.
func (b *Backend) Upsert(ctx context.Context, name string, docs []*document.Document) error {
	c, err := b.collection(ctx, name)
	if err != nil {
		return err
	}
	return c.upsert(ctx, docs)
}

// Get implements store.Backend.
func (b *Backend) Get(ctx context.Context, name string, ids []string) ([]*document.Document, error) {
	c, err := b.collection(ctx, name)
	if err != nil {
		return nil, err
	}
	docs, err := b.loadDocs(ctx, c.cid, ids, true)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*document.Document, len(docs))
	for _, d := range docs {
		byID[d.ID] = d
	}
	out := make([]*document.Document, 0, len(docs))
	for _, id := range ids {
		if d, ok := byID[id]; ok {
			out = append(out, d)
			delete(byID, id) // a repeated id is returned once
		}
	}
	return out, nil
}

// Delete implements store.Backend.
func (b *Backend) Delete(ctx context.Context, name string, f filter.Expr) (int, error) {
	c, err := b.collection(ctx, name)
	if err != nil {
		return 0, err
	}
	return c.delete(ctx, f)
}

// Count implements store.Backend.
func (b *Backend) Count(ctx context.Context, name string, f filter.Expr) (int, error) {
	c, err := b.collection(ctx, name)
	if err != nil {
		return 0, err
	}
	return c.count(ctx, f)
}

// SearchVector implements store.Backend.
func (b *Backend) SearchVector(ctx context.Context, name string, q []float32, f filter.Expr, k int) ([]*document.Document, error) {
	c, err := b.collection(ctx, name)
	if err != nil {
		return nil, err
	}
	return c.searchVector(ctx, q, f, k, true)
}

// SearchKeyword implements store.Backend.
func (b *Backend) SearchKeyword(ctx context.Context, name string, query string, f filter.Expr, k int) ([]*document.Document, error) {
	c, err := b.collection(ctx, name)
	if err != nil {
		return nil, err
	}
	return c.searchKeyword(ctx, query, f, k, true)
}

// SearchHybrid implements store.HybridSearcher: both branches run on the
// in-memory indexes and only the final top k rows are read from SQLite.
func (b *Backend) SearchHybrid(ctx context.Context, name string, req store.SearchRequest) ([]store.Hit, error) {
	c, err := b.collection(ctx, name)
	if err != nil {
		return nil, err
	}
	return c.searchHybrid(ctx, req)
}

// Checkpoint writes the indexes of every loaded collection that changed
// since its last checkpoint.
func (b *Backend) Checkpoint(ctx context.Context) error {
	b.mu.Lock()
	colls := make([]*coll, 0, len(b.colls))
	for _, c := range b.colls {
		colls = append(colls, c)
	}
	b.mu.Unlock()
	var errs []error
	for _, c := range colls {
		if err := c.checkpoint(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close checkpoints the loaded collections and closes the database. A
// checkpoint that fails is logged, not fatal: the rows are the truth.
func (b *Backend) Close() error {
	b.mu.Lock()
	if !b.closed {
		select {
		case <-b.stop:
		default:
			close(b.stop)
		}
	}
	b.mu.Unlock()
	<-b.stopped
	if err := b.Checkpoint(context.Background()); err != nil {
		b.log.Warn("embedded store: checkpoint on close failed; indexes will be rebuilt on next open", "dir", b.dir, "err", err)
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	colls := b.colls
	b.colls = nil
	b.mu.Unlock()
	b.loads.Wait() // a load reads the database until it ends
	// A graph with mapped vectors holds an unlinked scratch file: closing
	// it now drops the file's pages unwritten, where waiting for the
	// collector would leave them to be written back. A search still
	// running gets ErrClosed, never freed memory.
	var errs []error
	for _, c := range colls {
		c.vecMu.Lock()
		if c.vec != nil {
			errs = append(errs, c.vec.Close())
		}
		c.vecMu.Unlock()
	}
	return errors.Join(append(errs, b.ss.close(), b.s.Close(), b.rs.close(), b.r.Close(), b.w.Close())...)
}

// writeRows commits one write — upserted rows and deleted ids — with its
// journal entries, and returns the write's sequence number.
func (b *Backend) writeRows(ctx context.Context, cid int64, rows []row, deleted []string) (int64, error) {
	return b.inTx(ctx, cid, func(_ *sql.Tx, _ int64, w *writer) error {
		if err := w.delete(deleted); err != nil {
			return err
		}
		return w.upsert(rows)
	})
}

// inTx runs fn in a write transaction that advances the collection's
// sequence number, and returns that number once committed.
func (b *Backend) inTx(ctx context.Context, cid int64, fn func(tx *sql.Tx, seq int64, w *writer) error) (int64, error) {
	tx, err := b.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("begin write: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	var seq int64
	if err := tx.QueryRowContext(ctx, `UPDATE collections SET seq = seq + 1 WHERE id = ? RETURNING seq`, cid).Scan(&seq); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return 0, store.ErrCollectionNotFound
		}
		return 0, fmt.Errorf("advance sequence: %w", err)
	}
	w := &writer{ctx: ctx, tx: tx, cid: cid, seq: seq}
	defer w.close()
	if err := fn(tx, seq, w); err != nil {
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("commit write: %w", err)
	}
	return seq, nil
}

// writer writes documents and journal entries inside one transaction.
type writer struct {
	ctx          context.Context
	tx           *sql.Tx
	cid          int64
	seq          int64
	ins, vec, jr *sql.Stmt
}

func (w *writer) close() {
	for _, st := range []*sql.Stmt{w.ins, w.vec, w.jr} {
		if st != nil {
			st.Close()
		}
	}
}

func (w *writer) journal(id string, deleted int) error {
	if w.jr == nil {
		var err error
		if w.jr, err = w.tx.PrepareContext(w.ctx, `INSERT OR REPLACE INTO journal(collection_id, seq, id, deleted) VALUES (?, ?, ?, ?)`); err != nil {
			return fmt.Errorf("prepare journal: %w", err)
		}
	}
	if _, err := w.jr.ExecContext(w.ctx, w.cid, w.seq, id, deleted); err != nil {
		return fmt.Errorf("journal %s: %w", id, err)
	}
	return nil
}

func (w *writer) upsert(rows []row) error {
	if len(rows) == 0 {
		return nil
	}
	if w.ins == nil {
		var err error
		// An update keeps the row's rid, so its vector row is replaced in
		// place and nothing else that names the rid moves.
		w.ins, err = w.tx.PrepareContext(w.ctx, `INSERT INTO documents(collection_id, id, seq, source_type, source_name, metadata, provenance, content)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT(collection_id, id) DO UPDATE SET seq = excluded.seq, source_type = excluded.source_type,
				source_name = excluded.source_name, metadata = excluded.metadata, provenance = excluded.provenance,
				content = excluded.content
			RETURNING rid`)
		if err != nil {
			return fmt.Errorf("prepare insert: %w", err)
		}
		if w.vec, err = w.tx.PrepareContext(w.ctx, `INSERT OR REPLACE INTO vectors(rid, embedding) VALUES (?, ?)`); err != nil {
			return fmt.Errorf("prepare insert: %w", err)
		}
	}
	for _, r := range rows {
		var rid int64
		if err := w.ins.QueryRowContext(w.ctx, w.cid, r.id, w.seq, r.sourceType, r.sourceName, r.metadata, r.provenance, r.content).Scan(&rid); err != nil {
			return fmt.Errorf("write document %s: %w", r.id, err)
		}
		if _, err := w.vec.ExecContext(w.ctx, rid, r.embedding); err != nil {
			return fmt.Errorf("write the vector of document %s: %w", r.id, err)
		}
		if err := w.journal(r.id, 0); err != nil {
			return err
		}
	}
	return nil
}

func (w *writer) delete(ids []string) error {
	for start := 0; start < len(ids); start += maxParams {
		part := ids[start:min(start+maxParams, len(ids))]
		args := make([]any, 0, len(part)+1)
		args = append(args, w.cid)
		for _, id := range part {
			args = append(args, id)
		}
		// A source that loses chunks is no longer what its recorded hash
		// says: forget the hash so the next sync rewrites it.
		if _, err := w.tx.ExecContext(w.ctx, `DELETE FROM sources WHERE collection_id = ?1 AND (source_type, source_name) IN
			(SELECT source_type, source_name FROM documents WHERE collection_id = ?1 AND id IN (`+placeholders(len(part))+`))`, args...); err != nil {
			return fmt.Errorf("forget sources: %w", err)
		}
		if _, err := w.tx.ExecContext(w.ctx, `DELETE FROM documents WHERE collection_id = ? AND id IN (`+placeholders(len(part))+`)`, args...); err != nil {
			return fmt.Errorf("delete documents: %w", err)
		}
		for _, id := range part {
			if err := w.journal(id, 1); err != nil {
				return err
			}
		}
	}
	return nil
}

// Scan implements store.Scanner.
func (b *Backend) Scan(ctx context.Context, name string, after string, limit int) ([]*document.Document, error) {
	c, err := b.collection(ctx, name)
	if err != nil {
		return nil, err
	}
	var out []*document.Document
	err = b.scanAll(ctx, `SELECT `+docColumns(true)+` WHERE d.collection_id = ? AND d.id > ? ORDER BY d.id LIMIT ?`,
		[]any{c.cid, after, limit}, func(d *document.Document) error {
			out = append(out, d)
			return nil
		})
	return out, err
}

// SearchRequest implements store.RequestSearcher: vector and keyword
// search that read the vector blobs only when the request asks for them.
func (b *Backend) SearchRequest(ctx context.Context, name string, req store.SearchRequest) ([]*document.Document, error) {
	c, err := b.collection(ctx, name)
	if err != nil {
		return nil, err
	}
	if req.Mode == store.ModeVector {
		return c.searchVector(ctx, req.Embedding, req.Filter, req.TopK, req.Vectors)
	}
	return c.searchKeyword(ctx, req.Query, req.Filter, req.TopK, req.Vectors)
}

// loadDocs reads the rows with the given ids (in no particular order);
// without vectors it leaves the embedding blob unread.
func (b *Backend) loadDocs(ctx context.Context, cid int64, ids []string, vectors bool) ([]*document.Document, error) {
	var out []*document.Document
	for start := 0; start < len(ids); start += maxParams {
		part := ids[start:min(start+maxParams, len(ids))]
		args := make([]any, 0, len(part)+1)
		args = append(args, cid)
		for _, id := range part {
			args = append(args, id)
		}
		err := b.scanDocs(ctx, `SELECT `+docColumns(vectors)+` WHERE d.collection_id = ? AND d.id IN (`+placeholders(len(part))+`)`,
			args, func(d *document.Document) error {
				out = append(out, d)
				return nil
			})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// docColumns selects what scanDocs reads, from documents d, and with
// vectors its vector row: without, the vectors table is not touched at all.
func docColumns(vectors bool) string {
	if !vectors {
		return `d.id, d.content, d.source_type, d.source_name, d.metadata, x'', d.provenance FROM documents d`
	}
	return `d.id, d.content, d.source_type, d.source_name, d.metadata, coalesce(v.embedding, x''), d.provenance
		FROM documents d LEFT JOIN vectors v ON v.rid = d.rid`
}

func (b *Backend) scanDocs(ctx context.Context, query string, args []any, fn func(*document.Document) error) error {
	return b.readDocs(ctx, b.rs, query, args, fn)
}

// scanAll is scanDocs for reads of a whole collection, on the unmapped
// connection (openDB).
func (b *Backend) scanAll(ctx context.Context, query string, args []any, fn func(*document.Document) error) error {
	return b.readDocs(ctx, b.ss, query, args, fn)
}

func (b *Backend) readDocs(ctx context.Context, st *stmts, query string, args []any, fn func(*document.Document) error) error {
	rows, err := st.query(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("read documents: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.content, &r.sourceType, &r.sourceName, &r.metadata, &r.embedding, &r.provenance); err != nil {
			return fmt.Errorf("read documents: %w", err)
		}
		d, err := decodeRow(r)
		if err != nil {
			return err
		}
		if err := fn(d); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read documents: %w", err)
	}
	return nil
}

// Describe implements store.Describer: the SQLite library the store runs
// on, asked through the store's own connection.
func (b *Backend) Describe(ctx context.Context) (store.Engine, error) {
	e := store.Engine{Name: "sqlite"}
	if err := b.r.QueryRowContext(ctx, `SELECT sqlite_version()`).Scan(&e.Version); err != nil {
		return e, fmt.Errorf("embedded: describe: %w", err)
	}
	return e, nil
}
