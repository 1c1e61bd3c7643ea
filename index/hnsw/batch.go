package hnsw

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/quarry-rag/quarry/index/vec"
)

// minBatch is the smallest batch AddBatch inserts in chunks; smaller ones
// are inserted one by one, as Add does.
const minBatch = 64

// batchChunk bounds a chunk of AddBatch. Each new node is compared exactly
// with the chunk's earlier nodes, a cost that grows with the square of the
// chunk; at 256 it is a few percent of the chunk's graph searches.
const batchChunk = 256

// AddBatch inserts copies of vs, normalised, and returns their ids in
// order, using up to threads goroutines (GOMAXPROCS when threads is 0 or
// less). Nothing is added when a vector has the wrong dimension or no
// direction. Searches wait for the whole batch.
//
// A batch under 64 vectors is inserted exactly as Add inserts one at a
// time. A larger one is inserted in chunks of up to 256, each in three
// steps: every new node searches the graph as it stood before the chunk
// for its candidates on each layer (in parallel: the graph is not changing);
// each adds to them the chunk's earlier nodes, compared exactly, and keeps
// its neighbours by the usual heuristic (in parallel); then the neighbours'
// back-links are made, each neighbour's in the chunk's order (in parallel
// over the neighbours). No step depends on how the work was shared, so the
// graph is the same for any number of goroutines and is reproduced by the
// seed, as with Add; it differs from Add's graph, and matches its recall
// (quarry bench ann --build-threads reports both).
func (x *Index) AddBatch(vs [][]float32, threads int) ([]uint32, error) {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	for i, v := range vs {
		if len(v) != x.dim {
			return nil, fmt.Errorf("hnsw: add batch: vector %d: %w: got %d, want %d", i, ErrDimension, len(v), x.dim)
		}
		if err := vec.CheckNormalize(v); err != nil {
			return nil, fmt.Errorf("hnsw: add batch: vector %d: %w", i, err)
		}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return nil, fmt.Errorf("hnsw: add batch: %w", ErrClosed)
	}
	fresh := max(0, len(vs)-len(x.free))
	if x.n+fresh > math.MaxUint32 {
		return nil, fmt.Errorf("hnsw: add batch: index is full (%d nodes)", x.n)
	}
	// One reservation for the whole batch, so a full disk under mapped
	// vectors fails before anything is added.
	if err := x.growVecs((x.n + fresh) * x.dim); err != nil {
		return nil, fmt.Errorf("hnsw: add batch: %w", err)
	}
	ids := make([]uint32, len(vs))
	if len(vs) < minBatch {
		for i, v := range vs {
			id, err := x.add(v)
			if err != nil { // checked above: unreachable
				return nil, fmt.Errorf("hnsw: add batch: vector %d: %w", i, err)
			}
			ids[i] = id
		}
		return ids, nil
	}
	levels := make([]int, len(vs))
	refit := false
	for i, v := range vs {
		levels[i] = x.randomLevel()
		id, grew := x.alloc(levels[i])
		row := x.vector(id)
		copy(row, v)
		_ = vec.Normalize(row) // checked above
		refit = refit || grew && x.n >= quantTrainMin && x.n&(x.n-1) == 0
		ids[i] = id
	}
	switch {
	case x.quant != QuantizationInt8:
	case refit:
		x.fitQuantizer()
	case x.z != nil:
		for _, id := range ids {
			x.encode(id)
		}
	}
	x.live += len(vs)
	for lo := 0; lo < len(ids); lo += batchChunk {
		hi := min(lo+batchChunk, len(ids))
		x.insertChunk(ids[lo:hi], levels[lo:hi], threads)
	}
	return ids, nil
}

// insertChunk links the nodes ids (allocated, vectors set, levels given)
// into the graph; see AddBatch.
func (x *Index) insertChunk(ids []uint32, levels []int, threads int) {
	top, entry := x.maxLevel, x.entry
	// sel[k][lc] is node k's neighbours on layer lc.
	sel := make([][][]item, len(ids))
	x.parallel(len(ids), threads, func(s *searcher, k int) {
		id, level := ids[k], levels[k]
		q := x.vector(id)
		sel[k] = make([][]item, level+1)
		// choose takes the nearest of the graph's candidates on layer lc
		// (found, closest first) and the chunk's earlier nodes there, and
		// keeps the node's neighbours among them.
		choose := func(lc int, found []item) {
			mates := s.tmp[:0]
			for j := range k {
				if levels[j] >= lc {
					mates = append(mates, item{-vec.Dot(q, x.vector(ids[j])), ids[j]})
				}
			}
			sortItems(mates)
			s.tmp = mates
			// The efConstruction nearest of both, as a search of the
			// whole graph would have returned: more only slows the
			// heuristic. (found is s.sorted, which candidates still needs.)
			s.sel2 = mergeItems(s.sel2[:0], found, mates, x.efc)
			s.sel = x.selectNeighbours(s.sel2, x.m, s.sel[:0])
			sel[k][lc] = append([]item(nil), s.sel...)
			x.setBlock(id, lc, sel[k][lc])
		}
		if top >= 0 {
			x.candidates(s, q, entry, level, top, choose)
		}
		for lc := level; lc > top; lc-- {
			choose(lc, nil) // above the graph's top layer: the chunk alone
		}
	})
	// Back-links: a neighbour's lists are changed by one goroutine only,
	// in the chunk's order, whoever runs it.
	x.parallel(threads, threads, func(s *searcher, part int) {
		for k, layers := range sel {
			for lc, nbs := range layers {
				for _, c := range nbs {
					if int(c.id)%threads == part {
						x.link(s, c.id, ids[k], c.d, lc)
					}
				}
			}
		}
	})
	for k, id := range ids {
		if levels[k] > x.maxLevel {
			x.entry, x.maxLevel = id, levels[k]
		}
	}
}

// mergeItems appends to dst the first n items of a and b merged, both
// sorted by sortItems' order.
func mergeItems(dst, a, b []item, n int) []item {
	for len(dst) < n && (len(a) > 0 || len(b) > 0) {
		if len(b) == 0 || len(a) > 0 && (a[0].d < b[0].d || a[0].d == b[0].d && a[0].id < b[0].id) {
			dst, a = append(dst, a[0]), a[1:]
		} else {
			dst, b = append(dst, b[0]), b[1:]
		}
	}
	return dst
}

// parallel runs f(s, k) for k in [0, n) on up to threads goroutines, each
// with a searcher of its own.
func (x *Index) parallel(n, threads int, f func(s *searcher, k int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(threads, n) {
		wg.Go(func() {
			s := x.searchers.Get().(*searcher)
			defer x.searchers.Put(s)
			s.codes = false
			for {
				k := int(next.Add(1) - 1)
				if k >= n {
					return
				}
				f(s, k)
			}
		})
	}
	wg.Wait()
}
