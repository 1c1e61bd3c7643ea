package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/index/bitset"
	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/index/hnsw"
	"github.com/quarry-rag/quarry/store"
)

// coll is the in-memory side of one collection: the indexes derived from
// its rows, and the sequence number of the last write they reflect.
//
// mu serialises writers and lets readers share: a writer holds it from the
// SQLite commit until every index reflects the write, so a reader never sees
// half a batch.
type coll struct {
	b   *Backend
	cfg store.CollectionConfig
	cid int64

	// ckptMu serialises checkpoints: two at once would share a temporary
	// directory and sweep each other's away. Taken before mu.
	ckptMu sync.Mutex

	mu  sync.RWMutex
	seq int64 // last write the indexes reflect
	// opened names the checkpoint the indexes were read from; guarded
	// by mu.
	opened string
	// behind is set when the write under way leaves the indexes behind
	// the rows on purpose (beforeWrite, then applied); the next read
	// catches them up. Guarded by mu.
	behind bool
	ids    map[string]uint32 // external id → internal id
	ext    []string          // internal id → external id ("" when free)
	live   *bitset.Set
	meta   *metaIndex
	// metaFile is the checkpoint's metadata postings until a filter or a
	// write first needs them (metaIndex); metaMu guards both.
	metaMu   sync.Mutex
	metaFile *metaCheckpoint

	// vec is the graph and kw the BM25 index. After a collection opens
	// from a checkpoint each stays on disk (vecFile, kwFile) until a
	// search or a write first needs it: a keyword search never reads the
	// graph, a vector search never the BM25 index, and they are most of
	// a checkpoint. vecMu and kwMu guard them, since two readers sharing
	// mu may both ask for an index first; outside read, graph and
	// keyword, only a writer holding mu, after ensureIndexes, uses the
	// fields.
	vecMu   sync.Mutex
	vec     *hnsw.Index
	vecFile *indexFile
	kwMu    sync.Mutex
	kw      *bm25.Index
	kwFile  *indexFile

	// savedMu guards savedSeq and savedAt, the last write whose indexes
	// are on disk and when that was known, and savedCost, how long the
	// last checkpoint took to write (see checkpointIfDue).
	savedMu   sync.Mutex
	savedSeq  int64
	savedAt   time.Time
	savedCost time.Duration
}

func newColl(b *Backend, cid int64, cfg store.CollectionConfig) (*coll, error) {
	c := &coll{b: b, cfg: cfg, cid: cid, savedAt: time.Now()}
	if err := c.reset(); err != nil {
		return nil, err
	}
	return c, nil
}

// reset empties the indexes.
func (c *coll) reset() error {
	v, err := hnsw.New(c.cfg.Model.Dimension, hnsw.Config{Seed: 1, EfConstruction: efConstruction})
	if err != nil {
		return fmt.Errorf("collection %q: %w", c.cfg.Name, err)
	}
	kw, err := bm25.New(bm25.Config{Analyzer: bm25.AnalyzerConfig{Language: c.cfg.Language}})
	if err != nil {
		return fmt.Errorf("collection %q: %w", c.cfg.Name, err)
	}
	c.seq = 0
	c.ids = map[string]uint32{}
	c.ext = nil
	c.live = bitset.New(0)
	c.vecMu.Lock()
	c.vec, c.vecFile = v, nil
	c.vecMu.Unlock()
	c.kwMu.Lock()
	c.kw, c.kwFile = kw, nil
	c.kwMu.Unlock()
	c.metaMu.Lock()
	c.meta, c.metaFile = newMetaIndex(c.cfg.Schema), nil
	c.metaMu.Unlock()
	return nil
}

