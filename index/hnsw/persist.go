package hnsw

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"math/rand/v2"
	"unsafe"

	"github.com/quarry-rag/quarry/index/vec"
)

// File layout, little-endian: magic, version, config, the level generator's
// state, the graph arrays, tombstones, free ids, (since version 2) the
// quantization and the int8 quantizer's parameters, then a CRC-32C of every
// byte before it. Codes are not stored: Read encodes them from the vectors
// with the stored parameters, so a reloaded index searches exactly as the
// saved one did. Read trusts nothing until the checksum and the structure check
// out, so a damaged file is an error, never a panic or a wrong graph.
const (
	magic         = "QRYHNSW\x00"
	formatVersion = 2
	// oldestVersion is the oldest format Read accepts; version 1 files have no
	// quantization fields and load with the default.
	oldestVersion = 1
	maxDim        = 1 << 16
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type encoder struct {
	w   *bufio.Writer
	crc hash.Hash32
	n   int64
	buf [8]byte
	err error
}

func (e *encoder) bytes(b []byte) {
	if e.err != nil {
		return
	}
	e.crc.Write(b)
	k, err := e.w.Write(b)
	e.n += int64(k)
	e.err = err
}

func (e *encoder) u32(v uint32) {
	binary.LittleEndian.PutUint32(e.buf[:4], v)
	e.bytes(e.buf[:4])
}

func (e *encoder) u64(v uint64) {
	binary.LittleEndian.PutUint64(e.buf[:8], v)
	e.bytes(e.buf[:8])
}

// putWords writes n 4- or 8-byte values through a fixed buffer, get(i)
// giving value i, so a large slab costs no copy.
func (e *encoder) putWords(n, size int, get func(i int) uint64) {
	var chunk [4096]byte
	for i := 0; i < n && e.err == nil; {
		b := chunk[:0]
		for ; i < n && len(b)+size <= len(chunk); i++ {
			if size == 4 {
				b = binary.LittleEndian.AppendUint32(b, uint32(get(i)))
			} else {
				b = binary.LittleEndian.AppendUint64(b, get(i))
			}
		}
		e.bytes(b)
	}
}

func (e *encoder) u32s(s []uint32) { e.putWords(len(s), 4, func(i int) uint64 { return uint64(s[i]) }) }
func (e *encoder) u64s(s []uint64) { e.putWords(len(s), 8, func(i int) uint64 { return s[i] }) }
func (e *encoder) f32s(s []float32) {
	e.putWords(len(s), 4, func(i int) uint64 { return uint64(math.Float32bits(s[i])) })
}

// WriteTo writes the index in Quarry's versioned, checksummed binary format.
// It holds the read lock, so searches continue while it runs.
func (x *Index) WriteTo(w io.Writer) (int64, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.closed {
		return 0, fmt.Errorf("hnsw: write: %w", ErrClosed)
	}
	e := &encoder{w: bufio.NewWriterSize(w, 1<<16), crc: crc32.New(castagnoli)}
	e.bytes([]byte(magic))
	e.u32(formatVersion)
	e.u32(uint32(x.dim))
	e.u32(uint32(x.m))
	e.u32(uint32(x.efc))
	e.u32(uint32(x.efs))
	e.u64(x.seed)
	st, err := x.pcg.MarshalBinary()
	if err != nil {
		return 0, fmt.Errorf("hnsw: write: %w", err)
	}
	e.u32(uint32(len(st)))
	e.bytes(st)
	e.u64(uint64(x.n))
	e.u64(uint64(x.live))
	e.u32(x.entry)
	e.u32(uint32(int32(x.maxLevel)))
	e.f32s(x.vecs[:x.n*x.dim])
	e.bytes(x.levels[:x.n])
	e.u32s(x.links0[:x.n*(1+x.m0)])
	e.u32s(x.upperOff[:x.n])
	e.u64(uint64(len(x.upper)))
	e.u32s(x.upper)
	dw := x.deleted.Words()
	e.u64(uint64(len(dw)))
	e.u64s(dw)
	e.u64(uint64(len(x.tomb)))
	e.u32s(x.tomb)
	e.u64(uint64(len(x.free)))
	e.u32s(x.free)
	e.u32(uint32(x.quant))
	if x.z == nil {
		e.u32(0)
	} else {
		off, sc := x.z.Params()
		e.u32(uint32(len(off)))
		e.f32s(off)
		e.f32s(sc)
	}
	if e.err == nil {
		binary.LittleEndian.PutUint32(e.buf[:4], e.crc.Sum32())
		var k int
		k, e.err = e.w.Write(e.buf[:4])
		e.n += int64(k)
	}
	if e.err == nil {
		e.err = e.w.Flush()
	}
	if e.err != nil {
		return e.n, fmt.Errorf("hnsw: write: %w", e.err)
	}
	return e.n, nil
}

type decoder struct {
	r   io.Reader
	crc hash.Hash32
	buf []byte
	err error
	// left bounds what the input can still hold, when the reader knows its
	// length (a bytes.Reader does): arrays are then allocated whole instead
	// of grown, without trusting a count that damaged bytes could inflate.
	left int64
}

// capFor is the capacity to allocate for n elements of size bytes.
func (d *decoder) capFor(n uint64, size int) int {
	if d.left > 0 {
		return int(min(n, uint64(d.left)/uint64(size)))
	}
	return int(min(n, 1<<16))
}

func (d *decoder) bytes(n int) []byte {
	if d.err != nil {
		return nil
	}
	if cap(d.buf) < n {
		d.buf = make([]byte, n)
	}
	b := d.buf[:n]
	if !d.fill(b) {
		return nil
	}
	return b
}

// fill reads exactly len(b) bytes into b and adds them to the checksum.
func (d *decoder) fill(b []byte) bool {
	if d.err != nil {
		return false
	}
	if _, err := io.ReadFull(d.r, b); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		d.err = err
		return false
	}
	d.crc.Write(b)
	return true
}

