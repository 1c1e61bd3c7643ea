// Package hnsw is an in-memory HNSW graph (Malkov & Yashunin, 2016) for cosine
// similarity over float32 vectors, with tombstone deletes and repair, search
// restricted to an allow-set of ids, and a checksummed binary format.
//
// Vectors are normalised on the way in and kept in one contiguous slab; layer-0
// neighbour lists live in one flat []uint32 (a count followed by 2·M slots per
// node) and the rarer upper layers in a second one. Searches walk the graph
// on int8 codes of the vectors (Config.Quantization) and score the ef best
// candidates they end with in float32; insertion links on the float32
// vectors. A 384-dimension vector costs about 2.1 KB with M = 16, of which
// 384 bytes are its codes; MapVectors moves the float32 rows (1.5 KB of it)
// into a memory-mapped file, leaving about 0.5 KB resident, since a search
// reads only the rows it re-scores. Nodes have dense uint32 ids assigned by
// Add; callers map their own keys onto them.
//
// One writer and many readers may use an Index at once: Add, Delete and
// Compact take the write lock, Search takes the read lock.
package hnsw

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"

	"github.com/quarry-rag/quarry/index/bitset"
	"github.com/quarry-rag/quarry/index/vec"
)

// Defaults applied to zero Config fields.
const (
	DefaultM              = 16
	DefaultEfConstruction = 200
	// DefaultMinEfSearch is the floor of the default search ef, max(128, 2·k).
	// 64 left recall@10 at 0.805 on SciFact's hash-embedder vectors
	// (near-orthogonal, hard for graph search); 128 gives 0.904 for 2× the
	// walk (87 → 175 µs), and 0.995 on the clustered 100k × 384 benchmark,
	// where 64 gave 0.952.
	DefaultMinEfSearch = 128
)

// maxLevels caps the random level; with M = 16 a level above 8 has
// probability 16⁻⁸, so the cap only guards against a degenerate M.
const maxLevels = 16

// Errors callers branch on.
var (
	// ErrNotFound is returned for an id that was never added or is deleted.
	ErrNotFound = errors.New("hnsw: no such node")
	// ErrDimension is returned for a vector whose length is not the index's.
	ErrDimension = errors.New("hnsw: vector dimension mismatch")
	// ErrCorrupt is returned by Read for a file that fails its checksum or
	// structural checks.
	ErrCorrupt = errors.New("hnsw: corrupt index file")
	// ErrClosed is returned by an index used after Close.
	ErrClosed = errors.New("hnsw: index is closed")
)

// Config tunes an Index. Zero fields mean the defaults.
type Config struct {
	// M is the number of neighbours a node keeps on layers above 0; layer 0
	// keeps Mmax0 = 2·M. Default 16.
	M int
	// EfConstruction is the candidate list size while inserting. Default 200.
	EfConstruction int
	// EfSearch is the candidate list size of Search when SearchOptions.Ef is 0.
	// Default max(128, 2·k).
	EfSearch int
	// Seed drives level assignment: the same seed and the same sequence of
	// Add and Delete calls build the same graph.
	Seed uint64
	// Quantization chooses what Search walks the graph on. The zero value is
	// QuantizationInt8.
	Quantization Quantization
}

// Quantization is the representation a search walks the graph on. Insertion
// always links on the float32 vectors, so the graph is the same whatever is
// chosen, and results are always scored in float32.
type Quantization uint8

const (
	// QuantizationDefault is the zero value: QuantizationInt8.
	QuantizationDefault Quantization = iota
	// QuantizationNone walks on the float32 vectors.
	QuantizationNone
	// QuantizationInt8 walks on int8 codes (a quarter of the bytes per
	// distance) and re-scores the ef best candidates in float32. The codes
	// cost Dim bytes per node, rounded up to 32.
	QuantizationInt8
)

// String names q as the CLI and reports spell it.
func (q Quantization) String() string {
	switch q {
	case QuantizationDefault:
		return "default"
	case QuantizationNone:
		return "none"
	case QuantizationInt8:
		return "int8"
	}
	return fmt.Sprintf("Quantization(%d)", uint8(q))
}

