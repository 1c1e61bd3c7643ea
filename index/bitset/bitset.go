// Package bitset is a dense set of small non-negative integers, the allow-set
// that filters compile to before a vector search: one bit per internal id, so
// membership is a shift and a mask and a million ids cost 125 KB.
package bitset

import "math/bits"

// Set is a dense bitset over [0, Len()). The zero value is an empty set of
// length 0; Add grows it. A Set is not safe for concurrent writes; concurrent
// reads are fine.
type Set struct {
	words []uint64
	n     int
}

// New returns an empty set able to hold ids in [0, n) without growing.
func New(n int) *Set {
	return &Set{words: make([]uint64, (n+63)/64), n: n}
}

// Len is the id range the set covers: ids ≥ Len() are not members.
func (s *Set) Len() int { return s.n }

// Add inserts id, growing the set when id ≥ Len().
func (s *Set) Add(id uint32) {
	w := int(id >> 6)
	if w >= len(s.words) {
		s.words = append(s.words, make([]uint64, w+1-len(s.words))...)
	}
	if int(id) >= s.n {
		s.n = int(id) + 1
	}
	s.words[w] |= 1 << (id & 63)
}

// Remove deletes id; ids outside the range are ignored.
func (s *Set) Remove(id uint32) {
	if w := int(id >> 6); w < len(s.words) {
		s.words[w] &^= 1 << (id & 63)
	}
}

// Contains reports whether id is a member. A nil set contains nothing.
func (s *Set) Contains(id uint32) bool {
	if s == nil {
		return false
	}
	w := int(id >> 6)
	return w < len(s.words) && s.words[w]&(1<<(id&63)) != 0
}

// Count is the number of members.
func (s *Set) Count() int {
	c := 0
	for _, w := range s.words {
		c += bits.OnesCount64(w)
	}
	return c
}

// Words exposes the backing words (bit i of word j is id 64·j+i) so scans can
// walk members without a call per id. Callers must not modify them.
func (s *Set) Words() []uint64 { return s.words }

// Range calls f for each member in ascending order until f returns false.
func (s *Set) Range(f func(id uint32) bool) {
	for j, w := range s.words {
		for w != 0 {
			i := bits.TrailingZeros64(w)
			if !f(uint32(j<<6 | i)) {
				return
			}
			w &= w - 1
		}
	}
}
