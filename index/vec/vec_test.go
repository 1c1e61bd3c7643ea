package vec

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/index/bitset"
)

func randVec(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// lengths covers every tail shape the kernels have (0..67) plus common
// embedding sizes.
func lengths() []int {
	var ls []int
	for n := range 68 {
		ls = append(ls, n)
	}
	return append(ls, 96, 127, 128, 129, 255, 256, 384, 511, 768, 1024, 1536, 3072)
}

// closeRel checks |got-want| ≤ 1e-5·scale, with scale Σ|a_i·b_i| so that
// dot products that cancel to near zero are judged by the size of what was
// summed rather than by the tiny result.
func closeRel(got, want, scale float64) bool {
	return math.Abs(got-want) <= 1e-5*max(scale, 1e-30)
}

func TestDotKernelsAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, n := range lengths() {
		for range 20 {
			// Unaligned starts: slice off 0..3 leading elements.
			off := r.IntN(4)
			a := randVec(r, n+off)[off:]
			b := randVec(r, n+off)[off:]
			var ref, scale float64
			for i := range a {
				ref += float64(a[i]) * float64(b[i])
				scale += math.Abs(float64(a[i]) * float64(b[i]))
			}
			got := float64(Dot(a, b))
			gen := 0.0
			if n > 0 {
				gen = float64(dotGeneric(a, b))
			}
			if !closeRel(got, ref, scale) || !closeRel(gen, ref, scale) || !closeRel(got, gen, scale) {
				t.Fatalf("n=%d: Dot=%v generic=%v float64=%v", n, got, gen, ref)
			}
		}
	}
}

func TestCosineMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	for _, n := range lengths() {
		if n == 0 {
			continue
		}
		for range 10 {
			a, b := randVec(r, n), randVec(r, n)
			want, err := document.Cosine(a, b)
			if err != nil {
				t.Fatal(err)
			}
			got := float64(Cosine(a, b))
			d, na, nb := cosineGeneric(a, b)
			gen := float64(d) / math.Sqrt(float64(na)*float64(nb))
			if math.Abs(got-want) > 1e-5 || math.Abs(gen-want) > 1e-5 {
				t.Fatalf("n=%d: Cosine=%v generic=%v reference=%v", n, got, gen, want)
			}
		}
	}
	if c := Cosine(make([]float32, 5), randVec(r, 5)); c != 0 {
		t.Fatalf("zero vector cosine = %v, want 0", c)
	}
}

func TestNormalize(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	for _, n := range lengths()[1:] {
		v := randVec(r, n)
		if err := Normalize(v); err != nil {
			t.Fatal(err)
		}
		if got := Norm(v); math.Abs(float64(got)-1) > 1e-5 {
			t.Fatalf("n=%d: norm after Normalize = %v", n, got)
		}
	}
	if err := Normalize(make([]float32, 4)); err != ErrZeroNorm {
		t.Fatalf("Normalize(zero) = %v, want ErrZeroNorm", err)
	}
	if err := Normalize([]float32{float32(math.Inf(1)), 1}); err != ErrZeroNorm {
		t.Fatalf("Normalize(+Inf) = %v, want ErrZeroNorm", err)
	}
}

func randInt8(r *rand.Rand, n int) []int8 {
	v := make([]int8, n)
	for i := range v {
		v[i] = int8(r.IntN(255) - 127)
	}
	return v
}

func TestInt8KernelsAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, n := range lengths() {
		for range 20 {
			off := r.IntN(4)
			a := randInt8(r, n+off)[off:]
			b := randInt8(r, n+off)[off:]
			if n > 0 && r.IntN(4) == 0 { // extremes must not saturate
				for i := range a {
					a[i], b[i] = 127, -127
				}
			}
			var want int32
			for i := range a {
				want += int32(a[i]) * int32(b[i])
			}
			if got := dotInt8(a, b); got != want {
				t.Fatalf("n=%d: dotInt8=%d want %d", n, got, want)
			}
			if got := dotInt8Generic(a, b); got != want {
				t.Fatalf("n=%d: dotInt8Generic=%d want %d", n, got, want)
			}
		}
	}
	for _, stride := range []int{32, 64, 96, 384, 416} {
		rows := randInt8(r, 7*stride)
		q := randInt8(r, stride)
		out := make([]int32, 7)
		dotInt8Rows(q, rows, stride, out)
		for i, got := range out {
			if want := dotInt8Generic(q, rows[i*stride:(i+1)*stride]); got != want {
				t.Fatalf("stride=%d row %d: %d want %d", stride, i, got, want)
			}
		}
	}
}

func TestTopKMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for _, k := range []int{0, 1, 3, 10, 100} {
		var all []Result
		tk := NewTopK(k)
		for i := range 500 {
			s := float32(r.IntN(50)) // many ties
			all = append(all, Result{ID: uint32(i), Score: s})
		}
		r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		for _, x := range all {
			tk.Push(x.ID, x.Score)
		}
		SortResults(all)
		got := tk.Results(nil)
		if !slices.Equal(got, all[:min(k, len(all))]) {
			t.Fatalf("k=%d: got %v want %v", k, got, all[:k])
		}
	}
}

// clustered returns n unit vectors drawn around c unit centres.
func clustered(r *rand.Rand, n, dim, c int, sigma float64) []float32 {
	centres := make([][]float32, c)
	for i := range centres {
		centres[i] = randVec(r, dim)
		_ = Normalize(centres[i])
	}
	data := make([]float32, 0, n*dim)
	for range n {
		ctr := centres[r.IntN(c)]
		v := make([]float32, dim)
		for d := range v {
			v[d] = ctr[d] + float32(sigma*r.NormFloat64())
		}
		_ = Normalize(v)
		data = append(data, v...)
	}
	return data
}

func bruteTopK(data []float32, dim int, q []float32, k int, allow *bitset.Set) []Result {
	var all []Result
	for i := range len(data) / dim {
		if allow != nil && !allow.Contains(uint32(i)) {
			continue
		}
		all = append(all, Result{ID: uint32(i), Score: dotGeneric(q, data[i*dim:(i+1)*dim])})
	}
	SortResults(all)
	return all[:min(k, len(all))]
}

func TestScanMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	const dim = 37
	data := clustered(r, 1000, dim, 10, 0.1)
	allow := bitset.New(1000)
	for i := range 1000 {
		if r.IntN(10) == 0 {
			allow.Add(uint32(i))
		}
	}
	for _, threads := range []int{1, 2, 3, 8} {
		for _, a := range []*bitset.Set{nil, allow} {
			for range 5 {
				q := randVec(r, dim)
				got, err := Scan(data, dim, q, 10, ScanOptions{Threads: threads, Allow: a})
				if err != nil {
					t.Fatal(err)
				}
				want := bruteTopK(data, dim, q, 10, a)
				if len(got) != len(want) {
					t.Fatalf("threads=%d: %d results, want %d", threads, len(got), len(want))
				}
				for i := range got {
					if got[i].ID != want[i].ID || math.Abs(float64(got[i].Score-want[i].Score)) > 1e-5 {
						t.Fatalf("threads=%d rank %d: %v want %v", threads, i, got[i], want[i])
					}
				}
			}
		}
	}
	if _, err := Scan(data, dim, make([]float32, 3), 1, ScanOptions{}); err == nil {
		t.Fatal("query of wrong dimension: no error")
	}
	if _, err := Scan(data[:dim+1], dim, make([]float32, dim), 1, ScanOptions{}); err == nil {
		t.Fatal("ragged matrix: no error")
	}
}

func recallAt(got, want []Result) float64 {
	ids := map[uint32]bool{}
	for _, w := range want {
		ids[w.ID] = true
	}
	hit := 0
	for _, g := range got {
		if ids[g.ID] {
			hit++
		}
	}
	return float64(hit) / float64(max(1, len(want)))
}

func TestInt8ScanRecall(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	const dim, n = 64, 3000
	data := clustered(r, n, dim, 20, 0.1)
	m, err := QuantizeInt8(data, dim)
	if err != nil {
		t.Fatal(err)
	}
	allow := bitset.New(n)
	for i := range n {
		if i%3 == 0 {
			allow.Add(uint32(i))
		}
	}
	var sum float64
	const nq = 50
	for i := range nq {
		q := data[i*dim : (i+1)*dim]
		a := allow
		if i%2 == 0 {
			a = nil
		}
		got, err := m.Scan(data, q, 10, ScanOptions{Threads: 2, Allow: a})
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range got {
			if a != nil && !a.Contains(g.ID) {
				t.Fatalf("result %d is not allowed", g.ID)
			}
		}
		sum += recallAt(got, bruteTopK(data, dim, q, 10, a))
	}
	if rec := sum / nq; rec < 0.99 {
		t.Fatalf("int8 recall@10 with re-scoring = %.3f, want ≥ 0.99", rec)
	}
}

// TestQuantizationModes logs recall before re-scoring for per-dimension and
// global ranges: the measurement behind Int8Matrix's choice.
func TestQuantizationModes(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	const dim, n, nq = 128, 4000, 40
	data := clustered(r, n, dim, 40, 0.1)
	for _, perDim := range []bool{true, false} {
		m, err := quantize(data, dim, perDim)
		if err != nil {
			t.Fatal(err)
		}
		var sum float64
		for range nq {
			q := randVec(r, dim)
			_ = Normalize(q)
			got, _ := m.Scan(data, q, 10, ScanOptions{Rescore: 10})
			sum += recallAt(got, bruteTopK(data, dim, q, 10, nil))
		}
		t.Logf("perDim=%v recall@10 with no re-scoring pool = %.3f", perDim, sum/nq)
	}
}

