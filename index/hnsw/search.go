package hnsw

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/quarry-rag/quarry/index/bitset"
	"github.com/quarry-rag/quarry/index/vec"
)

// searcher is the scratch of one search or insert, reused so the hot loop
// does not allocate.
type searcher struct {
	q       []float32
	qc      []int8   // q's int8 codes when codes is set
	codes   bool     // walk on the int8 codes (Search on a quantized index)
	visited []uint16 // visited[id] == mark: seen in this search
	mark    uint16
	cand    minHeap
	res     maxHeap
	eps     []item
	sorted  []item
	sel     []item
	sel2    []item
	tmp     []item
	stack   []uint32
	batch   []uint32
	top     *vec.TopK
}

func newSearcher(dim, stride int) *searcher {
	return &searcher{q: make([]float32, dim), qc: make([]int8, stride), top: vec.NewTopK(0)}
}

// dist is the walk distance from q to node id: the negated float32 dot
// product, or the negated integer dot of the codes when s walks on them.
// Within one search every distance is of the one kind, so they compare.
func (x *Index) dist(s *searcher, q []float32, id uint32) float32 {
	if s.codes {
		return -float32(vec.DotInt8(s.qc, x.code(id)))
	}
	return -vec.Dot(q, x.vector(id))
}

// prefetch starts loading the rows the next distances will read.
func (x *Index) prefetch(s *searcher, ids []uint32) {
	if s.codes {
		vec.PrefetchCodes(x.codes, x.stride, ids)
		return
	}
	vec.PrefetchRows(x.vecs, x.dim, ids)
}

// reset starts a new visit generation over n nodes; the array is cleared only
// when the 16-bit mark wraps.
func (s *searcher) reset(n int) {
	if len(s.visited) < n {
		s.visited = make([]uint16, n+n/4)
		s.mark = 0
	}
	s.mark++
	if s.mark == 0 {
		clear(s.visited)
		s.mark = 1
	}
}

// seen reports whether id was visited in this generation and marks it.
func (s *searcher) seen(id uint32) bool {
	if s.visited[id] == s.mark {
		return true
	}
	s.visited[id] = s.mark
	return false
}

// drainSorted empties s.res into dst, closest first.
func (s *searcher) drainSorted(dst []item) []item {
	start := len(dst)
	for len(s.res) > 0 {
		dst = append(dst, s.res.pop())
	}
	out := dst[start:]
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return dst
}

// Search returns up to k live nodes most similar to q by cosine, ordered by
// score (cosine similarity) descending, then id ascending.
func (x *Index) Search(q []float32, k int, opt SearchOptions) ([]vec.Result, error) {
	if len(q) != x.dim {
		return nil, fmt.Errorf("hnsw: search: %w: got %d, want %d", ErrDimension, len(q), x.dim)
	}
	if k <= 0 {
		return nil, nil
	}
	s := x.searchers.Get().(*searcher)
	defer x.searchers.Put(s)
	copy(s.q, q)
	if err := vec.Normalize(s.q); err != nil {
		return nil, fmt.Errorf("hnsw: search: %w", err)
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.closed {
		return nil, fmt.Errorf("hnsw: search: %w", ErrClosed)
	}
	if x.maxLevel < 0 {
		return nil, nil
	}
	ef := x.searchEf(k, opt.Ef)
	if opt.Allow != nil {
		allowed := countBelow(opt.Allow, x.n)
		if useExact(allowed, x.n, ef) {
			return x.exact(s, k, opt.Allow), nil
		}
		ef = filterEf(ef, allowed, x.n)
	}
	s.codes = x.z != nil
	if s.codes {
		x.z.EncodeQuery(s.qc, s.q)
	}
	return x.graphSearch(s, k, ef, opt.Allow), nil
}

func (x *Index) graphSearch(s *searcher, k, ef int, allow *bitset.Set) []vec.Result {
	q := s.q
	ep := x.entry
	epd := x.dist(s, q, ep)
	for lc := x.maxLevel; lc > 0; lc-- {
		ep, epd = x.greedy(s, q, ep, epd, lc)
	}
	if allow != nil {
		x.searchAllowed(s, q, item{epd, ep}, ef, allow)
		if len(s.res) < k && countBelow(allow, x.n) > len(s.res) {
			// The walk ran dry before finding k allowed nodes, which only
			// happens near the exact threshold; never return fewer than exist.
			return x.exact(s, k, allow)
		}
	} else {
		s.eps = append(s.eps[:0], item{epd, ep})
		x.searchLayer(s, q, s.eps, ef, 0, nil, len(x.tomb) > 0)
	}
	if s.codes {
		// The walk ranked by approximate distances: score its ef best in
		// float32 and keep the k best of those.
		ids := s.batch[:0]
		for _, it := range s.res {
			ids = append(ids, it.id)
		}
		s.batch = ids
		vec.PrefetchRows(x.vecs, x.dim, ids)
		t := s.top
		t.Reset(k)
		for _, id := range ids {
			t.Push(id, vec.Dot(q, x.vector(id)))
		}
		return t.Results(nil)
	}
	for len(s.res) > k {
		s.res.pop()
	}
	out := make([]vec.Result, len(s.res))
	for i := len(out) - 1; i >= 0; i-- {
		it := s.res.pop()
		out[i] = vec.Result{ID: it.id, Score: -it.d}
	}
	vec.SortResults(out) // equal scores: id ascending
	return out
}

// exact scores every allowed live node: cheaper than a graph walk when the
// allow-set is small.
func (x *Index) exact(s *searcher, k int, allow *bitset.Set) []vec.Result {
	t := s.top
	t.Reset(k)
	words := allow.Words()
	for w := 0; w < len(words) && w<<6 < x.n; w++ {
		m := words[w]
		if del := x.deleted.Words(); w < len(del) {
			m &^= del[w]
		}
		for m != 0 {
			id := uint32(w<<6 | bits.TrailingZeros64(m))
			m &= m - 1
			if int(id) >= x.n {
				break
			}
			t.Push(id, vec.Dot(s.q, x.vector(id)))
		}
	}
	return t.Results(nil)
}

func countBelow(s *bitset.Set, n int) int {
	c := 0
	words := s.Words()
	full := min(len(words), n>>6)
	for _, w := range words[:full] {
		c += bits.OnesCount64(w)
	}
	if full < len(words) && n&63 != 0 {
		c += bits.OnesCount64(words[full] & (1<<(n&63) - 1))
	}
	return c
}

// Choosing between the exact scan and the filtered walk. Measured on
// 100k × 384 clustered vectors (M = 16, one thread, 300 queries, random
// allow-sets; BenchmarkFilterCrossover repeats the measurement on 20k):
//
//	allowed   exact scan   walk: ef for recall@10 ≥ 0.95, time
//	   1 %       43 µs      not reached at ef 64 (0.79)
//	   2 %      115 µs      ef 64, 800 µs
//	   3 %      314 µs      ef 32, 480 µs
//	   5 %     1.0 ms       ef 24, 240 µs
//	  10 %     1.8 ms       ef 16, 170 µs
//
// An exact distance costs 40–200 ns (more once the allowed rows outgrow the
// cache); a walk costs about 5–13 µs per unit of ef.
const (
	// exactPerEf: scan exactly while allowed ≤ exactPerEf·ef, the walk's cost
	// in exact distances per unit of ef on an uncached index. 24 keeps the
	// crossover of the default ef at 3,072 rows: at 6,144, SciFact's 5,183
	// × 512 vectors were scanned in 1.1 ms where a walk at ef 128 takes
	// 0.55 ms.
	exactPerEf = 24
	// minWalkDivisor: below 1/25 = 4 % selectivity the two-hop walk loses
	// recall faster than the scan loses speed, so scan regardless of ef.
	minWalkDivisor = 25
)

// useExact reports whether scanning the allowed nodes beats walking the graph
// for a search with this ef over n nodes.
func useExact(allowed, n, ef int) bool {
	return allowed*minWalkDivisor < n || allowed <= exactPerEf*ef
}

// filterEf widens ef for a filtered walk below 10 % selectivity, in
// proportion to the missing fraction and at most 2.5× (at 4 %), because the
// allowed subgraph thins out and recall at a given ef falls with it.
func filterEf(ef, allowed, n int) int {
	if 10*allowed >= n {
		return ef
	}
	return min(ef*n/(10*max(allowed, 1)), ef*5/2)
}

// ExactFor reports whether Search with this allow-set scans the allowed
// nodes exactly instead of walking the graph (see useExact).
// ef is the search's ef (0 for the default, as in SearchOptions).
func (x *Index) ExactFor(allow *bitset.Set, k, ef int) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return useExact(countBelow(allow, x.n), x.n, x.searchEf(k, ef))
}

