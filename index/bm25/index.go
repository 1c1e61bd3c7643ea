// Package bm25 is Quarry's keyword index: text analyzers, an in-memory
// inverted index scored with BM25, top-k search with MaxScore early
// termination restricted to an allow-set of ids, deletes, and a versioned,
// checksummed binary format.
//
// A document is (id, title, text). The title, when there is one, is scored
// with the text as one BM25F field (the weighted sum of the two fields'
// term frequencies over their weighted sum of lengths, as Elasticsearch's
// combined_fields does): with the default title weight of 1 this is exactly
// BM25 over title and text concatenated, Anserini's "flat" BEIR baseline.
//
// Documents have dense uint32 ids chosen by the caller, so the index shares
// an id space with the vector index and the metadata bitsets an allow-set
// is compiled from. Adding ids in ascending order is the fast path; any
// order works.
//
// One writer and many readers may use an Index at once: Add and Delete take
// the write lock, Search, WriteTo and the accessors take the read lock.
package bm25

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/quarry-rag/quarry/index/bitset"
)

// Defaults applied to zero Config fields.
const (
	DefaultK1          = 0.9
	DefaultB           = 0.4
	DefaultTitleWeight = 1.0
)

// maxFieldTF caps a term's count in one field so it fits 16 bits; BM25 has
// long saturated by then.
const maxFieldTF = 1<<16 - 1

// maxWordCache bounds the writer's word → term cache; past it the cache is
// dropped and refilled, trading some re-stemming for bounded memory.
const maxWordCache = 1 << 20

// Errors callers branch on.
var (
	// ErrExists is returned by Add for an id that is already live.
	ErrExists = errors.New("bm25: document id already in the index")
	// ErrNotFound is returned by Delete for an id that is not live.
	ErrNotFound = errors.New("bm25: no such document")
	// ErrCorrupt is returned by Read for a file that fails its checksum or
	// structural checks.
	ErrCorrupt = errors.New("bm25: corrupt index file")
)

// Config tunes an Index. Zero fields mean the defaults, so an explicit zero
// cannot be asked for; use a tiny positive value instead (b = 1e-9 all but
// turns length normalisation off).
type Config struct {
	// K1 is BM25's term-frequency saturation. Default 0.9 (Anserini's).
	K1 float64
	// B is BM25's length normalisation in (0, 1]. Default 0.4.
	B float64
	// TitleWeight multiplies title term counts and title length in the
	// combined field. Default 1: the title counts as much as the text.
	TitleWeight float64
	// Analyzer selects language, stop words and stemming; fixed for the
	// life of the index because the postings hold analysed terms.
	Analyzer AnalyzerConfig
}

func (c Config) withDefaults() (Config, error) {
	if c.K1 == 0 {
		c.K1 = DefaultK1
	}
	if c.B == 0 {
		c.B = DefaultB
	}
	if c.TitleWeight == 0 {
		c.TitleWeight = DefaultTitleWeight
	}
	if !(c.K1 > 0) || math.IsInf(c.K1, 0) {
		return c, fmt.Errorf("bm25: k1 %v must be positive", c.K1)
	}
	if !(c.B > 0 && c.B <= 1) {
		return c, fmt.Errorf("bm25: b %v must be in (0, 1]", c.B)
	}
	if !(c.TitleWeight > 0) || math.IsInf(c.TitleWeight, 0) {
		return c, fmt.Errorf("bm25: title weight %v must be positive", c.TitleWeight)
	}
	return c, nil
}

// Doc is what the index knows of a document.
type Doc struct {
	// ID is the caller's identifier; equal scores rank by ID ascending.
	ID string
	// Title is scored together with Text; empty when there is none.
	Title string
	// Text is the body.
	Text string
	// Code marks a body that is all code (a source file's chunk): its stop
	// words pair up with their neighbours throughout, as they do inside
	// backticks in any text.
	Code bool
}

// postings is one term's list, sorted by doc id. Deleted documents stay in
// it until the next compaction; searches skip them.
type postings struct {
	docs []uint32
	tfs  []uint32 // text count in the low 16 bits, title count in the high 16
	// maxTF and minDL bound the term's score from above: the largest
	// weighted count and the smallest weighted document length ever added.
	// Deletes may loosen them; compaction makes them exact again.
	maxTF float64
	minDL float32
	df    uint32 // live documents in the list
	// raw is the list as Read found it in the file, validated and not yet
	// decoded: a search decodes the lists of its terms only, so opening a
	// large index to answer one query does not decode every list. ready
	// (read atomically) is 1 once docs, tfs and the bounds hold the list.
	raw   []byte
	ready uint32
}

// tfPair counts one term in one document while it is being added.
type tfPair struct{ text, title uint32 }