// resolve maps the default to what it stands for and refuses unknown values.
func (q Quantization) resolve() (Quantization, error) {
	switch q {
	case QuantizationDefault:
		return QuantizationInt8, nil
	case QuantizationNone, QuantizationInt8:
		return q, nil
	}
	return 0, fmt.Errorf("hnsw: unknown quantization %v", q)
}

// quantTrainMin is the node count at which an int8 index first fits its
// quantizer; smaller graphs walk on float32, where a search costs microseconds
// anyway. The quantizer is refitted to all vectors each time the node count
// doubles, so the ranges keep following the data at a cost of one encoding
// pass per doubling.
const quantTrainMin = 1024

// SearchOptions tune one Search. The zero value searches every live node with
// the index's default ef.
type SearchOptions struct {
	// Ef overrides Config.EfSearch for this call; it is raised to k if lower.
	Ef int
	// Allow, when non-nil, restricts results to its members. Small allow-sets
	// are scanned exactly; larger ones are searched in the graph, walking
	// through disallowed nodes but only returning allowed ones.
	Allow *bitset.Set
}

// Index is an HNSW graph. Construct it with New or Read.
type Index struct {
	mu sync.RWMutex // guards every field below

	dim, m, m0, efc, efs int
	seed                 uint64
	ml                   float64
	pcg                  *rand.PCG
	rng                  *rand.Rand

	n        int       // slots in use (live, tombstoned and free)
	vecs     []float32 // n·dim, unit-norm rows, in rows when it is set
	rows     *rowFile  // the mapped file holding vecs; nil: the Go heap
	unmap    runtime.Cleanup
	closed   bool
	levels   []uint8  // top layer of each node
	links0   []uint32 // n·(1+m0): count, then neighbours
	upperOff []uint32 // start in upper of a node's layer-1 block
	upper    []uint32 // per node with level L: L blocks of (1+m)
	deleted  bitset.Set
	tomb     []uint32 // deleted since the last Compact, still linked
	free     []uint32 // unlinked slots Add reuses
	live     int
	entry    uint32
	maxLevel int // -1 when the graph is empty

	quant  Quantization       // QuantizationNone or QuantizationInt8
	z      *vec.Int8Quantizer // nil until quantTrainMin nodes
	codes  []int8             // n·stride once z is set
	stride int                // code row length

	ws        *searcher // the writer's scratch
	searchers sync.Pool // *searcher for readers and AddBatch's goroutines
}

// New returns an empty index for vectors of dimension dim.
func New(dim int, cfg Config) (*Index, error) {
	if dim <= 0 {
		return nil, fmt.Errorf("hnsw: dimension %d must be positive", dim)
	}
	if cfg.M < 0 || cfg.EfConstruction < 0 || cfg.EfSearch < 0 {
		return nil, fmt.Errorf("hnsw: negative config %+v", cfg)
	}
	if cfg.M == 0 {
		cfg.M = DefaultM
	}
	if cfg.M < 2 || cfg.M > 1024 {
		return nil, fmt.Errorf("hnsw: M = %d out of range [2, 1024]", cfg.M)
	}
	if cfg.EfConstruction == 0 {
		cfg.EfConstruction = DefaultEfConstruction
	}
	quant, err := cfg.Quantization.resolve()
	if err != nil {
		return nil, err
	}
	x := &Index{
		dim: dim, m: cfg.M, m0: 2 * cfg.M, efc: max(cfg.EfConstruction, cfg.M), efs: cfg.EfSearch,
		seed: cfg.Seed, ml: 1 / math.Log(float64(cfg.M)), maxLevel: -1, quant: quant,
	}
	x.pcg = rand.NewPCG(cfg.Seed, 0x9e3779b97f4a7c15)
	x.rng = rand.New(x.pcg)
	x.init()
	return x, nil
}

func (x *Index) init() {
	x.stride = vec.Int8Stride(x.dim)
	x.ws = newSearcher(x.dim, x.stride)
	x.searchers.New = func() any { return newSearcher(x.dim, x.stride) }
}

// Config returns the effective configuration, defaults filled in.
func (x *Index) Config() Config {
	return Config{M: x.m, EfConstruction: x.efc, EfSearch: x.efs, Seed: x.seed, Quantization: x.quant}
}

