package bm25

import (
	"cmp"
	"math"
	"slices"

	"github.com/quarry-rag/quarry/index/bitset"
)

// SearchOptions tune one Search. The zero value searches every live
// document.
type SearchOptions struct {
	// Allow, when non-nil, restricts results to its members: postings of
	// other documents are skipped before they are scored. Collection
	// statistics (document count, document frequencies, average length)
	// still cover every live document, so a filter decides which documents
	// rank, never what they score.
	Allow *bitset.Set
}

// Hit is one scored document.
type Hit struct {
	// Doc is the id the document was added under.
	Doc uint32
	// ID is the caller's identifier from Doc.ID.
	ID string
	// Score is the BM25 score, always positive.
	Score float64
}

// pruneSlack keeps pruning safe against rounding: a document is skipped only
// when its score bound is below the k-th score by more than this fraction,
// because the bound and the final score sum the same terms in different
// orders.
const pruneSlack = 1e-9

// Search returns the k best live documents for query, ordered by score
// descending, then ID ascending (then doc id, should two documents share an
// ID). Documents sharing no term with the query
// are never returned. The query is analysed like the documents; a repeated
// query term counts as many times as it appears.
func (x *Index) Search(query string, k int, opt SearchOptions) []Hit {
	if k <= 0 {
		return nil
	}
	s := x.pool.Get().(*searcher)
	defer x.pool.Put(s)
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.n == 0 {
		return nil
	}
	s.q = s.q[:0]
	var pr pairer
	x.an.words(&s.sc, query, true, func(w []byte, code bool) {
		pr.next(x.an, w, code, func(pair []byte) {
			if t, ok := x.dict[string(pair)]; ok {
				s.addTerm(t)
			}
		})
		if t, ok := x.lookup(&s.sc, w); ok {
			s.addTerm(t)
		}
	})
	if !x.prepare(s) {
		return nil
	}
	x.maxScore(s, k, opt.Allow)
	hits := x.results(s)
	s.allow = nil // the caller's set is not ours to keep
	if cap(s.heap) > 1<<16 {
		s.heap = nil // a one-off huge k should not pin memory in the pool
	}
	return hits
}

// lookup maps a normalised query word to a term id; the writer's word cache
// is read-only while the read lock is held.
func (x *Index) lookup(s *scratch, w []byte) (uint32, bool) {
	if id, ok := x.words[string(w)]; ok {
		return uint32(id), id >= 0
	}
	t, ok := x.an.term(s, w)
	if !ok {
		return 0, false
	}
	id, ok := x.dict[t]
	return id, ok
}

// searcher holds one search's buffers; Index.pool recycles them.
type searcher struct {
	sc      scratch
	q       []qterm
	cur     []cursor
	prefix  []float64 // prefix[i] = Σ cur[0..i].ub
	contrib []float64
	heap    []entry
	k0, kl  float64 // saturation K = k0 + kl·length

	// State of one maxScore run.
	k         int
	allow     *bitset.Set
	checkLive bool
	thr       float64 // prune below this: the k-th score less the slack
	ess       int     // cur[ess:] are essential
	pos       []int   // seed's cursor positions
	seedHeap  []float64
}

type qterm struct {
	t     uint32
	count int
}

func (s *searcher) addTerm(t uint32) {
	for i := range s.q {
		if s.q[i].t == t {
			s.q[i].count++
			return
		}
	}
	s.q = append(s.q, qterm{t: t, count: 1})
}

// cursor walks one query term's postings.
type cursor struct {
	docs   []uint32
	tfs    []uint32
	pos    int
	weight float64 // query count · idf · (k1+1)
	ub     float64 // no document scores more than this for the term
	t      uint32
	qi     int // position in the query, the order scores are summed in
}

// score is the term's contribution to the document under the cursor whose
// saturation constant is k.
func (c *cursor) score(k, titleWeight float64) float64 {
	tf := c.tfs[c.pos]
	f := float64(tf&0xffff) + titleWeight*float64(tf>>16)
	return c.weight * f / (f + k)
}

// seek moves the cursor to the first document ≥ doc.
func (c *cursor) seek(doc uint32) { c.pos = seekFrom(c.docs, c.pos, doc) }

// seekFrom returns the index of the first element ≥ doc in docs[pos:],
// galloping so a long list probed for a few documents costs O(log gap) per
// probe.
func seekFrom(docs []uint32, pos int, doc uint32) int {
	lo := pos
	if lo >= len(docs) || docs[lo] >= doc {
		return lo
	}
	// docs[lo] < doc: find hi with docs[hi] ≥ doc, then search (lo, hi].
	step := 1
	hi := lo + step
	for hi < len(docs) && docs[hi] < doc {
		lo = hi
		step <<= 1
		hi = lo + step
	}
	hi = min(hi, len(docs))
	for lo+1 < hi {
		m := int(uint(lo+hi) >> 1)
		if docs[m] < doc {
			lo = m
		} else {
			hi = m
		}
	}
	return hi
}

