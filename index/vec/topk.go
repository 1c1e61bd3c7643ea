package vec

import "slices"

// Result is one hit of a search: an internal row or node id and its score,
// higher is better.
type Result struct {
	ID    uint32
	Score float32
}

// Before reports whether r ranks ahead of o under Quarry's ordering: higher
// score first, then lower id, so equal scores come out in a stable order.
func (r Result) Before(o Result) bool {
	return r.Score > o.Score || (r.Score == o.Score && r.ID < o.ID)
}

// SortResults orders rs by Before.
func SortResults(rs []Result) {
	slices.SortFunc(rs, func(a, b Result) int {
		switch {
		case a.Before(b):
			return -1
		case b.Before(a):
			return 1
		}
		return 0
	})
}

// TopK keeps the k best results pushed into it. It is a binary heap with the
// worst kept result at the root, so a push that cannot make the cut costs one
// comparison. The zero value keeps nothing; use NewTopK or Reset.
type TopK struct {
	k int
	h []Result
}

// NewTopK returns an empty TopK that keeps up to k results.
func NewTopK(k int) *TopK {
	return &TopK{k: k, h: make([]Result, 0, max(k, 0))}
}

// Reset empties t and sets its capacity to k, reusing its storage.
func (t *TopK) Reset(k int) {
	t.k = k
	t.h = t.h[:0]
}

// Len is the number of results held.
func (t *TopK) Len() int { return len(t.h) }

// Full reports whether t holds k results.
func (t *TopK) Full() bool { return len(t.h) >= t.k }

// Worst is the lowest-ranked result held; only meaningful when Len() > 0.
func (t *TopK) Worst() Result { return t.h[0] }

// Push offers a result; it is kept when t is not full or it ranks ahead of the
// worst result held.
func (t *TopK) Push(id uint32, score float32) {
	r := Result{ID: id, Score: score}
	if len(t.h) < t.k {
		t.h = append(t.h, r)
		t.up(len(t.h) - 1)
		return
	}
	if t.k > 0 && r.Before(t.h[0]) {
		t.h[0] = r
		t.down(0)
	}
}

// Results appends the held results to dst in rank order and empties t.
func (t *TopK) Results(dst []Result) []Result {
	start := len(dst)
	dst = append(dst, t.h...)
	SortResults(dst[start:])
	t.h = t.h[:0]
	return dst
}

func (t *TopK) up(i int) {
	h := t.h
	for i > 0 {
		p := (i - 1) / 2
		if !h[p].Before(h[i]) {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func (t *TopK) down(i int) {
	h := t.h
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		w := l // the worse child
		if r := l + 1; r < n && h[l].Before(h[r]) {
			w = r
		}
		if !h[i].Before(h[w]) {
			return
		}
		h[i], h[w] = h[w], h[i]
		i = w
	}
}