func TestPrefetchRowsIsHarmless(t *testing.T) {
	data := make([]float32, 10*384)
	PrefetchRows(data, 384, []uint32{0, 9, 3})
	PrefetchRows(data, 384, nil)
	PrefetchRows(nil, 384, nil)
	for _, x := range data {
		if x != 0 {
			t.Fatal("prefetch changed data")
		}
	}
}

func TestPrefetchCodesIsHarmless(t *testing.T) {
	for _, stride := range []int{32, 96, 384, 1536} {
		codes := make([]int8, 10*stride)
		PrefetchCodes(codes, stride, []uint32{0, 9, 3})
		PrefetchCodes(codes, stride, nil)
		PrefetchCodes(nil, stride, nil)
		for _, x := range codes {
			if x != 0 {
				t.Fatal("prefetch changed codes")
			}
		}
	}
}

// TestInt8QuantizerRanks: the integer dot of EncodeQuery and Encode codes is
// an affine image of the float dot product, so it ranks rows nearly as the
// float dot does, and Encode clamps values outside the trained range.
func TestInt8QuantizerRanks(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	const dim, n = 100, 500
	data := clustered(r, n, dim, 10, 0.1)
	z, err := TrainInt8(data, dim)
	if err != nil {
		t.Fatal(err)
	}
	if z.Dim() != dim || z.Stride() != 128 {
		t.Fatalf("dim %d stride %d", z.Dim(), z.Stride())
	}
	codes := make([]int8, n*z.Stride())
	for i := range n {
		z.Encode(codes[i*z.Stride():], data[i*dim:(i+1)*dim])
	}
	for _, c := range codes {
		if c < -127 {
			t.Fatal("code -128: the SIMD kernel could saturate")
		}
	}
	q := data[:dim]
	u := make([]int8, z.Stride())
	z.EncodeQuery(u, q)
	// Top 10 by codes, re-scored, must hold most of the float top 10.
	top := NewTopK(30)
	for i := range n {
		top.Push(uint32(i), float32(DotInt8(u, codes[i*z.Stride():(i+1)*z.Stride()])))
	}
	exact := NewTopK(10)
	for _, c := range top.Results(nil) {
		exact.Push(c.ID, Dot(q, data[int(c.ID)*dim:(int(c.ID)+1)*dim]))
	}
	if rec := recallAt(exact.Results(nil), bruteTopK(data, dim, q, 10, nil)); rec < 0.9 {
		t.Fatalf("recall@10 of the codes with a pool of 30: %.2f", rec)
	}
	// Out of range values clamp rather than wrap.
	big := make([]float32, dim)
	for d := range big {
		big[d] = 1e6
		if d%2 == 1 {
			big[d] = -1e6
		}
	}
	z.Encode(u, big)
	for d := range dim {
		if want := int8(127 - 254*(d%2)); u[d] != want {
			t.Fatalf("column %d encoded %d, want %d", d, u[d], want)
		}
	}
	// Parameters round-trip; invalid ones are refused.
	off, sc := z.Params()
	if y, err := NewInt8Quantizer(off, sc); err != nil || y.Stride() != z.Stride() {
		t.Fatalf("round trip: %v", err)
	}
	for name, bad := range map[string][2][]float32{
		"empty":     {nil, nil},
		"lengths":   {off, sc[:3]},
		"zero":      {off[:1], {0}},
		"negative":  {off[:1], {-1}},
		"NaN":       {{float32(math.NaN())}, sc[:1]},
		"inf scale": {off[:1], {float32(math.Inf(1))}},
	} {
		if _, err := NewInt8Quantizer(bad[0], bad[1]); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestRoundClamp(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 10))
	for range 100000 {
		x := float32(r.NormFloat64() * 100)
		got, want := roundClamp(x), quantizeValue(x)
		frac := x - float32(math.Floor(float64(x)))
		if got != want && frac != 0.5 {
			t.Fatalf("roundClamp(%v) = %d, quantizeValue %d", x, got, want)
		}
		if got < -127 {
			t.Fatalf("roundClamp(%v) = %d", x, got)
		}
	}
	for x, want := range map[float32]int8{0: 0, 0.49: 0, 0.5: 1, -0.5: 0, -0.51: -1, 126.6: 127, 1e9: 127, -1e9: -127} {
		if got := roundClamp(x); got != want {
			t.Errorf("roundClamp(%v) = %d, want %d", x, got, want)
		}
	}
}
