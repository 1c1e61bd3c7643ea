package hnsw

import "github.com/quarry-rag/quarry/index/vec"

// repairExpansions bounds how many deleted nodes one repair walks through
// when looking for replacement neighbours, so a mass delete stays linear.
const repairExpansions = 64

// Compact unlinks every deleted node: each live node that pointed at one gets
// its list rebuilt by the neighbour heuristic from its remaining neighbours
// plus the live nodes reachable through the deleted ones, so the graph stays
// connected. The unlinked ids are reused by later Adds. It returns the number
// of nodes unlinked.
func (x *Index) Compact() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed || len(x.tomb) == 0 {
		return 0
	}
	for u := range uint32(x.n) {
		if x.deleted.Contains(u) {
			continue
		}
		for lc := 0; lc <= int(x.levels[u]); lc++ {
			blk := x.block(u, lc)
			for _, nb := range blk[1 : 1+blk[0]] {
				if x.deleted.Contains(nb) {
					x.repair(u, lc)
					break
				}
			}
		}
	}
	for _, d := range x.tomb {
		for lc := 0; lc <= int(x.levels[d]); lc++ {
			x.block(d, lc)[0] = 0
		}
		x.levels[d] = 0
		x.free = append(x.free, d)
	}
	n := len(x.tomb)
	x.tomb = x.tomb[:0]
	if x.deleted.Contains(x.entry) {
		x.pickEntry()
	}
	return n
}

// repair rebuilds u's list on layer lc without deleted nodes.
func (x *Index) repair(u uint32, lc int) {
	s := x.ws
	s.reset(x.n)
	s.seen(u)
	vu := x.vector(u)
	s.tmp = s.tmp[:0]
	blk := x.block(u, lc)
	s.stack = append(s.stack[:0], blk[1:1+blk[0]]...)
	expanded := 0
	for len(s.stack) > 0 {
		v := s.stack[len(s.stack)-1]
		s.stack = s.stack[:len(s.stack)-1]
		if s.seen(v) {
			continue
		}
		if !x.deleted.Contains(v) {
			s.tmp = append(s.tmp, item{-vec.Dot(vu, x.vector(v)), v})
			continue
		}
		if expanded < repairExpansions && int(x.levels[v]) >= lc {
			expanded++
			b := x.block(v, lc)
			s.stack = append(s.stack, b[1:1+b[0]]...)
		}
	}
	sortItems(s.tmp)
	s.sel2 = x.selectNeighbours(s.tmp, x.maxConn(lc), s.sel2[:0])
	blk[0] = uint32(len(s.sel2))
	for i, c := range s.sel2 {
		blk[1+i] = c.id
	}
}

// pickEntry makes the live node with the highest level (lowest id on ties)
// the entry point, or empties the graph when nothing is live.
func (x *Index) pickEntry() {
	x.maxLevel = -1
	for id := range uint32(x.n) {
		if !x.deleted.Contains(id) && int(x.levels[id]) > x.maxLevel {
			x.entry, x.maxLevel = id, int(x.levels[id])
		}
	}
}
