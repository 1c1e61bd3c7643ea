package bitset

import (
	"slices"
	"testing"
)

func members(s *Set) []uint32 {
	var out []uint32
	s.Range(func(id uint32) bool { out = append(out, id); return true })
	return out
}

func TestSetOps(t *testing.T) {
	a, b := New(10), New(200)
	for _, id := range []uint32{1, 5, 9} {
		a.Add(id)
	}
	for _, id := range []uint32{5, 9, 150} {
		b.Add(id)
	}
	and := a.Clone()
	and.And(b)
	if got := members(and); !slices.Equal(got, []uint32{5, 9}) {
		t.Errorf("and = %v", got)
	}
	or := a.Clone()
	or.Or(b)
	if got := members(or); !slices.Equal(got, []uint32{1, 5, 9, 150}) || or.Len() != 200 {
		t.Errorf("or = %v (len %d)", got, or.Len())
	}
	diff := b.Clone()
	diff.AndNot(a)
	if got := members(diff); !slices.Equal(got, []uint32{150}) {
		t.Errorf("and not = %v", got)
	}
	if got := members(a); !slices.Equal(got, []uint32{1, 5, 9}) {
		t.Errorf("clone shares words with the original: %v", got)
	}
	short := New(64)
	short.Add(3)
	wide := b.Clone()
	wide.And(short)
	if wide.Count() != 0 {
		t.Errorf("and with a shorter set kept %v", members(wide))
	}
	a.Reset()
	if a.Count() != 0 {
		t.Error("reset kept members")
	}
}