// Index is an inverted index with BM25 scoring. Construct it with New or
// Read.
type Index struct {
	cfg  Config
	an   *Analyzer
	pool sync.Pool // *searcher, per-search buffers

	mu sync.RWMutex // guards every field below

	// lazyMu serialises decoding lists read from a file (postings.raw),
	// which searches do under the read lock; lazy reports that some list
	// may still be encoded.
	lazyMu sync.Mutex
	lazy   bool
	// unchecked marks lists read without their lengths compared to the
	// documents' (a version-4 file), which the first write compares;
	// lazyErr is the first list found damaged, guarded by lazyMu.
	unchecked bool
	lazyErr   error

	dict  map[string]uint32 // term → term id
	terms []string          // term id → term
	lists []postings        // term id → postings

	// Per document, indexed by doc id.
	ext    []string  // caller's id
	lenT   []uint32  // title terms
	lenC   []uint32  // text terms
	dl     []float32 // weighted length lenC + TitleWeight·lenT
	fwdOff []uint64  // the doc's term ids in fwd, ascending, delta-varint
	fwdLen []uint32
	fwd    []byte
	// fwdStale marks forward lists not derived yet (after Read); the
	// first write that needs them derives all of them from the postings.
	fwdStale bool

	live  bitset.Set // documents that are in the index
	dirty bitset.Set // deleted documents still present in postings

	n            int    // live documents
	sumT, sumC   uint64 // lengths of live documents
	postingCount int    // entries in all lists, dead ones included
	deadPostings int    // entries belonging to dirty documents

	// Writer-only state, touched under the write lock.
	words   map[string]int32 // normalised word → term id, −1 for a stop word
	ws      scratch
	acc     []tfPair // by term id; zero outside Add
	touched []uint32
}

// New returns an empty index.
func New(cfg Config) (*Index, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	an, err := NewAnalyzer(cfg.Analyzer)
	if err != nil {
		return nil, err
	}
	cfg.Analyzer = an.Config()
	x := &Index{cfg: cfg, an: an, dict: make(map[string]uint32), words: make(map[string]int32)}
	x.pool.New = func() any { return new(searcher) }
	return x, nil
}

// Config returns the index's configuration with defaults filled in.
func (x *Index) Config() Config { return x.cfg }

// Analyzer returns the analyzer the index applies to documents and queries.
func (x *Index) Analyzer() *Analyzer { return x.an }

// Len is the number of live documents.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.n
}

// IDLimit is one more than the largest doc id ever added: the length an
// allow-set needs to cover every document.
func (x *Index) IDLimit() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.ext)
}

// Contains reports whether doc is live.
func (x *Index) Contains(doc uint32) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.live.Contains(doc)
}

// Terms is the number of distinct terms with at least one live document.
func (x *Index) Terms() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	c := 0
	for i := range x.lists {
		if x.lists[i].df > 0 {
			c++
		}
	}
	return c
}

// Add indexes d under doc. It returns ErrExists when doc is live; delete it
// first to replace it.
func (x *Index) Add(doc uint32, d Doc) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.materialize(); err != nil {
		return fmt.Errorf("bm25: add %q: %w", d.ID, err)
	}
	if x.live.Contains(doc) {
		return fmt.Errorf("bm25: add %q as %d: %w", d.ID, doc, ErrExists)
	}
	if x.dirty.Contains(doc) {
		x.purge(doc)
	}
	x.grow(int(doc) + 1)
	var lenT, lenC uint32
	x.an.words(&x.ws, d.Title, false, func(w []byte, _ bool) {
		if id := x.wordID(w); id >= 0 {
			x.count(uint32(id), true)
			lenT++
		}
	})
	// Code pairs count as terms but not towards the length, so a text
	// without code scores exactly as it would without them.
	var pr pairer
	x.an.words(&x.ws, d.Text, d.Code, func(w []byte, code bool) {
		pr.next(x.an, w, code, func(pair []byte) { x.count(x.intern(string(pair)), false) })
		if id := x.wordID(w); id >= 0 {
			x.count(uint32(id), false)
			lenC++
		}
	})
	dl := float32(float64(lenC) + x.cfg.TitleWeight*float64(lenT))
	slices.Sort(x.touched)
	x.fwdOff[doc] = uint64(len(x.fwd))
	prev := uint32(0)
	for _, t := range x.touched {
		c := x.acc[t]
		x.acc[t] = tfPair{}
		c.text, c.title = min(c.text, maxFieldTF), min(c.title, maxFieldTF)
		l := &x.lists[t]
		tf := c.text | c.title<<16
		l.insert(doc, tf)
		// With no live entry the bounds restart: dead entries are never scored.
		l.widen(tf, dl, x.cfg.TitleWeight, l.df == 0)
		l.df++
		x.fwd = binary.AppendUvarint(x.fwd, uint64(t-prev))
		prev = t
	}
	x.fwdLen[doc] = uint32(uint64(len(x.fwd)) - x.fwdOff[doc])
	x.postingCount += len(x.touched)
	x.touched = x.touched[:0]
	x.ext[doc], x.lenT[doc], x.lenC[doc], x.dl[doc] = d.ID, lenT, lenC, dl
	x.live.Add(doc)
	x.n++
	x.sumT += uint64(lenT)
	x.sumC += uint64(lenC)
	return nil
}