// addAll indexes docs, each replacing any document with the same id, as a
// sequence of adds would. The graph takes their vectors in one batch
// (hnsw.Index.AddBatch), linked on every core for the same graph whatever
// their number.
func (c *coll) addAll(docs []*document.Document) error {
	if len(docs) == 0 {
		return nil
	}
	if err := c.read(needAll); err != nil {
		return fmt.Errorf("index documents: %w", err)
	}
	// Of documents sharing an id the last wins; the others would only be
	// added to be deleted.
	if len(docs) > 1 {
		last := make(map[string]int, len(docs))
		for i, d := range docs {
			last[d.ID] = i
		}
		if len(last) < len(docs) {
			kept := make([]*document.Document, 0, len(last))
			for i, d := range docs {
				if last[d.ID] == i {
					kept = append(kept, d)
				}
			}
			docs = kept
		}
	}
	vecs := make([][]float32, len(docs))
	for i, d := range docs {
		c.remove(d.ID)
		vecs[i] = d.Embedding
	}
	before := c.vec.IDLimit()
	ids, err := c.vec.AddBatch(vecs, 0)
	if err != nil {
		return fmt.Errorf("index documents: %w", err)
	}
	if row := int64(4 * c.cfg.Model.Dimension); c.mapsVectors(int64(c.vec.IDLimit())*row) && !c.mapsVectors(int64(before)*row) {
		c.mapVectors(c.vec)
	}
	for i, d := range docs {
		if err := c.indexDoc(ids[i], d); err != nil {
			return err
		}
	}
	return nil
}

// indexDoc records document d as graph node id in the other indexes.
func (c *coll) indexDoc(id uint32, d *document.Document) error {
	for int(id) >= len(c.ext) {
		c.ext = append(c.ext, "")
	}
	c.ext[id] = d.ID
	c.ids[d.ID] = id
	c.live.Add(id)
	c.meta.add(id, d)
	if err := c.kw.Add(id, bm25.Doc{ID: d.ID, Title: store.Title(d), Text: d.Content, Code: store.Code(d)}); err != nil {
		return fmt.Errorf("index document %s: %w", d.ID, err)
	}
	return nil
}

// mapsVectors reports whether a graph with this many bytes of vectors
// keeps them in a mapped file (Options.MapVectorsBytes).
func (c *coll) mapsVectors(size int64) bool {
	return c.b.mapVectors > 0 && size >= c.b.mapVectors
}

// mapVectors moves v's vectors into a mapped file in the store's
// directory. Where that fails they stay on the heap, which only costs
// memory, so the write goes on; the failure is logged once per crossing.
func (c *coll) mapVectors(v *hnsw.Index) {
	err := v.MapVectors(c.b.dir)
	if err != nil && !errors.Is(err, errors.ErrUnsupported) {
		c.b.log.Warn("embedded store: the collection's vectors stay on the heap", "collection", c.cfg.Name, "err", err)
	}
}

// remove unindexes a document; unknown ids are ignored.
func (c *coll) remove(extID string) {
	id, ok := c.ids[extID]
	if !ok {
		return
	}
	if c.read(needAll) == nil {
		// Both ids are live: the deletes cannot fail.
		_ = c.vec.Delete(id)
		_ = c.kw.Delete(id)
	}
	c.live.Remove(id)
	c.meta.remove(id)
	c.ext[id] = ""
	delete(c.ids, extID)
}

// compactIfNeeded unlinks deleted graph nodes once they are a tenth of the
// graph: tombstones slow searches, and compaction frees their ids.
func (c *coll) compactIfNeeded() {
	vec, err := c.graph()
	if err != nil {
		return
	}
	meta, err := c.metaIndex()
	if err != nil {
		return
	}
	if d := vec.Deleted(); d > 0 && d*10 >= vec.Len()+d {
		meta.purge() // compaction frees ids for reuse
		vec.Compact()
	}
}

// allow compiles f (nil for none) to the set of live internal ids it
// matches. Without a filter that is the live set itself, not a copy (at
// 100k chunks a copy per search was 12.5 KB): callers hold mu and must not
// change the set.
func (c *coll) allow(f filter.Expr) (*bitset.Set, error) {
	if f == nil {
		return c.live, nil
	}
	// Every live id is below len(c.ext), and the result keeps live ids
	// only, so the graph (maybe not read yet) need not say its id limit.
	meta, err := c.metaIndex()
	if err != nil {
		return nil, err
	}
	s, err := meta.compile(f, len(c.ext))
	if err != nil {
		return nil, err
	}
	s.And(c.live)
	return s, nil
}

