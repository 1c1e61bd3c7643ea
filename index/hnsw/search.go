package hnsw

import (
	"fmt"
	"math/bits"

	"github.com/quarry-rag/quarry/index/bitset"
	"github.com/quarry-rag/quarry/index/vec"
)

// searcher is the scratch of one search or insert, reused so the hot loop
// does not allocate.
type searcher struct {
	q       []float32
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
	top     *vec.TopK
}

func newSearcher(dim int) *searcher {
	return &searcher{q: make([]float32, dim), top: vec.NewTopK(0)}
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
	if x.maxLevel < 0 {
		return nil, nil
	}
	ef := opt.Ef
	if ef <= 0 {
		ef = x.efs
	}
	if ef <= 0 {
		ef = max(DefaultMinEfSearch, 2*k)
	}
	ef = max(ef, k)
	if opt.Allow != nil {
		allowed := countBelow(opt.Allow, x.n)
		if useExact(allowed, x.n) {
			return x.exact(s, k, opt.Allow), nil
		}
		// A walk that only keeps allowed nodes needs room to find them:
		// widen ef as the allowed fraction shrinks (see filterEf).
		ef = filterEf(ef, allowed, x.n)
	}
	return x.graphSearch(s, k, ef, opt.Allow), nil
}

func (x *Index) graphSearch(s *searcher, k, ef int, allow *bitset.Set) []vec.Result {
	q := s.q
	ep := x.entry
	epd := -vec.Dot(q, x.vector(ep))
	for lc := x.maxLevel; lc > 0; lc-- {
		ep, epd = x.greedy(q, ep, epd, lc)
	}
	s.eps = append(s.eps[:0], item{epd, ep})
	x.searchLayer(s, q, s.eps, ef, 0, allow, allow != nil || len(x.tomb) > 0)
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

// exactCost calibrates useExact: a filtered graph walk touches about
// ef/selectivity nodes, so its cost grows like n/allowed while an exact scan
// grows like allowed; they cross where allowed² ≈ exactCost·n.
// BenchmarkFilterCrossover measures the crossover; 100k × 384 clustered
// vectors put it near allowed = 4k (exactCost ≈ 160), so exact is chosen
// below about 4 % selectivity there and always on small indexes.
const exactCost = 160

func useExact(allowed, n int) bool {
	return allowed*allowed <= exactCost*n || allowed <= 2*DefaultMinEfSearch
}

// filterEf widens ef for a filtered walk. Only allowed nodes count toward
// ef, so at selectivity s the walk already explores about ef/s nodes; a
// moderate widening keeps recall level at lower selectivities.
func filterEf(ef, allowed, n int) int {
	_ = allowed
	_ = n
	return ef
}

func trailingZeros(w uint64) int { return bits.TrailingZeros64(w) }
