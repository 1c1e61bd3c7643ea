package hnsw

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/quarry-rag/quarry/index/bitset"
	"github.com/quarry-rag/quarry/index/vec"
)

// benchIndex is built once per test binary: 20k × 384 clustered vectors, the
// shape of a small real collection.
var benchIndex = sync.OnceValues(func() (*Index, [][]float32) {
	r := rand.New(rand.NewPCG(11, 11))
	data := clustered(r, 20000, 384, 100, 0.1)
	x, _ := New(384, Config{Seed: 1})
	x.Grow(len(data))
	for _, v := range data {
		_, _ = x.Add(v)
	}
	return x, clustered(r, 256, 384, 100, 0.1)
})

func BenchmarkAdd(b *testing.B) {
	r := rand.New(rand.NewPCG(12, 12))
	data := clustered(r, 2000, 384, 20, 0.1)
	x, _ := New(384, Config{Seed: 1})
	for _, v := range data {
		_, _ = x.Add(v)
	}
	i := 0
	for b.Loop() {
		_, _ = x.Add(data[i%len(data)])
		i++
	}
}

func BenchmarkSearch(b *testing.B) {
	x, qs := benchIndex()
	for _, ef := range []int{32, 64, 128} {
		b.Run(fmt.Sprintf("ef=%d", ef), func(b *testing.B) {
			i := 0
			for b.Loop() {
				_, _ = x.Search(qs[i%len(qs)], 10, SearchOptions{Ef: ef})
				i++
			}
		})
	}
}

// BenchmarkFilterCrossover times the exact scan of the allowed nodes against
// the filtered graph walk at several selectivities; where they cross sets
// exactCost (allowed² ≈ exactCost·n).
func BenchmarkFilterCrossover(b *testing.B) {
	x, qs := benchIndex()
	r := rand.New(rand.NewPCG(13, 13))
	for _, sel := range []float64{0.005, 0.01, 0.02, 0.05, 0.1, 0.2} {
		allow := bitset.New(x.n)
		for i := range x.n {
			if r.Float64() < sel {
				allow.Add(uint32(i))
			}
		}
		s := newSearcher(384)
		run := func(name string, f func(q []float32) []vec.Result) {
			b.Run(fmt.Sprintf("sel=%g/%s", sel, name), func(b *testing.B) {
				i := 0
				for b.Loop() {
					copy(s.q, qs[i%len(qs)])
					f(s.q)
					i++
				}
				b.ReportMetric(float64(allow.Count()), "allowed")
			})
		}
		run("exact", func([]float32) []vec.Result { return x.exact(s, 10, allow) })
		run("graph", func([]float32) []vec.Result { return x.graphSearch(s, 10, filterEf(64, allow.Count(), x.n), allow) })
	}
}
