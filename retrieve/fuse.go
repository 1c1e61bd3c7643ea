package retrieve

import (
	"slices"

	"github.com/quarry-rag/quarry/document"
)

// DefaultRRFK is the k of reciprocal-rank fusion.
const DefaultRRFK = 60

// FuseRRF merges ranked lists by reciprocal-rank fusion: a passage scores
// Σ 1/(k + rank) over the lists it appears in (rank from 1), keyed by id,
// or by content for passages without one. Ties keep first-seen order; at
// most topK come back (all when topK ≤ 0), each a copy with the fused
// score.
func FuseRRF(lists [][]*document.Document, k, topK int) []*document.Document {
	if k <= 0 {
		k = DefaultRRFK
	}
	if len(lists) == 1 {
		out := lists[0]
		if topK > 0 && len(out) > topK {
			out = out[:topK]
		}
		return out
	}
	type entry struct {
		d     *document.Document
		score float64
		first int
	}
	byKey := map[string]*entry{}
	var order []*entry
	for _, l := range lists {
		for rank, d := range l {
			key := d.ID
			if key == "" {
				key = "\x00" + d.Content
			}
			e := byKey[key]
			if e == nil {
				e = &entry{d: d, first: len(order)}
				byKey[key] = e
				order = append(order, e)
			}
			e.score += 1 / float64(k+rank+1)
		}
	}
	slices.SortStableFunc(order, func(a, b *entry) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return a.first - b.first
	})
	if topK > 0 && len(order) > topK {
		order = order[:topK]
	}
	out := make([]*document.Document, len(order))
	for i, e := range order {
		c := *e.d
		c.SetScore(e.score)
		out[i] = &c
	}
	return out
}
