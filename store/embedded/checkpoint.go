package embedded

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/index/bitset"
	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/index/hnsw"
)

// A checkpoint is a directory index/<collection>/ckpt-<seq>/ holding one file
// per index and a manifest with the sequence number and each file's SHA-256.
// CURRENT names the live checkpoint and is replaced atomically, so a crash
// while writing leaves the previous checkpoint (or none) in place.
const (
	checkpointVersion = 1
	currentFile       = "CURRENT"
	manifestFile      = "manifest.json"
)

type manifest struct {
	Version int               `json:"version"`
	Seq     int64             `json:"seq"`
	Files   map[string]string `json:"files"` // name → hex SHA-256
	Sizes   map[string]int64  `json:"sizes"` // name → bytes
}

// idsFile is the external-id table; metaFile the filter index.
type idsFile struct {
	Ext []string
}

type metaFile struct {
	Keys  []postingKey
	Lists [][]uint32
}

func (b *Backend) indexDir(name string) string { return filepath.Join(b.dir, "index", name) }

// load fills the indexes from the newest valid checkpoint, then replays the
// writes it misses; without a usable checkpoint it rebuilds from the rows.
// Callers hold mu.
func (c *coll) load(ctx context.Context) error {
	seq, err := c.readCheckpoint()
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			c.b.log.Warn("embedded store: checkpoint unusable, rebuilding from rows", "collection", c.cfg.Name, "err", err)
		}
		c.dropCheckpoint()
		return c.rebuild(ctx)
	}
	c.seq = seq
	dbSeq, err := c.b.collectionSeq(ctx, c.cid)
	if err != nil {
		return err
	}
	if seq > dbSeq {
		c.b.log.Warn("embedded store: checkpoint is ahead of the database, rebuilding from rows", "collection", c.cfg.Name)
		return c.rebuild(ctx)
	}
	if seq == dbSeq {
		return nil // up to date: the graph is read when first needed
	}
	return c.catchUp(ctx)
}