// prepare builds the cursors for s.q, sorted by bound ascending, and
// reports whether any query term occurs in a live document.
func (x *Index) prepare(s *searcher) bool {
	n := float64(x.n)
	k1, b, tw := x.cfg.K1, x.cfg.B, x.cfg.TitleWeight
	avg := (float64(x.sumC) + tw*float64(x.sumT)) / n
	if avg <= 0 {
		avg = 1
	}
	s.k0, s.kl = k1*(1-b), k1*b/avg
	s.cur = s.cur[:0]
	for qi, q := range s.q {
		l := x.list(q.t)
		if l.df == 0 {
			continue
		}
		df := float64(l.df)
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		w := float64(q.count) * idf * (k1 + 1)
		kmin := s.k0 + s.kl*float64(l.minDL)
		s.cur = append(s.cur, cursor{
			docs: l.docs, tfs: l.tfs, weight: w, t: q.t, qi: qi,
			ub: w * l.maxTF / (l.maxTF + kmin),
		})
	}
	if len(s.cur) == 0 {
		return false
	}
	slices.SortFunc(s.cur, func(a, b cursor) int {
		if c := cmp.Compare(a.ub, b.ub); c != 0 {
			return c
		}
		return cmp.Compare(a.t, b.t)
	})
	s.prefix = s.prefix[:0]
	sum := 0.0
	for i := range s.cur {
		sum += s.cur[i].ub
		s.prefix = append(s.prefix, sum)
	}
	s.contrib = slices.Grow(s.contrib[:0], len(s.q))[:len(s.q)]
	clear(s.contrib)
	return true
}

// entry is a scored document in the top-k heap.
type entry struct {
	score float64
	doc   uint32
}

// worse orders the heap: lower score first, then larger external id, then
// (for callers that reuse an external id) larger doc id.
func (x *Index) worse(a, b entry) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	if ea, eb := x.ext[a.doc], x.ext[b.doc]; ea != eb {
		return ea > eb
	}
	return a.doc > b.doc
}

// maxScore is document-at-a-time MaxScore (Turtle & Flood, 1995). Cursors
// are sorted by score bound; the lowest ones whose bounds sum below the
// current k-th score are "non-essential": a document found only in them
// cannot enter the top k, so candidates come from the essential lists alone
// and the others are probed by seeking. As the threshold rises, frequent
// low-idf terms drop out of the candidate stream.
func (x *Index) maxScore(s *searcher, k int, allow *bitset.Set) {
	s.k, s.allow, s.checkLive = k, allow, x.deadPostings > 0
	s.heap = s.heap[:0]
	s.thr = x.seed(s)
	s.ess = 0
	s.raise()
	cur, n := s.cur, len(s.cur)
	for s.ess < n {
		if s.ess == n-1 {
			x.single(s)
			return
		}
		d, found := uint32(0), false
		for i := s.ess; i < n; i++ {
			c := &cur[i]
			if c.pos < len(c.docs) && (!found || c.docs[c.pos] < d) {
				d, found = c.docs[c.pos], true
			}
		}
		if !found {
			return
		}
		if !x.eligible(s, d) {
			for i := s.ess; i < n; i++ {
				if c := &cur[i]; c.pos < len(c.docs) && c.docs[c.pos] == d {
					c.pos++
				}
			}
			continue
		}
		kd := s.k0 + s.kl*float64(x.dl[d])
		score := 0.0
		for i := s.ess; i < n; i++ {
			c := &cur[i]
			v := 0.0
			if c.pos < len(c.docs) && c.docs[c.pos] == d {
				v = c.score(kd, x.cfg.TitleWeight)
				c.pos++
			}
			s.contrib[c.qi] = v
			score += v
		}
		x.complete(s, d, kd, score)
	}
}

// single is maxScore's loop once one essential list is left, the common
// case after the threshold rises: it walks that list alone and drops a
// document as soon as its score plus every other term's bound falls short.
func (x *Index) single(s *searcher) {
	c := &s.cur[len(s.cur)-1]
	tw, k0, kl, dl := x.cfg.TitleWeight, s.k0, s.kl, x.dl
	rest := 0.0 // the non-essential bounds
	if s.ess > 0 {
		rest = s.prefix[s.ess-1]
	}
	for c.pos < len(c.docs) && s.ess < len(s.cur) {
		d := c.docs[c.pos]
		kd := k0 + kl*float64(dl[d])
		v := c.score(kd, tw)
		c.pos++
		if v+rest < s.thr || !x.eligible(s, d) {
			continue
		}
		for i := range s.contrib {
			s.contrib[i] = 0
		}
		s.contrib[c.qi] = v
		x.complete(s, d, kd, v)
	}
}

// eligible reports whether d may be returned: live and allowed.
func (x *Index) eligible(s *searcher, d uint32) bool {
	return (!s.checkLive || x.live.Contains(d)) && (s.allow == nil || s.allow.Contains(d))
}