// refresh brings the indexes up to the database: another process (or a
// crash) may have committed writes they do not reflect yet.
func (c *coll) refresh(ctx context.Context) error {
	dbSeq, err := c.b.collectionSeq(ctx, c.cid)
	if err != nil {
		return err
	}
	c.mu.RLock()
	behind := dbSeq != c.seq
	c.mu.RUnlock()
	if !behind {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.catchUp(ctx)
}

// catchUp replays the journal written after c.seq. Every write starts
// with it, so it first brings the indexes into memory. Callers hold mu.
func (c *coll) catchUp(ctx context.Context) error {
	if err := c.ensureIndexes(ctx); err != nil {
		return err
	}
	dbSeq, ckptSeq, err := c.seqs(ctx)
	if err != nil {
		return err
	}
	return c.replay(ctx, dbSeq, ckptSeq)
}

// seqs are the collection's sequence numbers in the database: of its
// last write, and of its newest checkpoint.
func (c *coll) seqs(ctx context.Context) (dbSeq, ckptSeq int64, err error) {
	err = c.b.r.QueryRowContext(ctx, `SELECT seq, ckpt_seq FROM collections WHERE id = ?`, c.cid).Scan(&dbSeq, &ckptSeq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, store.ErrCollectionNotFound
	}
	if err != nil {
		return 0, 0, fmt.Errorf("read collection %q: %w", c.cfg.Name, err)
	}
	return dbSeq, ckptSeq, nil
}

// replay brings indexes in memory up to dbSeq, the database's sequence
// number when read: from the journal, or from a later checkpoint when
// another process wrote one (ckptSeq), or from the rows. Callers hold mu.
func (c *coll) replay(ctx context.Context, dbSeq, ckptSeq int64) error {
	if dbSeq == c.seq {
		return nil
	}
	if c.seq < ckptSeq && dbSeq >= c.seq {
		// The journal no longer covers what the indexes miss: another
		// process checkpointed past them and trimmed it. Its checkpoint
		// is a later state of the same rows; open it and replay the
		// journal after it.
		if !c.reopen() || c.seq < ckptSeq || c.seq > dbSeq {
			return c.rebuild(ctx)
		}
		if c.seq == dbSeq {
			return nil
		}
	}
	if dbSeq < c.seq {
		// The database went back in time: rebuild from the rows.
		return c.rebuild(ctx)
	}
	rows, err := c.b.r.QueryContext(ctx, `SELECT DISTINCT id FROM journal WHERE collection_id = ? AND seq > ? AND seq <= ?`, c.cid, c.seq, dbSeq)
	if err != nil {
		return fmt.Errorf("read journal of %q: %w", c.cfg.Name, err)
	}
	var touched []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return fmt.Errorf("read journal of %q: %w", c.cfg.Name, err)
		}
		touched = append(touched, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read journal of %q: %w", c.cfg.Name, err)
	}
	// The rows hold the final state: upsert what exists, drop the rest.
	docs, err := c.b.loadDocs(ctx, c.cid, touched, true)
	if err != nil {
		return err
	}
	found := make(map[string]bool, len(docs))
	for _, d := range docs {
		found[d.ID] = true
	}
	if err := c.addAll(docs); err != nil {
		return err
	}
	for _, id := range touched {
		if !found[id] {
			c.remove(id)
		}
	}
	c.compactIfNeeded()
	c.seq = dbSeq
	return nil
}

// rebuildBatch is how many rows a rebuild indexes at once: enough for the
// graph's batches to keep every core busy, few enough to hold in memory.
const rebuildBatch = 4096

// rebuild replays every row of the collection. Callers hold mu.
func (c *coll) rebuild(ctx context.Context) error {
	if err := c.reset(); err != nil {
		return err
	}
	var dbSeq int64
	if err := c.b.r.QueryRowContext(ctx, `SELECT seq FROM collections WHERE id = ?`, c.cid).Scan(&dbSeq); err != nil {
		return fmt.Errorf("read collection %q: %w", c.cfg.Name, err)
	}
	var n int
	if err := c.b.r.QueryRowContext(ctx, `SELECT count(*) FROM documents WHERE collection_id = ?`, c.cid).Scan(&n); err != nil {
		return fmt.Errorf("count rows of %q: %w", c.cfg.Name, err)
	}
	c.vec.Grow(n) // reset made a fresh graph
	var pending []*document.Document
	err := c.b.scanAll(ctx, `SELECT `+docColumns(true)+` WHERE d.collection_id = ? ORDER BY d.seq, d.id`, []any{c.cid}, func(d *document.Document) error {
		if pending = append(pending, d); len(pending) < rebuildBatch {
			return nil
		}
		err := c.addAll(pending)
		pending = pending[:0]
		return err
	})
	if err == nil {
		err = c.addAll(pending)
	}
	if err != nil {
		return fmt.Errorf("rebuild indexes of %q: %w", c.cfg.Name, err)
	}
	c.seq = dbSeq
	return nil
}

