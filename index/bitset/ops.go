package bitset

// Clone returns an independent copy of s.
func (s *Set) Clone() *Set {
	return &Set{words: append([]uint64(nil), s.words...), n: s.n}
}

// And keeps in s only the members also in o.
func (s *Set) And(o *Set) {
	ow := o.words
	for i := range s.words {
		if i < len(ow) {
			s.words[i] &= ow[i]
		} else {
			s.words[i] = 0
		}
	}
}

// Or adds every member of o to s, growing s when needed.
func (s *Set) Or(o *Set) {
	if len(o.words) > len(s.words) {
		s.words = append(s.words, make([]uint64, len(o.words)-len(s.words))...)
	}
	for i, w := range o.words {
		s.words[i] |= w
	}
	if o.n > s.n {
		s.n = o.n
	}
}

// AndNot removes from s every member of o.
func (s *Set) AndNot(o *Set) {
	for i := range s.words {
		if i >= len(o.words) {
			return
		}
		s.words[i] &^= o.words[i]
	}
}

// Reset removes every member, keeping the capacity.
func (s *Set) Reset() {
	clear(s.words)
}