// SetQuantization changes what Search walks the graph on, fitting or
// dropping the int8 codes. The graph itself is unchanged.
func (x *Index) SetQuantization(q Quantization) error {
	q, err := q.resolve()
	if err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return fmt.Errorf("hnsw: set quantization: %w", ErrClosed)
	}
	if q == QuantizationNone {
		x.z, x.codes = nil, nil
	} else if x.z == nil && x.n >= quantTrainMin {
		x.fitQuantizer()
	}
	x.quant = q
	return nil
}

// fitQuantizer fits the int8 quantizer to every slot's vector and encodes
// them all.
func (x *Index) fitQuantizer() {
	z, err := vec.TrainInt8(x.vecs[:x.n*x.dim], x.dim)
	if err != nil {
		panic(fmt.Sprintf("hnsw: quantizer: %v", err)) // dim > 0 and whole rows: unreachable
	}
	x.setQuantizer(z)
}

// setQuantizer installs z and encodes every slot with it.
func (x *Index) setQuantizer(z *vec.Int8Quantizer) {
	x.z = z
	x.codes = growTo(x.codes[:0], x.n*x.stride)
	// Each node's code depends on its vector alone, so the nodes are
	// encoded in parallel parts: on a graph read from disk this was a
	// third of the read.
	parts := min(runtime.GOMAXPROCS(0), max(1, x.n/4096))
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := x.n*p/parts, x.n*(p+1)/parts
		wg.Go(func() {
			for id := lo; id < hi; id++ {
				x.encode(uint32(id))
			}
		})
	}
	wg.Wait()
}

func (x *Index) encode(id uint32) {
	o := int(id) * x.stride
	x.z.Encode(x.codes[o:o+x.stride], x.vector(id))
}

func (x *Index) code(id uint32) []int8 {
	o := int(id) * x.stride
	return x.codes[o : o+x.stride : o+x.stride]
}

// Dim is the vector dimension.
func (x *Index) Dim() int { return x.dim }

// Len is the number of live (not deleted) nodes.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.live
}

// IDLimit is one past the highest id ever assigned: the size an allow-set
// needs to cover every node.
func (x *Index) IDLimit() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.n
}

// Contains reports whether id is a live node.
func (x *Index) Contains(id uint32) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return int(id) < x.n && !x.deleted.Contains(id)
}

// Grow reserves room for n more nodes so a bulk load does not reallocate.
func (x *Index) Grow(n int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return
	}
	total := x.n + n
	if x.rows == nil {
		x.vecs = slices.Grow(x.vecs, total*x.dim-len(x.vecs))
	} else if v, err := x.rows.reserve(total * x.dim); err == nil {
		// Only the room is reserved; a failure here is Add's to report.
		x.vecs = v[:len(x.vecs)]
	}
	x.levels = slices.Grow(x.levels, total-len(x.levels))
	x.links0 = slices.Grow(x.links0, total*(1+x.m0)-len(x.links0))
	x.upperOff = slices.Grow(x.upperOff, total-len(x.upperOff))
	if x.quant == QuantizationInt8 && total >= quantTrainMin {
		x.codes = slices.Grow(x.codes, total*x.stride-len(x.codes))
	}
	// Upper layers hold about 1/(M−1) blocks per node.
	x.upper = slices.Grow(x.upper, n*(1+x.m)/(x.m-1)+1)
}

func (x *Index) vector(id uint32) []float32 {
	o := int(id) * x.dim
	return x.vecs[o : o+x.dim : o+x.dim]
}

// block is node id's neighbour block on layer lc: count, then slots.
func (x *Index) block(id uint32, lc int) []uint32 {
	if lc == 0 {
		o := int(id) * (1 + x.m0)
		return x.links0[o : o+1+x.m0 : o+1+x.m0]
	}
	o := int(x.upperOff[id]) + (lc-1)*(1+x.m)
	return x.upper[o : o+1+x.m : o+1+x.m]
}

func (x *Index) maxConn(lc int) int {
	if lc == 0 {
		return x.m0
	}
	return x.m
}

