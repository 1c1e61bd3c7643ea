package vec

import (
	"fmt"
	"math"
)

// Int8Matrix is a scalar-quantized copy of a float32 matrix: each component
// becomes an int8 in [-127, 127] through a per-dimension offset and scale.
// Per-dimension ranges were chosen over one global range by measured recall:
// on 25k × 384 clustered unit vectors, recall@10 with no re-scoring slack is
// 0.977 per dimension against 0.963 global (TestQuantizationModes logs both
// on a smaller set). Rows are padded to a multiple of 32 bytes so the SIMD
// kernel never needs a scalar tail.
type Int8Matrix struct {
	dim, stride, n int
	codes          []int8
	offset, scale  []float32
}

// QuantizeInt8 quantizes data (row-major, dim columns).
func QuantizeInt8(data []float32, dim int) (*Int8Matrix, error) {
	return quantize(data, dim, true)
}

func quantize(data []float32, dim int, perDim bool) (*Int8Matrix, error) {
	if dim <= 0 || len(data)%dim != 0 {
		return nil, fmt.Errorf("vec: quantize: %d values do not form rows of %d", len(data), dim)
	}
	n := len(data) / dim
	lo := make([]float32, dim)
	hi := make([]float32, dim)
	for d := range dim {
		lo[d], hi[d] = float32(math.Inf(1)), float32(math.Inf(-1))
	}
	for i := range n {
		for d, x := range data[i*dim : (i+1)*dim] {
			lo[d] = min(lo[d], x)
			hi[d] = max(hi[d], x)
		}
	}
	if !perDim {
		gl, gh := lo[0], hi[0]
		for d := range dim {
			gl, gh = min(gl, lo[d]), max(gh, hi[d])
		}
		for d := range dim {
			lo[d], hi[d] = gl, gh
		}
	}
	m := &Int8Matrix{dim: dim, stride: (dim + 31) &^ 31, n: n,
		offset: make([]float32, dim), scale: make([]float32, dim)}
	for d := range dim {
		sc := (hi[d] - lo[d]) / 254
		if !(sc > 0) || math.IsInf(float64(sc), 0) {
			sc = 1 // a constant column: every code is 0
		}
		m.offset[d], m.scale[d] = (lo[d]+hi[d])/2, sc
	}
	m.codes = make([]int8, n*m.stride)
	for i := range n {
		row := m.codes[i*m.stride:]
		for d, x := range data[i*dim : (i+1)*dim] {
			row[d] = quantizeValue((x - m.offset[d]) / m.scale[d])
		}
	}
	return m, nil
}

func quantizeValue(x float32) int8 {
	r := math.Round(float64(x))
	return int8(max(-127, min(127, r)))
}

// Len is the number of rows.
func (m *Int8Matrix) Len() int { return m.n }

// Dim is the number of columns.
func (m *Int8Matrix) Dim() int { return m.dim }

// Bytes is the size of the codes, the memory the int8 scan streams through.
func (m *Int8Matrix) Bytes() int { return len(m.codes) }

// queryCodes maps q into the integer domain: q·x ≈ Σ q_d·offset_d +
// t·Σ u_d·c_d with u_d = round(q_d·scale_d / t), so ranking rows by the
// integer dot Σ u_d·c_d ranks them by the approximate float dot.
func (m *Int8Matrix) queryCodes(q []float32) []int8 {
	var amax float32
	for d, x := range q {
		amax = max(amax, float32(math.Abs(float64(x*m.scale[d]))))
	}
	u := make([]int8, m.stride)
	if amax == 0 {
		return u
	}
	t := amax / 127
	for d, x := range q {
		u[d] = quantizeValue(x * m.scale[d] / t)
	}
	return u
}

// Scan returns the k rows with the highest dot product with q: the int8
// codes pick the opt.Rescore best candidates, which are then re-scored
// exactly against data, the float32 matrix m was built from. Scores are the
// float32 dot products and the order is Quarry's (score desc, id asc).
func (m *Int8Matrix) Scan(data []float32, q []float32, k int, opt ScanOptions) ([]Result, error) {
	n, err := checkMatrix(len(data), m.dim, len(q))
	if err != nil {
		return nil, err
	}
	if n != m.n {
		return nil, fmt.Errorf("vec: int8 scan: matrix has %d rows, codes have %d", n, m.n)
	}
	if k <= 0 || n == 0 {
		return nil, nil
	}
	pool := opt.Rescore
	if pool <= 0 {
		pool = DefaultRescore(k)
	}
	pool = max(pool, k)
	u := m.queryCodes(q)
	cands := parallelTopK(n, pool, opt.Threads, func(lo, hi int, t *TopK) {
		m.scanRange(u, lo, hi, opt, t)
	})
	t := NewTopK(k)
	for _, c := range cands {
		i := int(c.ID)
		t.Push(c.ID, dot(q, data[i*m.dim:(i+1)*m.dim]))
	}
	return t.Results(nil), nil
}

func (m *Int8Matrix) scanRange(u []int8, lo, hi int, opt ScanOptions, t *TopK) {
	if opt.Allow != nil {
		forEachAllowed(opt.Allow, lo, hi, func(i int) {
			t.Push(uint32(i), float32(dotInt8(u, m.codes[i*m.stride:(i+1)*m.stride])))
		})
		return
	}
	const block = 128
	var buf [block]int32
	for b := lo; b < hi; b += block {
		e := min(hi, b+block)
		out := buf[:e-b]
		dotInt8Rows(u, m.codes[b*m.stride:e*m.stride], m.stride, out)
		for j, s := range out {
			t.Push(uint32(b+j), float32(s))
		}
	}
}