// hits turns internal results into documents read from SQLite, ordered by
// score then external id. Callers hold mu (read or write).
func (c *coll) hits(ctx context.Context, ids []uint32, scores []float64, k int, vectors bool) ([]*document.Document, error) {
	type cand struct {
		ext   string
		score float64
	}
	cands := make([]cand, len(ids))
	for i, id := range ids {
		cands[i] = cand{c.ext[id], scores[i]}
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].score != cands[j].score {
			return cands[i].score > cands[j].score
		}
		return cands[i].ext < cands[j].ext
	})
	if len(cands) > k {
		cands = cands[:k]
	}
	ext := make([]string, len(cands))
	for i, cd := range cands {
		ext[i] = cd.ext
	}
	if c.b.indexOnly {
		out := make([]*document.Document, len(cands))
		for i, cd := range cands {
			out[i] = &document.Document{ID: cd.ext, Score: cd.score, Scored: true}
		}
		return out, nil
	}
	docs, err := c.b.loadDocs(ctx, c.cid, ext, vectors)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*document.Document, len(docs))
	for _, d := range docs {
		byID[d.ID] = d
	}
	out := make([]*document.Document, 0, len(cands))
	for _, cd := range cands {
		d, ok := byID[cd.ext]
		if !ok {
			return nil, fmt.Errorf("collection %q: indexed document %s has no row: the index is stale", c.cfg.Name, cd.ext)
		}
		d.SetScore(cd.score)
		out = append(out, d)
	}
	return out, nil
}