func (x *Index) randomLevel() int {
	u := 1 - x.rng.Float64() // (0, 1]
	return min(int(-math.Log(u)*x.ml), maxLevels-1)
}

// Add inserts a copy of v, normalised, and returns its id. Ids of nodes
// removed by Compact are reused.
func (x *Index) Add(v []float32) (uint32, error) {
	if len(v) != x.dim {
		return 0, fmt.Errorf("hnsw: add: %w: got %d, want %d", ErrDimension, len(v), x.dim)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return 0, fmt.Errorf("hnsw: add: %w", ErrClosed)
	}
	id, err := x.add(v)
	if err != nil {
		return 0, fmt.Errorf("hnsw: add: %w", err)
	}
	return id, nil
}

// add is Add under the write lock.
func (x *Index) add(v []float32) (uint32, error) {
	if len(x.free) == 0 {
		if x.n >= math.MaxUint32 {
			return 0, fmt.Errorf("index is full (%d nodes)", x.n)
		}
		if err := x.growVecs((x.n + 1) * x.dim); err != nil {
			return 0, err
		}
	}
	q := x.ws.q
	copy(q, v)
	if err := vec.Normalize(q); err != nil {
		return 0, err
	}
	level := x.randomLevel()
	id, grew := x.alloc(level)
	copy(x.vector(id), q)
	switch {
	case x.quant != QuantizationInt8:
	case grew && x.n >= quantTrainMin && x.n&(x.n-1) == 0:
		x.fitQuantizer()
	case x.z != nil:
		x.encode(id)
	}
	x.insert(x.ws, id, level)
	x.live++
	return id, nil
}

// growTo extends s to length n, growing capacity by a quarter at a time so a
// large index does not carry a doubled slab.
func growTo[T any](s []T, n int) []T {
	if n <= cap(s) {
		return s[:n]
	}
	c := max(n, cap(s)+cap(s)/4, 1024)
	t := make([]T, n, c)
	copy(t, s)
	return t
}

// growVecs lengthens vecs to n values, on the heap or in the mapped file.
func (x *Index) growVecs(n int) error {
	if x.rows == nil {
		x.vecs = growTo(x.vecs, n)
		return nil
	}
	v, err := x.rows.reserve(n)
	if err != nil {
		return err
	}
	x.vecs = v
	return nil
}

// MapVectors moves the float32 vectors out of the Go heap into a scratch
// file created (and at once unlinked) in dir and mapped into memory, where
// later Adds put theirs too. The kernel keeps the pages cached while memory
// allows and drops them under pressure, to read them again when a search
// needs them; what must stay resident is the graph and the int8 codes,
// about a third of a 384-dimension node. Searches walk the codes and read
// only the ef rows they re-score, so a quantized index (the default) keeps
// its speed while the rows are cached and degrades to ef small reads per
// search when they are not. Walking on float32 (QuantizationNone) reads
// rows at every step and gains nothing from this.
//
// The file lives until Close. It is unsupported where the system has no
// mmap.
func (x *Index) MapVectors(dir string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return fmt.Errorf("hnsw: map vectors: %w", ErrClosed)
	}
	if x.rows != nil {
		return nil
	}
	r, err := newRowFile(dir)
	if err != nil {
		return err
	}
	live := x.vecs[:x.n*x.dim]
	err = r.writeAt(floatBytes(live), 0)
	var v []float32
	if err == nil {
		v, err = r.reserve(max(cap(x.vecs), len(live)))
	}
	if err != nil {
		return errors.Join(err, r.close())
	}
	x.vecs = v[:len(live)]
	x.useRows(r)
	return nil
}

// useRows makes r the file holding the index's vectors (already in it).
func (x *Index) useRows(r *rowFile) {
	x.rows = r
	// An index dropped without Close still releases its mapping.
	x.unmap = runtime.AddCleanup(x, func(r *rowFile) { r.close() }, r)
}

// VectorsMapped reports whether the float32 vectors live in a mapped file
// (see MapVectors).
func (x *Index) VectorsMapped() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.rows != nil
}

// Close releases the mapped vector file, if any. The index cannot be used
// afterwards: its methods return ErrClosed, or nothing.
func (x *Index) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return nil
	}
	x.closed = true
	x.vecs, x.codes = nil, nil
	if x.rows == nil {
		return nil
	}
	x.unmap.Stop()
	return x.rows.close()
}