// searchEf resolves the ef of a search for k results.
func (x *Index) searchEf(k, ef int) int {
	if ef <= 0 {
		ef = x.efs
	}
	if ef <= 0 {
		ef = max(DefaultMinEfSearch, 2*k)
	}
	return max(ef, k)
}

// searchAllowed is the layer-0 search restricted to allowed live nodes. It
// computes distances only to acceptable nodes: from each expanded node it
// takes the acceptable neighbours and, through each rejected neighbour, that
// neighbour's acceptable neighbours (two hops, as in ACORN-1), up to 2·M per
// expansion. The walk thus moves on the allowed subgraph, which two-hop edges
// keep connected down to a few percent selectivity, and a 10 % filter costs
// about what an unfiltered search does instead of ten times as much.
func (x *Index) searchAllowed(s *searcher, q []float32, ep item, ef int, allow *bitset.Set) {
	s.reset(x.n)
	s.cand = s.cand[:0]
	s.res = s.res[:0]
	s.seen(ep.id)
	s.cand.push(ep)
	if x.acceptable(ep.id, allow) {
		s.res.push(ep)
	}
	lower := float32(math.Inf(1))
	if len(s.res) > 0 {
		lower = s.res[0].d
	}
	limit := x.m0
	for len(s.cand) > 0 {
		c := s.cand.pop()
		if c.d > lower && len(s.res) >= ef {
			break
		}
		batch := s.batch[:0]
		blk := x.block(c.id, 0)
		nbs := blk[1 : 1+blk[0]]
		for _, nb := range nbs {
			if x.acceptable(nb, allow) && !s.seen(nb) {
				batch = append(batch, nb)
			}
		}
		for _, nb := range nbs {
			if len(batch) >= limit {
				break
			}
			if x.acceptable(nb, allow) || s.seen(nb) {
				continue
			}
			b2 := x.block(nb, 0)
			for _, nb2 := range b2[1 : 1+b2[0]] {
				if len(batch) >= limit {
					break
				}
				if x.acceptable(nb2, allow) && !s.seen(nb2) {
					batch = append(batch, nb2)
				}
			}
		}
		x.prefetch(s, batch)
		for _, id := range batch {
			d := x.dist(s, q, id)
			if len(s.res) < ef || d < lower {
				s.cand.push(item{d, id})
				s.res.push(item{d, id})
				if len(s.res) > ef {
					s.res.pop()
				}
				lower = s.res[0].d
			}
		}
		s.batch = batch
	}
}

func trailingZeros(w uint64) int { return bits.TrailingZeros64(w) }