func (c *coll) readCheckpoint() (int64, error) {
	dir := c.b.indexDir(c.cfg.Name)
	cur, err := os.ReadFile(filepath.Join(dir, currentFile))
	if err != nil {
		return 0, err
	}
	name := strings.TrimSpace(string(cur))
	if !strings.HasPrefix(name, "ckpt-") || strings.ContainsAny(name, `/\`) {
		return 0, fmt.Errorf("CURRENT names %q", name)
	}
	ck := filepath.Join(dir, name)
	c.opened = name
	raw, err := os.ReadFile(filepath.Join(ck, manifestFile))
	if err != nil {
		return 0, fmt.Errorf("manifest: %w", err)
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return 0, fmt.Errorf("manifest: %w", err)
	}
	if m.Version != checkpointVersion {
		return 0, fmt.Errorf("checkpoint version %d, want %d", m.Version, checkpointVersion)
	}
	read := func(file string) ([]byte, error) {
		b, err := os.ReadFile(filepath.Join(ck, file))
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(b)
		if hex.EncodeToString(sum[:]) != m.Files[file] {
			return nil, fmt.Errorf("%s: checksum mismatch", file)
		}
		return b, nil
	}
	idsRaw, err := read("ids.gob")
	if err != nil {
		return 0, err
	}
	metaRaw, err := read("meta.gob")
	if err != nil {
		return 0, err
	}
	// The index files check themselves and are most of the checkpoint:
	// they are not read here (see graph and keyword), only noted with
	// their identity, so a checkpoint another process writes over them
	// later is not mistaken for this one.
	note := func(file string) (*indexFile, error) {
		p := filepath.Join(ck, file)
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if st.Size() != m.Sizes[file] {
			return nil, fmt.Errorf("%s: %d bytes, the manifest says %d", file, st.Size(), m.Sizes[file])
		}
		return &indexFile{path: p, info: st}, nil
	}
	var ids idsFile
	if err := gob.NewDecoder(bytes.NewReader(idsRaw)).Decode(&ids); err != nil {
		return 0, fmt.Errorf("ids: %w", err)
	}
	graph, err := note("hnsw.bin")
	if err != nil {
		return 0, fmt.Errorf("graph: %w", err)
	}
	keyword, err := note("bm25.bin")
	if err != nil {
		return 0, fmt.Errorf("keyword index: %w", err)
	}
	if err := c.install(ids, metaRaw, graph, keyword); err != nil {
		return 0, err
	}
	return m.Seq, nil
}

// install replaces the indexes with checkpointed ones, the graph, the
// keyword index and the metadata postings still undecoded.
func (c *coll) install(ids idsFile, metaRaw []byte, graph, keyword *indexFile) error {
	c.ext = ids.Ext
	c.ids = make(map[string]uint32, len(ids.Ext))
	c.live = bitset.New(len(ids.Ext))
	for i, e := range ids.Ext {
		if e == "" {
			continue
		}
		c.ids[e] = uint32(i)
		c.live.Add(uint32(i))
	}
	c.vecMu.Lock()
	c.vec, c.vecFile = nil, graph
	c.vecMu.Unlock()
	c.kwMu.Lock()
	c.kw, c.kwFile = nil, keyword
	c.kwMu.Unlock()
	c.metaMu.Lock()
	c.meta, c.metaFile = nil, &metaCheckpoint{raw: metaRaw, ext: slices.Clone(ids.Ext)}
	c.metaMu.Unlock()
	return nil
}

// metaCheckpoint is a checkpoint's metadata postings not decoded yet: the
// checksummed file and the document ids they were written against.
type metaCheckpoint struct {
	raw []byte
	ext []string
}

// metaIndex returns the metadata postings, decoding them from the
// checkpoint on first use: a search without a filter never needs them,
// and for a field of distinct values (a source name per chunk) they were
// most of opening a large collection. Callers hold mu, for reading or
// writing.
func (c *coll) metaIndex() (*metaIndex, error) {
	c.metaMu.Lock()
	defer c.metaMu.Unlock()
	if c.metaFile == nil {
		return c.meta, nil
	}
	var mf metaFile
	if err := gob.NewDecoder(bytes.NewReader(c.metaFile.raw)).Decode(&mf); err != nil {
		return nil, fmt.Errorf("collection %q: metadata checkpoint: %w", c.cfg.Name, err)
	}
	if len(mf.Keys) != len(mf.Lists) {
		return nil, fmt.Errorf("collection %q: metadata checkpoint does not fit the collection", c.cfg.Name)
	}
	m, err := buildMeta(c.cfg.Schema, c.metaFile.ext, mf)
	if err != nil {
		return nil, fmt.Errorf("collection %q: metadata %w", c.cfg.Name, err)
	}
	c.meta, c.metaFile = m, nil
	return m, nil
}

// buildMeta makes the metadata postings of a checkpoint, checking each
// list holds ascending ids of documents the checkpoint has.
func buildMeta(schema *document.Schema, ext []string, mf metaFile) (*metaIndex, error) {
	m := newMetaIndex(schema)
	// Sized once: a field of distinct values (a source name per document)
	// has as many keys as documents, and growing its map and lists key by
	// key was most of a large collection's opening.
	perField := map[string]int{}
	for _, k := range mf.Keys {
		perField[k.Field]++
	}
	for f, n := range perField {
		if _, ok := m.fields[f]; !ok {
			return nil, fmt.Errorf("checkpoint: field %q is not filterable", f)
		}
		m.postings[f] = make(map[string]uint32, n)
	}
	m.lists = make([][]uint32, 0, len(mf.Keys))
	m.keys = make([]postingKey, 0, len(mf.Keys))
	for i, k := range mf.Keys {
		list := mf.Lists[i]
		for j, id := range list {
			if int(id) >= len(ext) || ext[id] == "" || (j > 0 && list[j-1] >= id) {
				return nil, fmt.Errorf("checkpoint: posting %s=%s holds a free or unordered id", k.Field, k.Key)
			}
			m.present[k.Field].Add(id)
		}
		p := m.posting(k.Field, k.Key)
		m.lists[p] = list
		if col, ok := m.numeric[k.Field]; ok && strings.HasPrefix(k.Key, "n") {
			f, err := strconv.ParseFloat(k.Key[1:], 64)
			if err != nil {
				return nil, fmt.Errorf("checkpoint: numeric key %q: %w", k.Key, err)
			}
			for len(col) < len(ext) {
				col = append(col, math.NaN())
			}
			for _, id := range list {
				col[id] = f
			}
			m.numeric[k.Field] = col
		}
	}
	return m, nil
}

// errReplaced is an index file that another process's checkpoint replaced
// after this one opened: it may not fit the ids read then.
var errReplaced = errors.New("the file was replaced since the collection opened")

// indexFile is a checkpoint's index file not read yet: its path and what
// the file was when the checkpoint was opened.
type indexFile struct {
	path string
	info os.FileInfo
}

// open opens the file, if it is still the one noted.
func (f *indexFile) open() (*os.File, sizedReader, error) {
	fh, err := os.Open(f.path)
	if errors.Is(err, os.ErrNotExist) {
		// Another process's newer checkpoint removed this one.
		return nil, sizedReader{}, errReplaced
	}
	if err != nil {
		return nil, sizedReader{}, err
	}
	st, err := fh.Stat()
	if err == nil && (!os.SameFile(st, f.info) || st.Size() != f.info.Size() || !st.ModTime().Equal(f.info.ModTime())) {
		err = errReplaced
	}
	if err != nil {
		fh.Close()
		return nil, sizedReader{}, err
	}
	return fh, sizedReader{bufio.NewReaderSize(fh, 1<<20), int(st.Size())}, nil
}

// graph returns the vector index, reading it from the checkpoint on first
// use and checking it fits the documents the checkpoint holds. Callers
// hold mu, for reading or writing.
func (c *coll) graph() (*hnsw.Index, error) {
	c.vecMu.Lock()
	defer c.vecMu.Unlock()
	if c.vecFile == nil {
		return c.vec, nil
	}
	fh, r, err := c.vecFile.open()
	if err != nil {
		return nil, fmt.Errorf("collection %q: graph checkpoint: %w", c.cfg.Name, err)
	}
	defer fh.Close()
	var vec *hnsw.Index
	if c.mapsVectors(int64(r.n)) {
		vec, err = hnsw.ReadMapped(r, c.b.dir)
		if errors.Is(err, errors.ErrUnsupported) {
			vec, err = hnsw.Read(r)
		}
	} else {
		vec, err = hnsw.Read(r)
	}
	if err == nil && vec.Dim() != c.cfg.Model.Dimension {
		err = fmt.Errorf("dimension %d for a collection of %d", vec.Dim(), c.cfg.Model.Dimension)
	}
	if err == nil {
		err = c.fits(vec.Len(), vec.Contains)
	}
	if err != nil {
		return nil, fmt.Errorf("collection %q: graph checkpoint: %w", c.cfg.Name, err)
	}
	c.vec, c.vecFile = vec, nil
	return vec, nil
}

// keyword is graph for the BM25 index.
func (c *coll) keyword() (*bm25.Index, error) {
	c.kwMu.Lock()
	defer c.kwMu.Unlock()
	if c.kwFile == nil {
		return c.kw, nil
	}
	fh, r, err := c.kwFile.open()
	if err != nil {
		return nil, fmt.Errorf("collection %q: keyword index checkpoint: %w", c.cfg.Name, err)
	}
	defer fh.Close()
	kw, err := bm25.Read(r)
	if err == nil {
		err = c.fits(kw.Len(), kw.Contains)
	}
	if err != nil {
		return nil, fmt.Errorf("collection %q: keyword index checkpoint: %w", c.cfg.Name, err)
	}
	c.kw, c.kwFile = kw, nil
	return kw, nil
}

// fits checks an index read from the checkpoint holds exactly the
// checkpoint's documents.
func (c *coll) fits(n int, has func(uint32) bool) error {
	for e, id := range c.ids {
		if !has(id) {
			return fmt.Errorf("document %s is not in it", e)
		}
	}
	if n != len(c.ids) {
		return fmt.Errorf("%d documents but %d in the index", len(c.ids), n)
	}
	return nil
}

// The indexes a request needs.
const (
	needGraph = 1 << iota
	needKeyword
	needMeta
	needAll = needGraph | needKeyword | needMeta
)

// read brings the indexes needed into memory, side by side when both are
// still on disk: they share nothing. Callers hold mu, for reading or
// writing. Once they are in memory it only takes two locks, so every
// write may call it.
func (c *coll) read(need int) error {
	c.vecMu.Lock()
	both := need&(needGraph|needKeyword) == needGraph|needKeyword && c.vecFile != nil
	c.vecMu.Unlock()
	c.kwMu.Lock()
	both = both && c.kwFile != nil
	c.kwMu.Unlock()
	var gerr, kerr error
	var wg sync.WaitGroup
	switch {
	case both:
		wg.Go(func() { _, gerr = c.graph() })
	case need&needGraph != 0:
		_, gerr = c.graph()
	}
	if need&needKeyword != 0 {
		_, kerr = c.keyword()
	}
	var merr error
	if need&needMeta != 0 {
		_, merr = c.metaIndex()
	}
	wg.Wait()
	return errors.Join(gerr, kerr, merr)
}

// ensureIndexes brings both indexes into memory, or, when a checkpoint
// file is unusable, rebuilds every index from the rows. Callers hold mu
// for writing.
func (c *coll) ensureIndexes(ctx context.Context) error {
	err := c.read(needAll)
	if err == nil {
		return nil
	}
	if errors.Is(err, errReplaced) {
		// Another process checkpointed since: open its checkpoint and
		// replay the journal after it (catchUp), far cheaper than
		// indexing every row again.
		// A file replaced inside the checkpoint opened (not a newer
		// checkpoint beside it) is not trusted: its ids may differ.
		if prev := c.opened; c.reopen() && c.opened != prev {
			if err = c.read(needAll); err == nil {
				return nil
			}
		}
		c.b.log.Info("embedded store: a newer checkpoint replaced the one opened, rebuilding from rows", "collection", c.cfg.Name, "err", err)
	} else {
		c.b.log.Warn("embedded store: checkpoint unusable, rebuilding from rows", "collection", c.cfg.Name, "err", err)
		c.dropCheckpoint()
	}
	return c.rebuild(ctx)
}

// reopen drops the indexes in memory and opens the checkpoint CURRENT
// names, setting seq to it; false when there is none usable (the caller
// rebuilds). Callers hold mu for writing.
func (c *coll) reopen() bool {
	if err := c.reset(); err != nil {
		return false
	}
	seq, err := c.readCheckpoint()
	if err != nil {
		return false
	}
	c.seq = seq
	return true
}

// dropCheckpoint removes an unusable checkpoint, so the next one is
// written even at the same sequence number.
func (c *coll) dropCheckpoint() {
	if err := os.RemoveAll(c.b.indexDir(c.cfg.Name)); err != nil {
		c.b.log.Warn("embedded store: cannot remove an unusable checkpoint", "collection", c.cfg.Name, "err", err)
	}
}

// loadIndexes brings the indexes a read needs into memory before the read
// takes mu for reading: reading them needs mu only for reading, a rebuild for
// writing.
func (c *coll) loadIndexes(ctx context.Context, need int) error {
	c.mu.RLock()
	err := c.read(need)
	c.mu.RUnlock()
	if err == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ensureIndexes(ctx)
}

// checkpointIfDue checkpoints the collection when its journal holds rows
// ids or more, or when a write has waited age since the last checkpoint.
func (c *coll) checkpointIfDue(ctx context.Context, rows int, age time.Duration) error {
	c.mu.RLock()
	seq := c.seq
	c.mu.RUnlock()
	c.savedMu.Lock()
	saved, at, cost := c.savedSeq, c.savedAt, c.savedCost
	c.savedMu.Unlock()
	// A checkpoint writes the whole collection, so under a stream of
	// writes (a bulk load through the API) they are spaced to at least
	// twenty times what the last one took: at most a twentieth of the
	// time goes to background checkpoints, however large the collection.
	if seq == saved || time.Since(at) < 20*cost {
		return nil
	}
	if time.Since(at) < age {
		var n int
		if err := c.b.r.QueryRowContext(ctx, `SELECT count(*) FROM journal WHERE collection_id = ?`, c.cid).Scan(&n); err != nil {
			return fmt.Errorf("checkpoint %q: %w", c.cfg.Name, err)
		}
		if n < rows {
			return nil
		}
	}
	return c.checkpoint(ctx)
}

// checkpoint writes the collection's indexes if they changed since the last
// checkpoint, then trims the journal the checkpoint covers.
func (c *coll) checkpoint(ctx context.Context) error {
	c.ckptMu.Lock()
	defer c.ckptMu.Unlock()
	c.mu.RLock()
	defer c.mu.RUnlock()
	var ckptSeq int64
	if err := c.b.r.QueryRowContext(ctx, `SELECT ckpt_seq FROM collections WHERE id = ?`, c.cid).Scan(&ckptSeq); err != nil {
		return fmt.Errorf("checkpoint %q: %w", c.cfg.Name, err)
	}
	cur, _ := os.ReadFile(filepath.Join(c.b.indexDir(c.cfg.Name), currentFile))
	name := "ckpt-" + strconv.FormatInt(c.seq, 10)
	if c.seq == ckptSeq && strings.TrimSpace(string(cur)) == name || c.seq < ckptSeq {
		// On disk already, or another process (an ingestion beside
		// quarry serve) saved a later state: writing this one would
		// only compete with it for the disk and the cores.
		c.markSaved(c.seq)
		return nil
	}
	start := time.Now()
	if err := c.writeCheckpoint(name); err != nil {
		return fmt.Errorf("checkpoint %q: %w", c.cfg.Name, err)
	}
	cost := time.Since(start)
	if _, err := c.b.w.ExecContext(ctx, `UPDATE collections SET ckpt_seq = ? WHERE id = ? AND ckpt_seq < ?`, c.seq, c.cid, c.seq); err != nil {
		return fmt.Errorf("checkpoint %q: %w", c.cfg.Name, err)
	}
	if _, err := c.b.w.ExecContext(ctx, `DELETE FROM journal WHERE collection_id = ? AND seq <= ?`, c.cid, c.seq); err != nil {
		return fmt.Errorf("checkpoint %q: trim journal: %w", c.cfg.Name, err)
	}
	c.markSaved(c.seq)
	c.savedMu.Lock()
	c.savedCost = cost
	c.savedMu.Unlock()
	return nil
}

// markSaved records that the indexes at seq are on disk. It takes its own
// lock, since checkpoint holds mu only for reading.
func (c *coll) markSaved(seq int64) {
	c.savedMu.Lock()
	defer c.savedMu.Unlock()
	c.savedSeq, c.savedAt = seq, time.Now()
}

func (c *coll) writeCheckpoint(name string) error {
	dir := c.b.indexDir(c.cfg.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// While its temporary files exist the write holds the checkpoint lock
	// shared, so no sweep of leftovers (sweepTemporary) removes them.
	unlock, _, err := c.b.lockCheckpoints(c.cfg.Name, false)
	if err != nil {
		return err
	}
	defer unlock()
	// The temporary folder is this process's own: two processes of one
	// knowledge base (quarry serve beside quarry ingest) may checkpoint
	// the same sequence number at once.
	tmp := filepath.Join(dir, name+"."+strconv.Itoa(os.Getpid())+".tmp")
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return err
	}
	m := manifest{Version: checkpointVersion, Seq: c.seq, Files: map[string]string{}, Sizes: map[string]int64{}}
	write := func(file string, fn func(io.Writer) error) error {
		f, err := os.Create(filepath.Join(tmp, file))
		if err != nil {
			return err
		}
		h := sha256.New()
		cw := &countWriter{w: io.MultiWriter(f, h)}
		bw := bufio.NewWriterSize(cw, 1<<20)
		err = fn(bw)
		if err == nil {
			err = bw.Flush()
		}
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		m.Files[file] = hex.EncodeToString(h.Sum(nil))
		m.Sizes[file] = cw.n
		return nil
	}
	if err := write("ids.gob", func(w io.Writer) error { return gob.NewEncoder(w).Encode(idsFile{Ext: c.ext}) }); err != nil {
		return err
	}
	if err := c.read(needGraph | needKeyword | needMeta); err != nil {
		return err
	}
	mf := metaFile{Keys: c.meta.keys, Lists: make([][]uint32, len(c.meta.lists))}
	for i, l := range c.meta.lists {
		mf.Lists[i] = c.meta.live(l)
	}
	if err := write("meta.gob", func(w io.Writer) error { return gob.NewEncoder(w).Encode(mf) }); err != nil {
		return err
	}
	if err := write("hnsw.bin", func(w io.Writer) error { _, err := c.vec.WriteTo(w); return err }); err != nil {
		return err
	}
	if err := write("bm25.bin", func(w io.Writer) error { _, err := c.kw.WriteTo(w); return err }); err != nil {
		return err
	}
	if err := write(manifestFile, func(w io.Writer) error { return json.NewEncoder(w).Encode(m) }); err != nil {
		return err
	}
	final := filepath.Join(dir, name)
	if _, err := os.Stat(filepath.Join(final, manifestFile)); err == nil {
		// Another process finished this checkpoint first: the same rows,
		// the same indexes. Its files may be open there; keep them.
		if err := os.RemoveAll(tmp); err != nil {
			return err
		}
	} else {
		if err := os.RemoveAll(final); err != nil {
			return err
		}
		if err := os.Rename(tmp, final); err != nil {
			return err
		}
	}
	if err := writeFileAtomic(filepath.Join(dir, currentFile), []byte(name+"\n")); err != nil {
		return err
	}
	// Older checkpoints are no longer reachable. Temporary folders are
	// not this write's to remove: another process may be filling one
	// (sweepTemporary removes those a crash left).
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "ckpt-") && e.Name() != name && !isTemporary(e) {
			_ = os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
	return nil
}

// isTemporary reports whether an entry of a collection's index folder is
// one a checkpoint write keeps only until it finishes: its ckpt-<seq>.tmp
// folder (writeCheckpoint) or the file CURRENT.tmp (writeFileAtomic).
// Nothing else there is matched, whatever its name.
func isTemporary(e os.DirEntry) bool {
	if e.Type().IsRegular() {
		pid, ok := strings.CutPrefix(e.Name(), currentFile+".")
		pid, tmp := strings.CutSuffix(pid, ".tmp")
		return e.Name() == currentFile+".tmp" || ok && tmp && digits(pid)
	}
	if !e.IsDir() {
		return false
	}
	seq, ok := strings.CutPrefix(e.Name(), "ckpt-")
	seq, tmp := strings.CutSuffix(seq, ".tmp")
	seq, pid, hasPid := strings.Cut(seq, ".") // ckpt-<seq>.<pid>.tmp; ckpt-<seq>.tmp before
	return ok && tmp && digits(seq) && (!hasPid || digits(pid))
}

// digits reports whether s is a run of decimal digits.
func digits(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }

// sweepTemporary removes the temporary files of checkpoint writes that
// never finished (the process died mid-write). Nothing else would: a
// checkpoint write sweeps the folder only when it finishes one, and a
// collection that is only read never writes one. It runs as the
// collection opens, before it is among b.colls, so no checkpoint of this
// Backend's can be writing. A writer elsewhere (another process, or
// another Backend of this folder) holds the checkpoint lock shared while
// its temporary files exist: the sweep takes it exclusive without
// waiting and, when it cannot, leaves everything to the next open. Under
// the lock every temporary file present is a leftover, so the folder is
// listed again there. A failure is logged, not returned: a leftover costs
// disk space, never a wrong answer.
func (c *coll) sweepTemporary() {
	dir := c.b.indexDir(c.cfg.Name)
	left := func() []string {
		entries, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			c.b.log.Warn("embedded store: cannot look for temporary checkpoint files", "collection", c.cfg.Name, "err", err)
		}
		var out []string
		for _, e := range entries {
			if isTemporary(e) {
				out = append(out, e.Name())
			}
		}
		return out
	}
	// Most opens find nothing, and then take no lock (nor create its
	// file, which a read-only folder would refuse).
	if len(left()) == 0 {
		return
	}
	unlock, ok, err := c.b.lockCheckpoints(c.cfg.Name, true)
	if err != nil {
		c.b.log.Warn("embedded store: temporary checkpoint files left in place", "collection", c.cfg.Name, "err", err)
		return
	}
	if !ok {
		c.b.log.Debug("embedded store: a checkpoint is being written elsewhere; temporary files are swept on a later open", "collection", c.cfg.Name)
		return
	}
	defer unlock()
	for _, name := range left() {
		p := filepath.Join(dir, name)
		if sweepMinAge > 0 && touchedSince(p, time.Now().Add(-sweepMinAge)) {
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			c.b.log.Warn("embedded store: cannot remove a temporary checkpoint file", "collection", c.cfg.Name, "path", p, "err", err)
			continue
		}
		c.b.log.Info("embedded store: removed a temporary checkpoint file a write that did not finish left behind", "collection", c.cfg.Name, "path", p)
	}
}

// touchedSince reports whether p, or anything in it, was modified after t.
func touchedSince(p string, t time.Time) bool {
	recent := false
	_ = filepath.WalkDir(p, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := d.Info(); err == nil && info.ModTime().After(t) {
			recent = true
			return filepath.SkipAll
		}
		return nil
	})
	return recent
}

// writeFileAtomic replaces path with data so a reader sees the old or the
// new content, never a mix.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + "." + strconv.Itoa(os.Getpid()) + ".tmp" // see writeCheckpoint
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// sizedReader tells a decoder how much input there is (an upper bound on
// what it may allocate) while streaming it.
type sizedReader struct {
	io.Reader
	n int
}

func (r sizedReader) Len() int { return r.n }