// alloc takes a slot for a node of the given level, reporting whether it
// is a new one at the end rather than a reused one.
func (x *Index) alloc(level int) (id uint32, grew bool) {
	if k := len(x.free); k > 0 {
		id = x.free[k-1]
		x.free = x.free[:k-1]
		x.deleted.Remove(id)
	} else {
		id = uint32(x.n)
		x.n++ // Add grew vecs already
		x.levels = growTo(x.levels, x.n)
		x.links0 = growTo(x.links0, x.n*(1+x.m0))
		x.upperOff = growTo(x.upperOff, x.n)
		if x.z != nil {
			x.codes = growTo(x.codes, x.n*x.stride)
		}
		grew = true
	}
	x.levels[id] = uint8(level)
	x.links0[int(id)*(1+x.m0)] = 0
	if level > 0 {
		// A reused slot's old upper blocks stay behind unreferenced: levels
		// above 0 are rare (1 in M), so this costs less than moving blocks.
		x.upperOff[id] = uint32(len(x.upper))
		x.upper = growTo(x.upper, len(x.upper)+level*(1+x.m))
		clear(x.upper[x.upperOff[id]:])
	}
	return id, grew
}

// insert links node id, whose vector and level are set, into the graph,
// using s's scratch.
func (x *Index) insert(s *searcher, id uint32, level int) {
	q := x.vector(id)
	top := x.maxLevel
	if top < 0 {
		x.entry, x.maxLevel = id, level
		return
	}
	x.candidates(s, q, x.entry, level, top, func(lc int, sorted []item) {
		s.sel = x.selectNeighbours(sorted, x.m, s.sel[:0])
		x.setBlock(id, lc, s.sel)
		for _, c := range s.sel {
			x.link(s, c.id, id, c.d, lc)
		}
	})
	if level > top {
		x.entry, x.maxLevel = id, level
	}
}

// candidates walks down from ep on layer top to the node's level and hands
// each layer's efConstruction nearest nodes to q, closest first, to use,
// from the node's top layer (at most top) down to layer 0.
func (x *Index) candidates(s *searcher, q []float32, ep uint32, level, top int, use func(lc int, sorted []item)) {
	epd := x.dist(s, q, ep)
	for lc := top; lc > level; lc-- {
		ep, epd = x.greedy(s, q, ep, epd, lc)
	}
	s.eps = append(s.eps[:0], item{epd, ep})
	filtered := len(x.tomb) > 0
	for lc := min(level, top); lc >= 0; lc-- {
		x.searchLayer(s, q, s.eps, x.efc, lc, nil, filtered)
		if filtered && len(s.res) == 0 {
			// Everything reachable is deleted: link to deleted nodes rather
			// than leave the new node unreachable; Compact rewires it later.
			x.searchLayer(s, q, s.eps, x.efc, lc, nil, false)
		}
		s.sorted = s.drainSorted(s.sorted[:0])
		use(lc, s.sorted)
		s.eps = append(s.eps[:0], s.sorted...)
	}
}

// setBlock writes node id's list on layer lc.
func (x *Index) setBlock(id uint32, lc int, sel []item) {
	blk := x.block(id, lc)
	blk[0] = uint32(len(sel))
	for i, c := range sel {
		blk[1+i] = c.id
	}
}

// greedy walks layer lc towards q from ep (at distance epd), the ef = 1
// descent through the upper layers.
func (x *Index) greedy(s *searcher, q []float32, ep uint32, epd float32, lc int) (uint32, float32) {
	for changed := true; changed; {
		changed = false
		blk := x.block(ep, lc)
		for _, nb := range blk[1 : 1+blk[0]] {
			if d := x.dist(s, q, nb); d < epd {
				ep, epd, changed = nb, d, true
			}
		}
	}
	return ep, epd
}

