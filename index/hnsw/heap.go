package hnsw

// item is a node and its distance to the query (the negated dot product, so
// smaller is closer).
type item struct {
	d  float32
	id uint32
}

// minHeap pops the closest item first: the candidate queue.
type minHeap []item

func (h *minHeap) push(x item) {
	*h = append(*h, x)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if s[p].d <= s[i].d {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

func (h *minHeap) pop() item {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	*h = s
	i := 0
	for {
		l := 2*i + 1
		if l >= last {
			break
		}
		c := l
		if r := l + 1; r < last && s[r].d < s[l].d {
			c = r
		}
		if s[i].d <= s[c].d {
			break
		}
		s[i], s[c] = s[c], s[i]
		i = c
	}
	return top
}

// maxHeap pops the farthest item first: the bounded result set. Ties on
// distance put the higher id on top so that Quarry's id-ascending rule keeps
// the lower id when the set overflows.
type maxHeap []item

func worse(a, b item) bool { return a.d > b.d || (a.d == b.d && a.id > b.id) }

func (h *maxHeap) push(x item) {
	*h = append(*h, x)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !worse(s[i], s[p]) {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

func (h *maxHeap) pop() item {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	*h = s
	i := 0
	for {
		l := 2*i + 1
		if l >= last {
			break
		}
		c := l
		if r := l + 1; r < last && worse(s[r], s[l]) {
			c = r
		}
		if !worse(s[c], s[i]) {
			break
		}
		s[i], s[c] = s[c], s[i]
		i = c
	}
	return top
}
