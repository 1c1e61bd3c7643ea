// Package sparsebm25 is BM25 split between Quarry and an engine's sparse
// vectors, as the Qdrant and Pinecone stores keep it: a chunk's vector
// holds each of its terms' saturated frequency under parameters fixed at
// the collection's creation, so the engine's dot product with a query's
// idf weights is the BM25 sum the embedded store computes, but for the
// fixed average length.
package sparsebm25

import (
	"hash/fnv"
	"slices"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/store"
)

// Params fix a collection's term weights at its creation: a chunk's
// vector is written once, so the average length it is normalised by
// cannot follow the collection as it grows.
type Params struct {
	K1     float64 `json:"k1"`
	B      float64 `json:"b"`
	AvgLen float64 `json:"avgLen"`
}

// Default is BM25's usual k1 and b with the average length of a chunk
// Quarry's default splitter makes (a 512-token budget fills to about 256
// terms once stop words go).
func Default() Params { return Params{K1: 1.2, B: 0.75, AvgLen: 256} }

// Vector is a sparse vector.
type Vector struct {
	Indices []uint32  `json:"indices"`
	Values  []float32 `json:"values"`
}

// Index is a term's dimension: its 32-bit FNV-1a hash. Two terms that
// collide count as one, which at 2³² dimensions happens about once in a
// vocabulary of 65,000 words and costs only that pair's ranking.
func Index(term string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(term))
	return h.Sum32()
}

// Doc is a chunk's vector: each term's BM25 term-frequency weight
// tf·(k1+1) / (tf + k1·(1−b+b·len/avgLen)), nil when it has no terms. The
// title counts as text, as in the embedded store's index; code pairs are
// terms that do not count towards the length. With limit above zero, the
// limit heaviest weights are kept (ties by dimension, so the cut is the
// same every time).
func Doc(an *bm25.Analyzer, d *document.Document, p Params, limit int) *Vector {
	terms, pairs := an.AnalyzeDocument(d.Content, store.Code(d))
	if t := store.Title(d); t != "" {
		terms = append(an.Analyze(t), terms...)
	}
	tf := map[uint32]float64{}
	for _, t := range terms {
		tf[Index(t)]++
	}
	for _, t := range pairs {
		tf[Index(t)]++
	}
	if len(tf) == 0 {
		return nil
	}
	idx := make([]uint32, 0, len(tf))
	for i := range tf {
		idx = append(idx, i)
	}
	if limit > 0 && len(idx) > limit {
		slices.SortFunc(idx, func(x, y uint32) int {
			switch {
			case tf[x] > tf[y]:
				return -1
			case tf[x] < tf[y]:
				return 1
			case x < y:
				return -1
			}
			return 1
		})
		idx = idx[:limit]
	}
	slices.Sort(idx)
	norm := p.K1 * (1 - p.B + p.B*float64(len(terms))/p.AvgLen)
	v := &Vector{Indices: idx, Values: make([]float32, len(idx))}
	for n, i := range idx {
		f := tf[i]
		v.Values[n] = float32(f * (p.K1 + 1) / (f + norm))
	}
	return v
}

// Query is the distinct dimensions of a query's terms and code pairs, in
// the order they first appear; nil when it has none.
func Query(an *bm25.Analyzer, query string) []uint32 {
	terms, pairs := an.AnalyzeQuery(query)
	seen := map[uint32]bool{}
	var dims []uint32
	for _, t := range append(terms, pairs...) {
		if i := Index(t); !seen[i] {
			seen[i] = true
			dims = append(dims, i)
		}
	}
	return dims
}