// searchVector runs a filtered vector search.
func (c *coll) searchVector(ctx context.Context, q []float32, f filter.Expr, k int, vectors bool) ([]*document.Document, error) {
	if err := c.refresh(ctx); err != nil {
		return nil, err
	}
	if err := c.loadIndexes(ctx, needGraph); err != nil {
		return nil, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	allow, err := c.allow(f)
	if err != nil {
		return nil, err
	}
	ids, scores, err := c.vectorIDs(q, allow, f == nil, k)
	if err != nil {
		return nil, err
	}
	return c.hits(ctx, ids, scores, k, vectors)
}

// vectorIDs returns candidates for the k best allowed documents. Small
// allow-sets are scanned exactly and completely, so ties are broken by
// external id; large ones walk the graph with a few extra candidates for
// the same reason. Callers hold mu.
func (c *coll) vectorIDs(q []float32, allow *bitset.Set, all bool, k int) ([]uint32, []float64, error) {
	n := allow.Count()
	if n == 0 {
		return nil, nil, nil
	}
	vec, err := c.graph() // read by loadIndexes: this only returns it
	if err != nil {
		return nil, nil, fmt.Errorf("vector search in %q: %w", c.cfg.Name, err)
	}
	want := k + tieSlack
	opt := hnsw.SearchOptions{Allow: allow}
	if vec.ExactFor(allow, want, 0) {
		want = n
	} else if all {
		opt.Allow = nil // every live node: a plain graph walk
	}
	res, err := vec.Search(q, want, opt)
	if err != nil {
		return nil, nil, fmt.Errorf("vector search in %q: %w", c.cfg.Name, err)
	}
	ids := make([]uint32, len(res))
	scores := make([]float64, len(res))
	for i, r := range res {
		ids[i], scores[i] = r.ID, float64(r.Score)
	}
	return ids, scores, nil
}

// searchHybrid runs both branches on the indexes under one read lock, so
// they see the same snapshot, fuses the candidates by id and reads only the
// top k rows.
func (c *coll) searchHybrid(ctx context.Context, req store.SearchRequest) ([]store.Hit, error) {
	if err := c.refresh(ctx); err != nil {
		return nil, err
	}
	if err := c.loadIndexes(ctx, needGraph|needKeyword); err != nil {
		return nil, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	allow, err := c.allow(req.Filter)
	if err != nil {
		return nil, err
	}
	if allow.Count() == 0 {
		return nil, nil
	}
	branch := 2 * req.TopK
	var opt bm25.SearchOptions
	if req.Filter != nil {
		opt.Allow = allow
	}
	// The branches share nothing but read-only indexes under the read
	// lock held here, so the keyword branch runs beside the graph walk:
	// a hybrid search then takes about as long as its slower branch, not
	// the sum of both (0.90× the p50 of running them in turn at 100k
	// chunks, three runs; the walk is slower while the branch runs beside
	// it, so the gain is less than the branch's own time).
	var kres []bm25.Hit
	kwDone := make(chan struct{})
	go func() {
		defer close(kwDone)
		kres = c.kw.Search(req.Query, branch, opt) // read by loadIndexes
	}()
	vids, vscores, err := c.vectorIDs(req.Embedding, allow, req.Filter == nil, branch)
	<-kwDone
	if err != nil {
		return nil, err
	}
	if err := c.kw.Err(); err != nil {
		return nil, fmt.Errorf("collection %q: keyword index: %w", c.cfg.Name, err)
	}
	vdocs := c.ranked(vids, vscores, branch)
	kdocs := make([]*document.Document, len(kres))
	for i, h := range kres {
		kdocs[i] = &document.Document{ID: h.ID, Score: h.Score, Scored: true}
	}
	fused := store.Fuse(vdocs, kdocs, req.Fusion, req.Explain)
	if len(fused) > req.TopK {
		fused = fused[:req.TopK]
	}
	if c.b.indexOnly {
		return fused, nil
	}
	ext := make([]string, len(fused))
	for i, h := range fused {
		ext[i] = h.Doc.ID
	}
	docs, err := c.b.loadDocs(ctx, c.cid, ext, req.Vectors)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*document.Document, len(docs))
	for _, d := range docs {
		byID[d.ID] = d
	}
	for i, h := range fused {
		d, ok := byID[h.Doc.ID]
		if !ok {
			return nil, fmt.Errorf("collection %q: indexed document %s has no row: the index is stale", c.cfg.Name, h.Doc.ID)
		}
		d.SetScore(h.Doc.Score)
		fused[i].Doc = d
	}
	return fused, nil
}

// ranked turns internal candidates into id-only documents ordered by score,
// then external id, keeping the best k.
func (c *coll) ranked(ids []uint32, scores []float64, k int) []*document.Document {
	docs := make([]*document.Document, len(ids))
	for i, id := range ids {
		docs[i] = &document.Document{ID: c.ext[id], Score: scores[i], Scored: true}
	}
	store.SortDocuments(docs)
	if len(docs) > k {
		docs = docs[:k]
	}
	return docs
}

// efConstruction is the graph's build-time candidate list. Half hnswlib's
// usual 200 keeps recall and halves insert cost, which bounds ingestion
// speed: `quarry bench ann --n 20000 --dim 512 --queries 300` gives
// recall@10 0.9993 at ef 64 with 100 against 0.9990 with 200.
const efConstruction = 100

// tieSlack is how many extra graph candidates a search asks for so that
// results tied on score at the k-th place are ordered by external id.
const tieSlack = 8

// searchKeyword scores the allowed documents by BM25. The index orders
// ties by external id itself.
func (c *coll) searchKeyword(ctx context.Context, query string, f filter.Expr, k int, vectors bool) ([]*document.Document, error) {
	if err := c.refresh(ctx); err != nil {
		return nil, err
	}
	if err := c.loadIndexes(ctx, needKeyword); err != nil {
		return nil, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	var opt bm25.SearchOptions
	if f != nil {
		allow, err := c.allow(f)
		if err != nil {
			return nil, err
		}
		if allow.Count() == 0 {
			return nil, nil
		}
		opt.Allow = allow
	}
	res := c.kw.Search(query, k, opt) // read by loadIndexes
	if err := c.kw.Err(); err != nil {
		return nil, fmt.Errorf("collection %q: keyword index: %w", c.cfg.Name, err)
	}
	ids := make([]uint32, len(res))
	scores := make([]float64, len(res))
	for i, h := range res {
		ids[i], scores[i] = h.Doc, h.Score
	}
	return c.hits(ctx, ids, scores, k, vectors)
}

func (c *coll) count(ctx context.Context, f filter.Expr) (int, error) {
	if err := c.refresh(ctx); err != nil {
		return 0, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	allow, err := c.allow(f)
	if err != nil {
		return 0, err
	}
	return allow.Count(), nil
}

// lagRows is how many rows another process may have written since the
// indexes were last brought up before a write replays them first: below
// it, catching up costs little beside the write.
const lagRows = 1024

// beforeWrite brings the indexes up to the rows before a write of n rows,
// unless another process wrote far more since (a bulk ingestion beside
// quarry serve's adds): replaying all of it would cost that much more
// than the write, which needs nothing from the indexes. They then stay
// behind, the write is not applied to them (applied), and the next read
// catches them up from the journal (refresh). Callers hold mu.
func (c *coll) beforeWrite(ctx context.Context, n int) error {
	dbSeq, ckptSeq, err := c.seqs(ctx)
	if err != nil {
		return err
	}
	c.behind = false
	far := c.seq < ckptSeq // the rows in between are in another's checkpoint
	if !far && dbSeq > c.seq {
		limit := max(lagRows, 4*n)
		var lag int
		if err := c.b.r.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM journal WHERE collection_id = ? AND seq > ? LIMIT ?)`, c.cid, c.seq, limit+1).Scan(&lag); err != nil {
			return fmt.Errorf("read journal of %q: %w", c.cfg.Name, err)
		}
		far = lag > limit
	}
	if far && dbSeq > c.seq {
		c.behind = true
		return nil
	}
	if err := c.ensureIndexes(ctx); err != nil {
		return err
	}
	return c.replay(ctx, dbSeq, ckptSeq)
}

// upsert commits docs and indexes them.
func (c *coll) upsert(ctx context.Context, docs []*document.Document) error {
	rows := make([]row, len(docs))
	for i, d := range docs {
		r, err := encodeRow(d)
		if err != nil {
			return err
		}
		rows[i] = r
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.beforeWrite(ctx, len(rows)); err != nil {
		return err
	}
	seq, err := c.b.writeRows(ctx, c.cid, rows, nil)
	if err != nil {
		return err
	}
	return c.applied(ctx, seq, func() error {
		clones := make([]*document.Document, len(docs))
		for i, d := range docs {
			clones[i] = d.Clone()
		}
		return c.addAll(clones)
	})
}

// applied updates the indexes after a commit at seq. When seq is not the
// next write (another process wrote in between), or applying fails, the
// journal is replayed instead, unless beforeWrite left the indexes behind:
// SQLite has the truth either way.
func (c *coll) applied(ctx context.Context, seq int64, apply func() error) error {
	if seq != c.seq+1 && c.behind {
		return nil // left behind on purpose (beforeWrite)
	}
	if seq != c.seq+1 {
		if err := c.catchUp(ctx); err != nil {
			return fmt.Errorf("collection %q: write committed but indexes could not catch up: %w", c.cfg.Name, err)
		}
		return nil
	}
	err := apply()
	if err == nil {
		c.seq = seq
		c.compactIfNeeded()
		return nil
	}
	c.b.log.Warn("embedded store: a committed write could not be applied to the indexes; rebuilding them from rows", "collection", c.cfg.Name, "err", err)
	if err := c.rebuild(ctx); err != nil {
		return fmt.Errorf("collection %q: write committed but indexes need a rebuild: %w", c.cfg.Name, err)
	}
	return nil
}

func (c *coll) delete(ctx context.Context, f filter.Expr) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.catchUp(ctx); err != nil {
		return 0, err
	}
	allow, err := c.allow(f)
	if err != nil {
		return 0, err
	}
	var ext []string
	allow.Range(func(id uint32) bool {
		ext = append(ext, c.ext[id])
		return true
	})
	if len(ext) == 0 {
		return 0, nil
	}
	seq, err := c.b.writeRows(ctx, c.cid, nil, ext)
	if err != nil {
		return 0, err
	}
	err = c.applied(ctx, seq, func() error {
		for _, id := range ext {
			c.remove(id)
		}
		return nil
	})
	return len(ext), err
}
