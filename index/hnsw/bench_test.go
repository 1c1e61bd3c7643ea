package hnsw

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
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
		s := newSearcher(384, vec.Int8Stride(384))
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

// BenchmarkSearch100k searches 100k × 384 clustered vectors, the shape of
// quarry bench ann, walking on float32 and on int8 codes. Building takes
// about a minute, so it runs only when QUARRY_BENCH_DIR names a directory,
// where the built index is kept for the next run. Profile with
//
//	QUARRY_BENCH_DIR=/tmp/hb go test -run '^$' -bench Search100k -cpuprofile /tmp/cpu.out ./index/hnsw
func BenchmarkSearch100k(b *testing.B) {
	dir := os.Getenv("QUARRY_BENCH_DIR")
	if dir == "" {
		b.Skip("set QUARRY_BENCH_DIR to a directory to keep the 100k index in")
	}
	r := rand.New(rand.NewPCG(21, 21))
	data := clustered(r, 100_000, 384, 100, 0.1)
	qs := clustered(r, 1000, 384, 100, 0.1)
	path := filepath.Join(dir, "hnsw-100k-384.bin")
	x, err := readIndexFile(path)
	if err != nil {
		x, _ = New(384, Config{Seed: 1})
		x.Grow(len(data))
		for _, v := range data {
			_, _ = x.Add(v)
		}
		if err := writeIndexFile(path, x); err != nil {
			b.Fatal(err)
		}
	}
	for _, q := range []Quantization{QuantizationNone, QuantizationInt8} {
		if err := x.SetQuantization(q); err != nil {
			b.Fatal(err)
		}
		for _, ef := range []int{64, 128} {
			b.Run(fmt.Sprintf("%v/ef=%d", q, ef), func(b *testing.B) {
				i := 0
				for b.Loop() {
					_, _ = x.Search(qs[i%len(qs)], 10, SearchOptions{Ef: ef})
					i++
				}
			})
		}
	}
}

// readIndexFile reads as the embedded store does: buffered, with the
// file's size as the bound on what may be allocated.
func readIndexFile(path string) (*Index, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return Read(sizedReader{bufio.NewReaderSize(f, 1<<20), int(st.Size())})
}

type sizedReader struct {
	io.Reader
	n int
}

func (r sizedReader) Len() int { return r.n }

func writeIndexFile(path string, x *Index) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := x.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// BenchmarkRead100k loads the index BenchmarkSearch100k keeps in
// QUARRY_BENCH_DIR (run that first): the graph's share of opening a
// collection.
func BenchmarkRead100k(b *testing.B) {
	dir := os.Getenv("QUARRY_BENCH_DIR")
	if dir == "" {
		b.Skip("set QUARRY_BENCH_DIR to the directory BenchmarkSearch100k keeps its index in")
	}
	path := filepath.Join(dir, "hnsw-100k-384.bin")
	if _, err := os.Stat(path); err != nil {
		b.Skipf("run BenchmarkSearch100k first: %v", err)
	}
	for b.Loop() {
		if _, err := readIndexFile(path); err != nil {
			b.Fatal(err)
		}
	}
}