func (d *decoder) u32() uint32 {
	if b := d.bytes(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if b := d.bytes(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// getWords reads n values of size bytes in chunks, handing each to put; it
// reads as data arrives so a corrupt length fails at end of file instead of
// being allocated up front.
func (d *decoder) getWords(n uint64, size int, put func(v uint64)) {
	for n > 0 && d.err == nil {
		c := min(n, 1<<14)
		b := d.bytes(int(c) * size)
		for i := range int(c) {
			if b == nil {
				return
			}
			if size == 4 {
				put(uint64(binary.LittleEndian.Uint32(b[4*i:])))
			} else {
				put(binary.LittleEndian.Uint64(b[8*i:]))
			}
		}
		n -= c
	}
}

func (d *decoder) u32s(n uint64) []uint32 {
	out := make([]uint32, 0, d.capFor(n, 4))
	for n > 0 && d.err == nil {
		c := min(n, 1<<14)
		b := d.bytes(int(c) * 4)
		if b == nil {
			break
		}
		for i := range int(c) {
			out = append(out, binary.LittleEndian.Uint32(b[4*i:]))
		}
		n -= c
	}
	return out
}

func (d *decoder) u64s(n uint64) []uint64 {
	out := make([]uint64, 0, d.capFor(n, 8))
	d.getWords(n, 8, func(v uint64) { out = append(out, v) })
	return out
}

// f32s decodes in a tight loop: the graph's vectors are most of a file.
func (d *decoder) f32s(n uint64) []float32 {
	if littleEndian && uint64(d.capFor(n, 4)) == n {
		// The count fits what the input holds: read the words straight
		// into the array, as the file's byte order is the machine's, rather
		// than through the buffer and a second copy (the vectors are most
		// of a graph's file).
		out := make([]float32, n)
		raw := floatBytes(out)
		for len(raw) > 0 && d.err == nil {
			c := min(len(raw), 1<<20)
			d.fill(raw[:c])
			raw = raw[c:]
		}
		if d.err != nil {
			return nil
		}
		return out
	}
	out := make([]float32, 0, d.capFor(n, 4))
	for n > 0 && d.err == nil {
		c := min(n, 1<<14)
		b := d.bytes(int(c) * 4)
		if b == nil {
			break
		}
		if littleEndian {
			// The file's byte order is the machine's: copy the words as
			// they are (d.buf is freshly allocated, so aligned).
			out = append(out, unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), int(c))...)
		} else {
			for i := range int(c) {
				out = append(out, math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
			}
		}
		n -= c
	}
	return out
}

// f32sInto decodes n values into the row file and maps them. The values
// are written through the file as they arrive, so a damaged count fails at
// the end of the input rather than claiming its size on disk first.
func (d *decoder) f32sInto(rows *rowFile, n uint64) []float32 {
	const chunk = 1 << 18
	for off := uint64(0); off < n && d.err == nil; off += chunk {
		c := min(n-off, chunk)
		b := d.bytes(int(c) * 4)
		if b == nil {
			break
		}
		if !littleEndian {
			for i := range int(c) {
				binary.NativeEndian.PutUint32(b[4*i:], binary.LittleEndian.Uint32(b[4*i:]))
			}
		}
		if err := rows.writeAt(b, int64(off)*4); err != nil {
			d.err = err
		}
	}
	if d.err != nil {
		return nil
	}
	out, err := rows.reserve(int(n))
	if err != nil {
		d.err = err
		return nil
	}
	return out
}

// floatBytes is v's memory as bytes, in the machine's byte order.
func floatBytes(v []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*len(v))
}

// littleEndian reports the machine's byte order, fixed at start-up.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

func corrupt(format string, args ...any) error {
	return fmt.Errorf("hnsw: read: %w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// Read loads an index written by WriteTo. A truncated file, a checksum
// mismatch or an inconsistent structure returns an error wrapping ErrCorrupt
// (or the reader's error).
func Read(r io.Reader) (*Index, error) { return read(r, "") }

// ReadMapped is Read for an index whose float32 vectors go straight into a
// memory-mapped scratch file in dir, as after MapVectors, rather than
// passing through the heap.
func ReadMapped(r io.Reader, dir string) (*Index, error) { return read(r, dir) }

func read(r io.Reader, dir string) (x *Index, err error) {
	var rows *rowFile
	if dir != "" {
		if rows, err = newRowFile(dir); err != nil {
			return nil, err
		}
		defer func() {
			if x == nil {
				rows.close()
			}
		}()
	}
	d := &decoder{r: bufio.NewReaderSize(r, 1<<16), crc: crc32.New(castagnoli)}
	if l, ok := r.(interface{ Len() int }); ok {
		d.left = int64(l.Len())
	}
	if b := d.bytes(len(magic)); d.err == nil && string(b) != magic {
		return nil, corrupt("not an HNSW index (bad magic)")
	}
	version := d.u32()
	if d.err == nil && (version < oldestVersion || version > formatVersion) {
		return nil, fmt.Errorf("hnsw: read: unsupported format version %d (this build reads %d to %d)", version, oldestVersion, formatVersion)
	}
	dim, m, efc, efs := d.u32(), d.u32(), d.u32(), d.u32()
	seed := d.u64()
	if d.err == nil && (dim == 0 || dim > maxDim || m < 2 || m > 1024 || efc < 1 || efc > 1<<20 || efs > 1<<20) {
		return nil, corrupt("header out of range (dim %d, M %d)", dim, m)
	}
	stLen := d.u32()
	if stLen > 64 {
		return nil, corrupt("generator state of %d bytes", stLen)
	}
	st := append([]byte(nil), d.bytes(int(stLen))...)
	n, live := d.u64(), d.u64()
	entry, maxLevel := d.u32(), int32(d.u32())
	if d.err == nil && (n >= math.MaxUint32 || live > n) {
		return nil, corrupt("%d nodes, %d live", n, live)
	}
	x = &Index{
		dim: int(dim), m: int(m), m0: 2 * int(m), efc: int(efc), efs: int(efs), seed: seed,
		ml: 1 / math.Log(float64(m)), n: int(n), live: int(live), entry: entry, maxLevel: int(maxLevel),
	}
	if rows != nil {
		x.vecs = d.f32sInto(rows, n*uint64(dim))
	} else {
		x.vecs = d.f32s(n * uint64(dim))
	}
	for left := n; left > 0 && d.err == nil; {
		c := min(left, 1<<16)
		x.levels = append(x.levels, d.bytes(int(c))...)
		left -= c
	}
	x.links0 = d.u32s(n * uint64(1+x.m0))
	x.upperOff = d.u32s(n)
	x.upper = d.u32s(d.u64())
	dw := d.u64s(d.u64())
	x.tomb = d.u32s(d.u64())
	x.free = d.u32s(d.u64())
	x.quant = QuantizationInt8
	var offset, scale []float32
	if version >= 2 {
		x.quant = Quantization(d.u32())
		if qd := d.u32(); qd != 0 {
			if qd != dim {
				return nil, corrupt("quantizer of %d columns for dimension %d", qd, dim)
			}
			offset, scale = d.f32s(uint64(qd)), d.f32s(uint64(qd))
		}
	}
	if d.err != nil {
		if errors.Is(d.err, io.ErrUnexpectedEOF) {
			return nil, corrupt("truncated")
		}
		return nil, fmt.Errorf("hnsw: read: %w", d.err)
	}
	sum := d.crc.Sum32()
	var tail [4]byte
	if _, err := io.ReadFull(d.r, tail[:]); err != nil {
		return nil, corrupt("truncated before checksum")
	}
	if binary.LittleEndian.Uint32(tail[:]) != sum {
		return nil, corrupt("checksum mismatch")
	}
	x.pcg = &rand.PCG{}
	if err := x.pcg.UnmarshalBinary(st); err != nil {
		return nil, corrupt("generator state: %v", err)
	}
	x.rng = rand.New(x.pcg)
	if err := x.validate(dw); err != nil {
		return nil, err
	}
	x.init()
	if err := x.loadQuantizer(offset, scale); err != nil {
		return nil, err
	}
	if rows != nil {
		x.useRows(rows)
	}
	return x, nil
}

// loadQuantizer installs the stored quantizer, or fits one where an int8
// index of quantTrainMin nodes or more has none stored (a version 1 file).
func (x *Index) loadQuantizer(offset, scale []float32) error {
	switch x.quant {
	case QuantizationNone:
		if offset != nil {
			return corrupt("quantizer stored for an unquantized index")
		}
		return nil
	case QuantizationInt8:
	default:
		return corrupt("unknown quantization %d", uint8(x.quant))
	}
	switch {
	case offset != nil:
		z, err := vec.NewInt8Quantizer(offset, scale)
		if err != nil {
			return corrupt("%v", err)
		}
		x.setQuantizer(z)
	case x.n >= quantTrainMin:
		x.fitQuantizer()
	}
	return nil
}

// validate checks every invariant the search code relies on for memory
// safety, so even a file with a forged checksum cannot cause a panic.
func (x *Index) validate(dw []uint64) error {
	n := x.n
	if len(x.levels) != n || len(dw) > (n+63)/64 {
		return corrupt("array lengths")
	}
	for j, w := range dw {
		for w != 0 {
			i := j<<6 | trailingZeros(w)
			if i >= n {
				return corrupt("tombstone %d beyond %d nodes", i, n)
			}
			x.deleted.Add(uint32(i))
			w &= w - 1
		}
	}
	if n-x.deleted.Count() != x.live {
		return corrupt("live count %d, tombstones %d of %d", x.live, x.deleted.Count(), n)
	}
	if x.maxLevel < -1 || x.maxLevel >= maxLevels || (x.maxLevel >= 0 && (int(x.entry) >= n || int(x.levels[x.entry]) != x.maxLevel)) || (x.maxLevel < 0 && x.live > 0) {
		return corrupt("entry point %d at level %d", x.entry, x.maxLevel)
	}
	for id := range uint32(n) {
		lv := int(x.levels[id])
		if lv >= maxLevels || lv > max(x.maxLevel, 0) {
			return corrupt("node %d level %d", id, lv)
		}
		if lv > 0 && uint64(x.upperOff[id])+uint64(lv*(1+x.m)) > uint64(len(x.upper)) {
			return corrupt("node %d upper links out of range", id)
		}
		for lc := 0; lc <= lv; lc++ {
			blk := x.block(id, lc)
			if int(blk[0]) > x.maxConn(lc) {
				return corrupt("node %d has %d links on layer %d", id, blk[0], lc)
			}
			for _, nb := range blk[1 : 1+blk[0]] {
				if int(nb) >= n || int(x.levels[nb]) < lc {
					return corrupt("node %d links to %d on layer %d", id, nb, lc)
				}
			}
		}
	}
	for _, list := range [][]uint32{x.tomb, x.free} {
		for _, id := range list {
			if int(id) >= n || !x.deleted.Contains(id) {
				return corrupt("deleted id %d", id)
			}
		}
	}
	return nil
}
