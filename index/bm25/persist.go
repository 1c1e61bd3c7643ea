package bm25

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
)

// File layout: magic, version, config, the live documents (id delta,
// external id, title and text lengths), the terms with live postings (term,
// count, the postings' length in bytes, then doc-id deltas and packed
// counts), then a CRC-32C of every byte before it. The length lets Read
// step over a list without decoding it: a list is decoded, and its
// structure checked, when a search first needs it. Integers after the version are unsigned varints; strings are a
// length and bytes. Deleted documents are not written, so a file is always
// compact. Read checks the checksum first and then every structural
// invariant, so a damaged file is an error, never a panic or a wrong index.
const (
	magic = "QRYBM25\x00"
	// 2: code pairs (pairer); 3: the parts of joined words (joinedParts);
	// 4: each list's length in bytes. An index before 3 lacks terms and is
	// rebuilt; one of version 3 is read, every list decoded at once.
	formatVersion = 4
	// readsFrom is the oldest version Read takes.
	readsFrom = 3
)

const (
	flagKeepStopWords = 1 << iota
	flagNoStemming
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type encoder struct {
	w   *bufio.Writer
	crc hash.Hash32
	n   int64
	buf []byte
	err error
}

func (e *encoder) flush() {
	if e.err != nil || len(e.buf) == 0 {
		e.buf = e.buf[:0]
		return
	}
	e.crc.Write(e.buf)
	k, err := e.w.Write(e.buf)
	e.n += int64(k)
	e.err = err
	e.buf = e.buf[:0]
}

// room flushes when the buffer is nearly full; callers append at most a
// few varints between calls.
func (e *encoder) room() {
	if len(e.buf) >= 1<<15 {
		e.flush()
	}
}

func (e *encoder) uvarint(v uint64) { e.buf = binary.AppendUvarint(e.buf, v); e.room() }
func (e *encoder) bytes(b []byte)   { e.buf = append(e.buf, b...); e.room() }
func (e *encoder) f64(v float64) {
	e.buf = binary.LittleEndian.AppendUint64(e.buf, math.Float64bits(v))
	e.room()
}
func (e *encoder) str(s string) {
	e.uvarint(uint64(len(s)))
	e.buf = append(e.buf, s...)
	e.room()
}

// WriteTo writes the index in Quarry's versioned, checksummed binary format.
// It holds the read lock, so searches continue while it runs.
func (x *Index) WriteTo(w io.Writer) (int64, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	e := &encoder{w: bufio.NewWriterSize(w, 1<<16), crc: crc32.New(castagnoli), buf: make([]byte, 0, 1<<16)}
	e.buf = append(e.buf, magic...)
	e.buf = binary.LittleEndian.AppendUint32(e.buf, formatVersion)
	e.f64(x.cfg.K1)
	e.f64(x.cfg.B)
	e.f64(x.cfg.TitleWeight)
	e.str(x.cfg.Analyzer.Language)
	flags := uint64(0)
	if x.cfg.Analyzer.KeepStopWords {
		flags |= flagKeepStopWords
	}
	if x.cfg.Analyzer.NoStemming {
		flags |= flagNoStemming
	}
	e.uvarint(flags)
	e.uvarint(uint64(x.n))
	prev := uint64(0)
	x.live.Range(func(d uint32) bool {
		e.uvarint(uint64(d) - prev)
		prev = uint64(d)
		e.str(x.ext[d])
		e.uvarint(uint64(x.lenT[d]))
		e.uvarint(uint64(x.lenC[d]))
		return e.err == nil
	})
	terms := 0
	for t := range x.lists {
		if x.lists[t].df > 0 {
			terms++
		}
	}
	e.uvarint(uint64(terms))
	var list []byte
	for t := range x.lists {
		if x.lists[t].df == 0 {
			continue
		}
		l := x.list(uint32(t))
		e.str(x.terms[t])
		e.uvarint(uint64(l.df))
		list = list[:0]
		prev := uint64(0)
		for i, d := range l.docs {
			if x.deadPostings > 0 && !x.live.Contains(d) {
				continue
			}
			list = binary.AppendUvarint(list, uint64(d)-prev)
			prev = uint64(d)
			list = binary.AppendUvarint(list, uint64(l.tfs[i]))
		}
		e.uvarint(uint64(len(list)))
		e.bytes(list)
		if e.err != nil {
			break
		}
	}
	if err := x.Err(); err != nil && e.err == nil {
		e.err = err // a damaged list read from a file is not written on
	}
	e.flush()
	if e.err == nil {
		var sum [4]byte
		binary.LittleEndian.PutUint32(sum[:], e.crc.Sum32())
		var k int
		k, e.err = e.w.Write(sum[:])
		e.n += int64(k)
	}
	if e.err == nil {
		e.err = e.w.Flush()
	}
	if e.err != nil {
		return e.n, fmt.Errorf("bm25: write: %w", e.err)
	}
	return e.n, nil
}

// decoder reads from an in-memory file whose checksum has been verified;
// the first structural error sticks.
type decoder struct {
	b      []byte
	maxIDs uint64 // doc ids allowed, bounding the per-document arrays
	err    error
}

// newDecoder bounds doc ids by the file's size: per-document arrays cost
// about 40 bytes an id, so a few damaged bytes must not be able to ask for
// gigabytes. Ids stay below 2^20 + 64 per byte of file — far sparser than
// any store assigns — and a sparser file is refused like a damaged one, to
// be rebuilt by the caller.
func newDecoder(b []byte) *decoder {
	return &decoder{b: b, maxIDs: 1<<20 + 64*uint64(len(b))}
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad varint in %s", what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a length that must fit in the bytes left, each element
// taking at least minBytes.
func (d *decoder) count(what string, minBytes int) int {
	v := d.uvarint(what)
	if d.err == nil && v > uint64(len(d.b)/minBytes) {
		d.fail("%s %d exceeds the file", what, v)
		return 0
	}
	return int(v)
}

func (d *decoder) f64(what string) float64 {
	if d.err == nil && len(d.b) < 8 {
		d.fail("truncated %s", what)
	}
	if d.err != nil {
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(d.b))
	d.b = d.b[8:]
	return v
}

func (d *decoder) str(what string) string {
	n := d.count(what, 1)
	if d.err != nil {
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// Read loads an index written by WriteTo. A file that fails its checksum or
// structural checks yields an error wrapping ErrCorrupt.
func Read(r io.Reader) (*Index, error) {
	data, err := readAll(r)
	if err != nil {
		return nil, fmt.Errorf("bm25: read: %w", err)
	}
	if len(data) < len(magic)+4+4 || string(data[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: not a Quarry BM25 index", ErrCorrupt)
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	v := binary.LittleEndian.Uint32(body[len(magic):])
	if v < readsFrom || v > formatVersion {
		return nil, fmt.Errorf("bm25: read: format version %d, this build reads %d to %d; rebuild the index", v, readsFrom, formatVersion)
	}
	x, err := decode(newDecoder(body[len(magic)+4:]), v)
	if err != nil {
		if !errors.Is(err, ErrCorrupt) {
			err = fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		return nil, err
	}
	return x, nil
}

func decode(d *decoder, version uint32) (*Index, error) {
	var cfg Config
	cfg.K1, cfg.B, cfg.TitleWeight = d.f64("k1"), d.f64("b"), d.f64("title weight")
	cfg.Analyzer.Language = d.str("language")
	flags := d.uvarint("flags")
	if d.err != nil {
		return nil, d.err
	}
	if flags&^(flagKeepStopWords|flagNoStemming) != 0 {
		return nil, fmt.Errorf("%w: unknown flags %#x", ErrCorrupt, flags)
	}
	if cfg.K1 == 0 || cfg.B == 0 || cfg.TitleWeight == 0 {
		return nil, fmt.Errorf("%w: zero BM25 parameter", ErrCorrupt)
	}
	cfg.Analyzer.KeepStopWords = flags&flagKeepStopWords != 0
	cfg.Analyzer.NoStemming = flags&flagNoStemming != 0
	x, err := New(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}

	// Live documents, ascending.
	nd := d.count("document count", 4)
	docs := make([]uint32, 0, nd)
	for i := range nd {
		delta := d.uvarint("document id")
		if d.err != nil {
			break
		}
		id := delta
		if i > 0 {
			id = uint64(docs[i-1]) + delta
			if delta == 0 {
				d.fail("document ids not ascending")
			}
		}
		if id > math.MaxUint32 || id >= d.maxIDs {
			d.fail("document id %d out of range", id)
		}
		ext := d.str("external id")
		lt, lc := d.uvarint("title length"), d.uvarint("text length")
		if lt > math.MaxUint32 || lc > math.MaxUint32 {
			d.fail("document length out of range")
		}
		if d.err != nil {
			break
		}
		doc := uint32(id)
		docs = append(docs, doc)
		x.grow(int(doc) + 1)
		x.ext[doc], x.lenT[doc], x.lenC[doc] = ext, uint32(lt), uint32(lc)
		x.dl[doc] = float32(float64(lc) + cfg.TitleWeight*float64(lt))
		x.live.Add(doc)
		x.sumT += lt
		x.sumC += lc
	}
	if d.err != nil {
		return nil, d.err
	}
	x.n = len(docs)

	// Postings; per-document sums must match the stored lengths.
	var sums *lengthSums
	if version < 4 {
		sums = newLengthSums(len(x.ext))
	}
	nterms := d.count("term count", 3)
	x.terms = make([]string, 0, nterms)
	x.lists = make([]postings, 0, nterms)
	x.dict = make(map[string]uint32, nterms)
	for range nterms {
		t := d.str("term")
		np := d.count("posting count", 2)
		if d.err != nil {
			break
		}
		if t == "" || np == 0 || np > x.n {
			d.fail("term %q with %d postings", t, np)
			break
		}
		if _, dup := x.dict[t]; dup {
			d.fail("duplicate term %q", t)
			break
		}
		var l postings
		if version >= 4 {
			// The list is stepped over; Index.list checks and decodes it
			// when a search first needs it.
			n := d.count("postings length", 1)
			if d.err != nil {
				break
			}
			if n < 2*np {
				d.fail("term %q: %d postings in %d bytes", t, np, n)
				break
			}
			l = postings{df: uint32(np), raw: d.b[:n:n]}
			d.b = d.b[n:]
		} else {
			raw, err := x.scanList(d.b, np, t, sums)
			if err != nil {
				d.fail("%v", err)
				break
			}
			d.b = d.b[len(raw):]
			l = postings{df: uint32(np), raw: raw}
		}
		x.dict[t] = uint32(len(x.terms))
		x.terms = append(x.terms, t)
		x.lists = append(x.lists, l)
		x.postingCount += np
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return nil, d.err
	}
	if version < 4 {
		if err := x.checkLengths(sums); err != nil {
			return nil, err
		}
	}
	x.acc = make([]tfPair, len(x.terms))
	x.lazy = len(x.lists) > 0
	x.unchecked = version >= 4
	// The forward lists are derived from the postings when a write first
	// needs them: an index opened to be searched never does.
	x.fwdStale = true
	return x, nil
}

// scanList checks the np postings at the start of b — ascending live
// documents, counts that are not zero — adds each document's counts to
// its sums, and returns the bytes they take.
func (x *Index) scanList(b []byte, np int, t string, sums *lengthSums) ([]byte, error) {
	pair := isPair(t)
	start, prev := b, uint64(0)
	for i := range np {
		delta, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, fmt.Errorf("term %q: bad varint in posting", t)
		}
		b = b[n:]
		tf, m := binary.Uvarint(b)
		if m <= 0 {
			return nil, fmt.Errorf("term %q: bad varint in term count", t)
		}
		b = b[m:]
		doc := prev + delta
		if (i > 0 && delta == 0) || doc > math.MaxUint32 || !x.live.Contains(uint32(doc)) {
			return nil, fmt.Errorf("term %q: posting for document %d that is not live or out of order", t, doc)
		}
		if tf == 0 || tf > math.MaxUint32 {
			return nil, fmt.Errorf("term %q: bad count %d", t, tf)
		}
		prev = doc
		sums.add(uint32(doc), uint32(tf), pair)
	}
	return start[:len(start)-len(b)], nil
}

// lengthSums adds up each document's term counts from its postings, to
// check them against its stored lengths, and notes the fields where a
// count was capped at maxFieldTF: there the length (the true number of
// words) exceeds the sum.
type lengthSums struct {
	t, c       []uint64
	satT, satC []bool
}

func newLengthSums(n int) *lengthSums {
	return &lengthSums{t: make([]uint64, n), c: make([]uint64, n), satT: make([]bool, n), satC: make([]bool, n)}
}

// add counts one posting of doc; a code pair's count is not part of the
// length.
func (s *lengthSums) add(doc, tf uint32, pair bool) {
	title, text := tf>>16, tf&0xffff
	s.t[doc] += uint64(title)
	s.satT[doc] = s.satT[doc] || title == maxFieldTF
	if !pair {
		s.c[doc] += uint64(text)
		s.satC[doc] = s.satC[doc] || text == maxFieldTF
	}
}

// matches reports whether a field's stored length agrees with the sum of
// its counts: equal, or larger where a count was capped.
func matches(length uint32, sum uint64, saturated bool) bool {
	return uint64(length) == sum || saturated && uint64(length) > sum
}

// checkLengths compares each live document's stored lengths with the
// sums of its postings' counts.
func (x *Index) checkLengths(s *lengthSums) error {
	var err error
	x.live.Range(func(doc uint32) bool {
		if !matches(x.lenT[doc], s.t[doc], s.satT[doc]) || !matches(x.lenC[doc], s.c[doc], s.satC[doc]) {
			err = fmt.Errorf("%w: document %d: lengths do not match its postings", ErrCorrupt, doc)
		}
		return err == nil
	})
	return err
}

// readAll reads r whole, in one allocation when r tells its length (as
// the embedded store's checkpoint reader does): growing a buffer by
// doubling copies a large index several times over.
func readAll(r io.Reader) ([]byte, error) {
	l, ok := r.(interface{ Len() int })
	if !ok || l.Len() <= 0 {
		return io.ReadAll(r)
	}
	buf := bytes.NewBuffer(make([]byte, 0, l.Len()+bytes.MinRead))
	_, err := buf.ReadFrom(r)
	return buf.Bytes(), err
}

// rebuildForward derives each document's term list from the postings,
// which hold every document still present in them, live or deleted.
func (x *Index) rebuildForward() {
	_ = x.materialize() // a damaged list reads as empty; Add and Delete report it
	x.fwdStale = false
	counts := make([]uint32, len(x.ext)+1)
	for t := range x.lists {
		for _, d := range x.lists[t].docs {
			counts[d+1]++
		}
	}
	for i := 1; i < len(counts); i++ {
		counts[i] += counts[i-1]
	}
	flat := make([]uint32, x.postingCount)
	next := counts[:len(x.ext)]
	for t := range x.lists {
		for _, d := range x.lists[t].docs {
			flat[next[d]] = uint32(t)
			next[d]++
		}
	}
	// next[d] now ends d's run; runs are contiguous in doc order.
	x.fwd = x.fwd[:0]
	start := uint32(0)
	for d := range x.ext {
		end := next[d]
		x.fwdOff[d] = uint64(len(x.fwd))
		prev := uint32(0)
		for _, t := range flat[start:end] {
			x.fwd = binary.AppendUvarint(x.fwd, uint64(t-prev))
			prev = t
		}
		x.fwdLen[d] = uint32(uint64(len(x.fwd)) - x.fwdOff[d])
		start = end
	}
}