// selectNeighbours is the heuristic of Algorithm 4: walking candidates from
// the closest, keep one only if it is closer to the base than to every
// neighbour already kept, so links spread out in different directions
// instead of piling into one cluster. cands must be sorted by distance.
func (x *Index) selectNeighbours(cands []item, m int, out []item) []item {
	if len(cands) < m {
		return append(out, cands...)
	}
	for _, c := range cands {
		if len(out) >= m {
			break
		}
		vc := x.vector(c.id)
		good := true
		for _, r := range out {
			if -vec.Dot(vc, x.vector(r.id)) < c.d {
				good = false
				break
			}
		}
		if good {
			out = append(out, c)
		}
	}
	return out
}

// link adds the edge from → to on layer lc, re-running the heuristic over
// from's neighbours when its list is full.
func (x *Index) link(s *searcher, from, to uint32, d float32, lc int) {
	blk := x.block(from, lc)
	cnt := int(blk[0])
	mc := x.maxConn(lc)
	if cnt < mc {
		blk[1+cnt] = to
		blk[0]++
		return
	}
	vf := x.vector(from)
	s.tmp = append(s.tmp[:0], item{d, to})
	for _, nb := range blk[1 : 1+cnt] {
		s.tmp = append(s.tmp, item{-vec.Dot(vf, x.vector(nb)), nb})
	}
	sortItems(s.tmp)
	s.sel2 = x.selectNeighbours(s.tmp, mc, s.sel2[:0])
	blk[0] = uint32(len(s.sel2))
	for i, c := range s.sel2 {
		blk[1+i] = c.id
	}
}

func sortItems(s []item) {
	slices.SortFunc(s, func(a, b item) int {
		switch {
		case a.d < b.d:
			return -1
		case a.d > b.d:
			return 1
		case a.id < b.id:
			return -1
		case a.id > b.id:
			return 1
		}
		return 0
	})
}

// searchLayer is the ef-bounded best-first search of layer lc from eps,
// leaving up to ef nodes in s.res. When filtered, nodes that are deleted or
// outside allow still guide the walk but never enter the result set, and the
// walk only stops once ef acceptable nodes are held.
func (x *Index) searchLayer(s *searcher, q []float32, eps []item, ef, lc int, allow *bitset.Set, filtered bool) {
	s.reset(x.n)
	s.cand = s.cand[:0]
	s.res = s.res[:0]
	for _, e := range eps {
		if s.seen(e.id) {
			continue
		}
		s.cand.push(e)
		if !filtered || x.acceptable(e.id, allow) {
			s.res.push(e)
			if len(s.res) > ef {
				s.res.pop()
			}
		}
	}
	lower := float32(math.Inf(1))
	if len(s.res) > 0 {
		lower = s.res[0].d
	}
	for len(s.cand) > 0 {
		c := s.cand.pop()
		if c.d > lower && (len(s.res) >= ef || !filtered) {
			break
		}
		blk := x.block(c.id, lc)
		batch := s.batch[:0]
		for _, nb := range blk[1 : 1+blk[0]] {
			if !s.seen(nb) {
				batch = append(batch, nb)
			}
		}
		s.batch = batch
		x.prefetch(s, batch)
		for _, nb := range batch {
			d := x.dist(s, q, nb)
			if len(s.res) < ef || d < lower {
				s.cand.push(item{d, nb})
				if !filtered || x.acceptable(nb, allow) {
					s.res.push(item{d, nb})
					if len(s.res) > ef {
						s.res.pop()
					}
					lower = s.res[0].d
				}
			}
		}
	}
}

func (x *Index) acceptable(id uint32, allow *bitset.Set) bool {
	return !x.deleted.Contains(id) && (allow == nil || allow.Contains(id))
}

// Delete marks id deleted: it stops appearing in results at once but keeps
// guiding searches until Compact unlinks it.
func (x *Index) Delete(id uint32) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return fmt.Errorf("hnsw: delete %d: %w", id, ErrClosed)
	}
	if int(id) >= x.n || x.deleted.Contains(id) {
		return fmt.Errorf("hnsw: delete %d: %w", id, ErrNotFound)
	}
	x.deleted.Add(id)
	x.tomb = append(x.tomb, id)
	x.live--
	return nil
}

// Deleted is the number of deleted nodes still linked into the graph: the
// work the next Compact will do.
func (x *Index) Deleted() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.tomb)
}
