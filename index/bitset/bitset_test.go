package bitset

import (
	"math/rand/v2"
	"testing"
)

func TestSetAgainstMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	s := New(100)
	ref := map[uint32]bool{}
	for range 5000 {
		id := uint32(r.IntN(1000))
		if r.IntN(3) == 0 {
			s.Remove(id)
			delete(ref, id)
		} else {
			s.Add(id)
			ref[id] = true
		}
	}
	if s.Count() != len(ref) {
		t.Fatalf("Count = %d, want %d", s.Count(), len(ref))
	}
	for id := range uint32(1100) {
		if s.Contains(id) != ref[id] {
			t.Fatalf("Contains(%d) = %v", id, s.Contains(id))
		}
	}
	prev, n := -1, 0
	s.Range(func(id uint32) bool {
		if int(id) <= prev || !ref[id] {
			t.Fatalf("Range gave %d after %d", id, prev)
		}
		prev = int(id)
		n++
		return true
	})
	if n != len(ref) {
		t.Fatalf("Range visited %d, want %d", n, len(ref))
	}
	var nilSet *Set
	if nilSet.Contains(3) {
		t.Fatal("nil set contains 3")
	}
}