// complete adds the non-essential terms to a candidate whose essential
// contributions are in s.contrib and sum to score, stopping as soon as the
// remaining bounds cannot lift it to the threshold, and offers it to the
// heap.
func (x *Index) complete(s *searcher, d uint32, kd, score float64) {
	for i := s.ess - 1; i >= 0; i-- {
		if score+s.prefix[i] < s.thr {
			return
		}
		c := &s.cur[i]
		c.seek(d)
		v := 0.0
		if c.pos < len(c.docs) && c.docs[c.pos] == d {
			v = c.score(kd, x.cfg.TitleWeight)
		}
		s.contrib[c.qi] = v
		score += v
	}
	// Sum in query order so a score depends on the query and the
	// statistics alone, not on which terms were essential or on bounds
	// that deletes have loosened.
	total := 0.0
	for _, v := range s.contrib {
		total += v
	}
	e := entry{score: total, doc: d}
	switch {
	case len(s.heap) < s.k:
		s.heap = append(s.heap, e)
		x.up(s.heap, len(s.heap)-1)
		if len(s.heap) < s.k {
			return
		}
	case x.worse(s.heap[0], e):
		s.heap[0] = e
		x.down(s.heap, 0)
	default:
		return
	}
	s.thr = max(s.thr, s.heap[0].score*(1-pruneSlack))
	s.raise()
}

// raise moves terms whose bounds, with all lower ones, sum below the
// threshold out of the essential set.
func (s *searcher) raise() {
	for s.ess < len(s.cur) && s.prefix[s.ess] < s.thr {
		s.ess++
	}
}

// seed returns a threshold no higher than the final k-th score, or −Inf.
// When a query pairs a short list with a long one, plain MaxScore walks the
// long list until k good documents turn up; scoring the short list's
// documents first (seeking into the others) finds a k-th score at once,
// and every document in the final top k scores at least that much.
func (x *Index) seed(s *searcher) float64 {
	k := s.k
	n := len(s.cur)
	short, long := 0, 0
	for i := range s.cur {
		if len(s.cur[i].docs) < len(s.cur[short].docs) {
			short = i
		}
		if len(s.cur[i].docs) > len(s.cur[long].docs) {
			long = i
		}
	}
	ls, ll := len(s.cur[short].docs), len(s.cur[long].docs)
	// Worth it when scoring ls documents across n lists costs less than
	// walking the fraction k/ls of the long list (seeks cost a few postings).
	if ls < k || 4*n*ls*ls >= k*ll {
		return math.Inf(-1)
	}
	s.pos = slices.Grow(s.pos[:0], n)[:n]
	clear(s.pos)
	s.seedHeap = s.seedHeap[:0]
	tw := x.cfg.TitleWeight
	for _, d := range s.cur[short].docs {
		if !x.eligible(s, d) {
			continue
		}
		kd := s.k0 + s.kl*float64(x.dl[d])
		clear(s.contrib)
		for i := range s.cur {
			c := &s.cur[i]
			p := seekFrom(c.docs, s.pos[i], d)
			s.pos[i] = p
			if p < len(c.docs) && c.docs[p] == d {
				f := float64(c.tfs[p]&0xffff) + tw*float64(c.tfs[p]>>16)
				s.contrib[c.qi] = c.weight * f / (f + kd)
			}
		}
		total := 0.0
		for _, v := range s.contrib {
			total += v
		}
		s.seedHeap = pushScore(s.seedHeap, total, k)
	}
	if len(s.seedHeap) < k {
		return math.Inf(-1)
	}
	return s.seedHeap[0] * (1 - pruneSlack)
}

// pushScore keeps the k largest scores in a min-heap.
func pushScore(h []float64, v float64, k int) []float64 {
	if len(h) < k {
		h = append(h, v)
		for i := len(h) - 1; i > 0; {
			p := (i - 1) / 2
			if h[p] <= h[i] {
				break
			}
			h[p], h[i] = h[i], h[p]
			i = p
		}
		return h
	}
	if v <= h[0] {
		return h
	}
	h[0] = v
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < len(h) && h[l] < h[m] {
			m = l
		}
		if r := l + 1; r < len(h) && h[r] < h[m] {
			m = r
		}
		if m == i {
			return h
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func (x *Index) up(h []entry, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !x.worse(h[i], h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (x *Index) down(h []entry, i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && x.worse(h[r], h[l]) {
			m = r
		}
		if !x.worse(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// results turns the heap into hits, best first.
func (x *Index) results(s *searcher) []Hit {
	slices.SortFunc(s.heap, func(a, b entry) int {
		if x.worse(a, b) {
			return 1
		}
		if x.worse(b, a) {
			return -1
		}
		return 0
	})
	hits := make([]Hit, len(s.heap))
	for i, e := range s.heap {
		hits[i] = Hit{Doc: e.doc, ID: x.ext[e.doc], Score: e.score}
	}
	return hits
}