// wordID maps a normalised word to its term id, −1 for a stop word,
// interning new terms; the cache spares re-stemming frequent words.
func (x *Index) wordID(w []byte) int32 {
	if id, ok := x.words[string(w)]; ok {
		return id
	}
	id := int32(-1)
	if t, ok := x.an.term(&x.ws, w); ok {
		id = int32(x.intern(t))
	}
	if len(x.words) >= maxWordCache {
		clear(x.words)
	}
	x.words[string(w)] = id
	return id
}

func (x *Index) intern(t string) uint32 {
	if id, ok := x.dict[t]; ok {
		return id
	}
	id := uint32(len(x.terms))
	x.dict[t] = id
	x.terms = append(x.terms, t)
	x.lists = append(x.lists, postings{ready: 1})
	x.acc = append(x.acc, tfPair{})
	return id
}

func (x *Index) count(t uint32, title bool) {
	c := &x.acc[t]
	if c.text == 0 && c.title == 0 {
		x.touched = append(x.touched, t)
	}
	if title {
		c.title++
	} else {
		c.text++
	}
}

// insert adds doc to the list, appending when it is the largest id.
func (l *postings) insert(doc, tf uint32) {
	n := len(l.docs)
	if n == 0 || l.docs[n-1] < doc {
		l.docs = append(l.docs, doc)
		l.tfs = append(l.tfs, tf)
		return
	}
	i, _ := slices.BinarySearch(l.docs, doc)
	l.docs = slices.Insert(l.docs, i, doc)
	l.tfs = slices.Insert(l.tfs, i, tf)
}

// grow makes the per-document arrays cover ids below n.
func (x *Index) grow(n int) {
	if n <= len(x.ext) {
		return
	}
	x.ext = growTo(x.ext, n)
	x.lenT = growTo(x.lenT, n)
	x.lenC = growTo(x.lenC, n)
	x.dl = growTo(x.dl, n)
	x.fwdOff = growTo(x.fwdOff, n)
	x.fwdLen = growTo(x.fwdLen, n)
}

func growTo[T any](s []T, n int) []T {
	if n <= cap(s) {
		return s[:n]
	}
	return append(s[:cap(s)], make([]T, n-cap(s))...)[:n]
}

// forEachTerm calls f with each term id of doc, ascending.
func (x *Index) forEachTerm(doc uint32, f func(t uint32)) {
	if x.fwdStale {
		x.rebuildForward()
	}
	b := x.fwd[x.fwdOff[doc] : x.fwdOff[doc]+uint64(x.fwdLen[doc])]
	t := uint64(0)
	for len(b) > 0 {
		d, n := binary.Uvarint(b)
		b = b[n:]
		t += d
		f(uint32(t))
	}
}

// Delete removes doc. Its postings are dropped lazily: searches skip it at
// once, and the lists are compacted when dead entries reach a quarter of
// all entries, so deleting is amortised O(terms of the document).
func (x *Index) Delete(doc uint32) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.materialize(); err != nil {
		return fmt.Errorf("bm25: delete %d: %w", doc, err)
	}
	if !x.live.Contains(doc) {
		return fmt.Errorf("bm25: delete %d: %w", doc, ErrNotFound)
	}
	x.live.Remove(doc)
	x.dirty.Add(doc)
	x.n--
	x.sumT -= uint64(x.lenT[doc])
	x.sumC -= uint64(x.lenC[doc])
	x.forEachTerm(doc, func(t uint32) {
		x.lists[t].df--
		x.deadPostings++
	})
	if x.deadPostings > 1024 && 4*x.deadPostings > x.postingCount {
		x.compact()
	}
	return nil
}

// purge removes one deleted document's entries from its lists so its id
// can be added again.
func (x *Index) purge(doc uint32) {
	x.forEachTerm(doc, func(t uint32) {
		l := &x.lists[t]
		if i, ok := slices.BinarySearch(l.docs, doc); ok {
			l.docs = slices.Delete(l.docs, i, i+1)
			l.tfs = slices.Delete(l.tfs, i, i+1)
			x.postingCount--
			x.deadPostings--
		}
	})
	x.dirty.Remove(doc)
	x.fwdLen[doc] = 0
	x.ext[doc] = ""
}

