package vec

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// scalarDot is the plain loop every kernel benchmark is measured against in
// the same run (ARCHITECTURE §14).
func scalarDot(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func scalarDotInt8(a, b []int8) int32 {
	var s int32
	for i := range a {
		s += int32(a[i]) * int32(b[i])
	}
	return s
}

var sinkF float32
var sinkI int32

func BenchmarkDot(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, n := range []int{64, 384, 768, 1536} {
		x, y := randVec(r, n), randVec(r, n)
		b.Run(fmt.Sprintf("scalar/%d", n), func(b *testing.B) {
			for b.Loop() {
				sinkF += scalarDot(x, y)
			}
		})
		b.Run(fmt.Sprintf("generic/%d", n), func(b *testing.B) {
			for b.Loop() {
				sinkF += dotGeneric(x, y)
			}
		})
		b.Run(fmt.Sprintf("kernel/%d", n), func(b *testing.B) {
			for b.Loop() {
				sinkF += Dot(x, y)
			}
		})
	}
}

func BenchmarkCosine(b *testing.B) {
	r := rand.New(rand.NewPCG(2, 2))
	for _, n := range []int{384, 1536} {
		x, y := randVec(r, n), randVec(r, n)
		b.Run(fmt.Sprintf("scalar/%d", n), func(b *testing.B) {
			for b.Loop() {
				d, na, nb := cosineGeneric(x, y)
				sinkF += d + na + nb
			}
		})
		b.Run(fmt.Sprintf("kernel/%d", n), func(b *testing.B) {
			for b.Loop() {
				sinkF += Cosine(x, y)
			}
		})
	}
}

func BenchmarkNormalize(b *testing.B) {
	v := randVec(rand.New(rand.NewPCG(3, 3)), 384)
	for b.Loop() {
		_ = Normalize(v)
	}
}

func BenchmarkDotInt8(b *testing.B) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, n := range []int{384, 1536} {
		x, y := randInt8(r, n), randInt8(r, n)
		b.Run(fmt.Sprintf("scalar/%d", n), func(b *testing.B) {
			for b.Loop() {
				sinkI += scalarDotInt8(x, y)
			}
		})
		b.Run(fmt.Sprintf("generic/%d", n), func(b *testing.B) {
			for b.Loop() {
				sinkI += dotInt8Generic(x, y)
			}
		})
		b.Run(fmt.Sprintf("kernel/%d", n), func(b *testing.B) {
			for b.Loop() {
				sinkI += dotInt8(x, y)
			}
		})
		rows := randInt8(r, 128*n)
		out := make([]int32, 128)
		b.Run(fmt.Sprintf("rows128/%d", n), func(b *testing.B) {
			for b.Loop() {
				dotInt8Rows(x, rows, n, out)
			}
		})
	}
}

func BenchmarkTopK(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 5))
	scores := make([]float32, 25000)
	for i := range scores {
		scores[i] = r.Float32()
	}
	t := NewTopK(10)
	var out []Result
	for b.Loop() {
		t.Reset(10)
		for i, s := range scores {
			t.Push(uint32(i), s)
		}
		out = t.Results(out[:0])
	}
}

// BenchmarkScan runs the 25k × 384 exact scan (float32, int8 with
// re-scoring, and a scalar-loop reference) on 1 and 2 goroutines.
func BenchmarkScan(b *testing.B) {
	r := rand.New(rand.NewPCG(6, 6))
	const n, dim = 25000, 384
	data := clustered(r, n, dim, 100, 0.1)
	m, err := QuantizeInt8(data, dim)
	if err != nil {
		b.Fatal(err)
	}
	qs := clustered(r, 64, dim, 100, 0.1)
	b.Run("scalar", func(b *testing.B) {
		t := NewTopK(10)
		i := 0
		for b.Loop() {
			q := qs[(i%64)*dim : (i%64+1)*dim]
			t.Reset(10)
			for j := range n {
				t.Push(uint32(j), scalarDot(q, data[j*dim:(j+1)*dim]))
			}
			i++
		}
	})
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("float32/threads=%d", threads), func(b *testing.B) {
			i := 0
			for b.Loop() {
				_, _ = Scan(data, dim, qs[(i%64)*dim:(i%64+1)*dim], 10, ScanOptions{Threads: threads})
				i++
			}
		})
		b.Run(fmt.Sprintf("int8/threads=%d", threads), func(b *testing.B) {
			i := 0
			for b.Loop() {
				_, _ = m.Scan(data, qs[(i%64)*dim:(i%64+1)*dim], 10, ScanOptions{Threads: threads})
				i++
			}
		})
	}
}

// BenchmarkInt8Encode is the per-vector cost an HNSW index pays for its
// codes when it loads or refits its quantizer.
func BenchmarkInt8Encode(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	const dim = 512
	data := clustered(r, 256, dim, 4, 0.1)
	z, err := TrainInt8(data, dim)
	if err != nil {
		b.Fatal(err)
	}
	dst := make([]int8, z.Stride())
	i := 0
	for b.Loop() {
		z.Encode(dst, data[(i%256)*dim:(i%256+1)*dim])
		i++
	}
}
