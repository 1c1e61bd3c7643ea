package vec

import (
	"fmt"
	"math"
)

// Int8Quantizer maps float32 vectors to int8 codes in [-127, 127] through a
// per-dimension offset and scale: x_d ≈ offset_d + scale_d·c_d. Per-dimension
// ranges were chosen over one global range by measured recall: on 25k × 384
// clustered unit vectors, recall@10 with no re-scoring slack is 0.977 per
// dimension against 0.963 global (TestQuantizationModes logs both on a smaller
// set). Codes are padded to Stride, a multiple of 32 bytes, so the SIMD kernel
// never needs a scalar tail. A Quantizer is immutable and safe to share.
type Int8Quantizer struct {
	dim, stride   int
	offset, scale []float32
	inv           []float32 // 1/scale: Encode multiplies, a division costs more than the rest
}

// TrainInt8 fits a quantizer to the range of each column of data (row-major,
// dim columns). Values outside the trained range are clamped when encoded.
func TrainInt8(data []float32, dim int) (*Int8Quantizer, error) {
	return train(data, dim, true)
}

func train(data []float32, dim int, perDim bool) (*Int8Quantizer, error) {
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
		row := data[i*dim : (i+1)*dim]
		for d, x := range row {
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
	z := &Int8Quantizer{dim: dim, stride: Int8Stride(dim), offset: make([]float32, dim), scale: make([]float32, dim), inv: make([]float32, dim)}
	for d := range dim {
		sc := (hi[d] - lo[d]) / 254
		if !(sc > 0) || math.IsInf(float64(sc), 0) {
			sc = 1 // a constant (or empty) column: every code is 0
		}
		z.offset[d], z.scale[d] = (lo[d]+hi[d])/2, sc
		if n == 0 {
			z.offset[d] = 0
		}
	}
	z.invert()
	return z, nil
}

// NewInt8Quantizer rebuilds a quantizer from the parameters Params returned.
func NewInt8Quantizer(offset, scale []float32) (*Int8Quantizer, error) {
	if len(offset) == 0 || len(offset) != len(scale) {
		return nil, fmt.Errorf("vec: quantizer: %d offsets, %d scales", len(offset), len(scale))
	}
	for d := range offset {
		o, s := float64(offset[d]), float64(scale[d])
		if math.IsNaN(o) || math.IsInf(o, 0) || !(s > 0) || math.IsInf(s, 0) {
			return nil, fmt.Errorf("vec: quantizer: column %d has offset %g, scale %g", d, o, s)
		}
	}
	z := &Int8Quantizer{dim: len(offset), stride: Int8Stride(len(offset)),
		offset: append([]float32(nil), offset...), scale: append([]float32(nil), scale...), inv: make([]float32, len(offset))}
	z.invert()
	return z, nil
}

func (z *Int8Quantizer) invert() {
	for d, s := range z.scale {
		z.inv[d] = 1 / s
	}
}

// Int8Stride is the padded length of one code row for dim columns.
func Int8Stride(dim int) int { return (dim + 31) &^ 31 }

// Params returns the per-column offset and scale, for persisting. The slices
// are the quantizer's own: callers must not modify them.
func (z *Int8Quantizer) Params() (offset, scale []float32) { return z.offset, z.scale }

// Dim is the number of columns.
func (z *Int8Quantizer) Dim() int { return z.dim }

// Stride is the length of a code row, Dim padded to a multiple of 32.
func (z *Int8Quantizer) Stride() int { return z.stride }

// Encode writes v's codes into dst[:Stride], zero padding included.
func (z *Int8Quantizer) Encode(dst []int8, v []float32) {
	dst = dst[:z.stride]
	off, inv := z.offset[:z.dim], z.inv[:z.dim]
	for d, x := range v[:z.dim] {
		dst[d] = roundClamp((x - off[d]) * inv[d])
	}
	clear(dst[z.dim:])
}

// EncodeQuery maps q into the integer domain of the codes, writing dst[:Stride]:
// q·x ≈ Σ q_d·offset_d + t·Σ u_d·c_d with u_d = round(q_d·scale_d / t), so
// ranking rows by the integer dot Σ u_d·c_d (DotInt8) ranks them by the
// approximate float dot, the first sum being the same for every row.
func (z *Int8Quantizer) EncodeQuery(dst []int8, q []float32) {
	dst = dst[:z.stride]
	clear(dst)
	var amax float32
	for d, x := range q[:z.dim] {
		amax = max(amax, float32(math.Abs(float64(x*z.scale[d]))))
	}
	if amax == 0 {
		return
	}
	t := amax / 127
	for d, x := range q[:z.dim] {
		dst[d] = quantizeValue(x * z.scale[d] / t)
	}
}

// DotInt8 is the integer dot product of two code rows of equal length, the
// walk distance of a quantized graph search. Inputs must lie in [-127, 127],
// as Encode and EncodeQuery guarantee.
func DotInt8(a, b []int8) int32 {
	if len(a) == 0 {
		return 0
	}
	return dotInt8(a, b[:len(a)])
}

// Int8Matrix is a scalar-quantized copy of a float32 matrix, for exact scans
// that pick candidates on the codes and re-score them in float32.
type Int8Matrix struct {
	z     *Int8Quantizer
	n     int
	codes []int8
}

// QuantizeInt8 quantizes data (row-major, dim columns).
func QuantizeInt8(data []float32, dim int) (*Int8Matrix, error) {
	return quantize(data, dim, true)
}

func quantize(data []float32, dim int, perDim bool) (*Int8Matrix, error) {
	z, err := train(data, dim, perDim)
	if err != nil {
		return nil, err
	}
	n := len(data) / dim
	m := &Int8Matrix{z: z, n: n, codes: make([]int8, n*z.stride)}
	for i := range n {
		z.Encode(m.codes[i*z.stride:], data[i*dim:(i+1)*dim])
	}
	return m, nil
}

func quantizeValue(x float32) int8 {
	r := math.Round(float64(x))
	return int8(max(-127, min(127, r)))
}

// roundClamp is quantizeValue without the float64 round trip, for the
// encoding loop (a 100k × 512 index encodes 51 M values when it loads):
// x clamped to [-127, 127], plus 127.5 and truncated, is x rounded half up.
func roundClamp(x float32) int8 {
	x = max(-127, min(127, x))
	return int8(int32(x+127.5) - 127)
}

// Len is the number of rows.
func (m *Int8Matrix) Len() int { return m.n }

// Dim is the number of columns.
func (m *Int8Matrix) Dim() int { return m.z.dim }

// Bytes is the size of the codes, the memory the int8 scan streams through.
func (m *Int8Matrix) Bytes() int { return len(m.codes) }

// Scan returns the k rows with the highest dot product with q: the int8
// codes pick the opt.Rescore best candidates, which are then re-scored
// exactly against data, the float32 matrix m was built from. Scores are the
// float32 dot products and the order is Quarry's (score desc, id asc).
func (m *Int8Matrix) Scan(data []float32, q []float32, k int, opt ScanOptions) ([]Result, error) {
	n, err := checkMatrix(len(data), m.z.dim, len(q))
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
	u := make([]int8, m.z.stride)
	m.z.EncodeQuery(u, q)
	cands := parallelTopK(n, pool, opt.Threads, func(lo, hi int, t *TopK) {
		m.scanRange(u, lo, hi, opt, t)
	})
	t := NewTopK(k)
	for _, c := range cands {
		i := int(c.ID)
		t.Push(c.ID, dot(q, data[i*m.z.dim:(i+1)*m.z.dim]))
	}
	return t.Results(nil), nil
}

func (m *Int8Matrix) scanRange(u []int8, lo, hi int, opt ScanOptions, t *TopK) {
	if opt.Allow != nil {
		forEachAllowed(opt.Allow, lo, hi, func(i int) {
			t.Push(uint32(i), float32(dotInt8(u, m.codes[i*m.z.stride:(i+1)*m.z.stride])))
		})
		return
	}
	const block = 128
	var buf [block]int32
	for b := lo; b < hi; b += block {
		e := min(hi, b+block)
		out := buf[:e-b]
		dotInt8Rows(u, m.codes[b*m.z.stride:e*m.z.stride], m.z.stride, out)
		for j, s := range out {
			t.Push(uint32(b+j), float32(s))
		}
	}
}