// compact drops every deleted document from the lists, makes the score
// bounds exact again and rewrites the forward lists without the dead ones.
func (x *Index) compact() {
	if x.fwdStale {
		x.rebuildForward()
	}
	for t := range x.lists {
		l := &x.lists[t]
		j := 0
		l.maxTF, l.minDL = 0, 0
		for i, d := range l.docs {
			if x.dirty.Contains(d) {
				continue
			}
			l.docs[j], l.tfs[j] = d, l.tfs[i]
			j++
			l.widen(l.tfs[i], x.dl[d], x.cfg.TitleWeight, j == 1)
		}
		clear(l.docs[j:])
		l.docs, l.tfs = l.docs[:j], l.tfs[:j]
	}
	x.postingCount -= x.deadPostings
	x.deadPostings = 0
	fwd := make([]byte, 0, len(x.fwd))
	x.live.Range(func(d uint32) bool {
		off := len(fwd)
		fwd = append(fwd, x.fwd[x.fwdOff[d]:x.fwdOff[d]+uint64(x.fwdLen[d])]...)
		x.fwdOff[d] = uint64(off)
		return true
	})
	x.dirty.Range(func(d uint32) bool {
		x.fwdLen[d] = 0
		x.ext[d] = ""
		return true
	})
	x.fwd = fwd
	x.dirty = bitset.Set{}
}

// list is term t's postings, decoded: a list read from a file is decoded
// on first use, by one caller, under the read lock as under the write
// lock. A list found damaged reads as empty and Err reports it.
func (x *Index) list(t uint32) *postings {
	l := &x.lists[t]
	if atomic.LoadUint32(&l.ready) == 1 {
		return l
	}
	x.lazyMu.Lock()
	defer x.lazyMu.Unlock()
	if atomic.LoadUint32(&l.ready) == 0 {
		if err := x.decodeList(l); err != nil && x.lazyErr == nil {
			x.lazyErr = fmt.Errorf("%w: term %q: %v", ErrCorrupt, x.terms[t], err)
		}
		atomic.StoreUint32(&l.ready, 1)
	}
	return l
}

// Err reports a list of an index read from a file that turned out
// damaged when it was decoded (its checksum held, so only a writer's
// fault can cause it); the index should be rebuilt.
func (x *Index) Err() error {
	x.lazyMu.Lock()
	defer x.lazyMu.Unlock()
	return x.lazyErr
}

// decodeList decodes a list Read stepped over or validated: (doc-id
// delta, count) pairs, checked as Read checks them.
func (x *Index) decodeList(l *postings) error {
	np := int(l.df)
	docs, tfs := make([]uint32, np), make([]uint32, np)
	b, prev := l.raw, uint64(0)
	l.raw = nil
	for i := range np {
		delta, n := binary.Uvarint(b)
		if n <= 0 {
			return errors.New("bad varint in posting")
		}
		b = b[n:]
		tf, m := binary.Uvarint(b)
		if m <= 0 {
			return errors.New("bad varint in term count")
		}
		b = b[m:]
		doc := prev + delta
		if (i > 0 && delta == 0) || doc > math.MaxUint32 || !x.live.Contains(uint32(doc)) {
			return fmt.Errorf("posting for document %d that is not live or out of order", doc)
		}
		if tf == 0 || tf > math.MaxUint32 {
			return fmt.Errorf("bad count %d", tf)
		}
		prev = doc
		docs[i], tfs[i] = uint32(doc), uint32(tf)
	}
	if len(b) != 0 {
		return fmt.Errorf("%d bytes after the postings", len(b))
	}
	for i, d := range docs {
		l.widen(tfs[i], x.dl[d], x.cfg.TitleWeight, i == 0)
	}
	l.docs, l.tfs = docs, tfs
	return nil
}

// materialize decodes every list still encoded, before a write or a
// rewrite that walks them all, and compares the documents' lengths with
// their postings where Read did not.
func (x *Index) materialize() error {
	if !x.lazy {
		return x.Err()
	}
	for t := range x.lists {
		x.list(uint32(t))
	}
	x.lazy = false
	if err := x.Err(); err != nil {
		return err
	}
	if x.unchecked {
		x.unchecked = false
		sums := newLengthSums(len(x.ext))
		for t := range x.lists {
			pair := isPair(x.terms[t])
			l := &x.lists[t]
			for i, d := range l.docs {
				sums.add(d, l.tfs[i], pair)
			}
		}
		if err := x.checkLengths(sums); err != nil {
			x.lazyMu.Lock()
			x.lazyErr = err
			x.lazyMu.Unlock()
			return err
		}
	}
	return nil
}

// widen extends the list's score bounds to cover one entry.
func (l *postings) widen(tf uint32, dl float32, titleWeight float64, first bool) {
	w := float64(tf&0xffff) + titleWeight*float64(tf>>16)
	if first || w > l.maxTF {
		l.maxTF = w
	}
	if first || dl < l.minDL {
		l.minDL = dl
	}
}
