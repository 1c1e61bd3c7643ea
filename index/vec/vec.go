// Package vec holds the numeric core of vector search: float32 dot and cosine
// kernels (AVX2+FMA assembly on amd64, a pure-Go twin elsewhere or with the
// purego build tag), L2 norms, int8 scalar quantization, a bounded top-k heap
// and an exact, parallel scan over a flat row-major matrix.
//
// Every ordering follows Quarry's rule: score descending, then id ascending.
package vec

import (
	"errors"
	"math"
)

// ErrZeroNorm is returned when a vector of norm 0 (or a non-finite norm)
// cannot be normalised.
var ErrZeroNorm = errors.New("vec: vector has zero or non-finite norm")

// Dot returns the dot product of a and b over min(len(a), len(b)) components.
// Callers that care check lengths first; the kernel does not, to stay cheap.
func Dot(a, b []float32) float32 {
	n := min(len(a), len(b))
	if n == 0 {
		return 0
	}
	return dot(a[:n], b[:n])
}

// Cosine returns the cosine similarity of a and b, or 0 when either has norm
// 0. For vectors already normalised, Dot is the same number and cheaper.
func Cosine(a, b []float32) float32 {
	n := min(len(a), len(b))
	if n == 0 {
		return 0
	}
	d, na, nb := cosineParts(a[:n], b[:n])
	if na == 0 || nb == 0 {
		return 0
	}
	s := float32(float64(d) / math.Sqrt(float64(na)*float64(nb)))
	return max(-1, min(1, s))
}

// Norm returns the L2 norm of v.
func Norm(v []float32) float32 {
	if len(v) == 0 {
		return 0
	}
	return float32(math.Sqrt(float64(dot(v, v))))
}

// Normalize scales v in place to unit L2 norm. A zero or non-finite norm is
// ErrZeroNorm and leaves v untouched.
func Normalize(v []float32) error {
	n, err := normOf(v)
	if err != nil {
		return err
	}
	inv := float32(1 / n)
	for i := range v {
		v[i] *= inv
	}
	return nil
}

// CheckNormalize reports the error Normalize would return for v, without
// changing it: callers that must refuse a batch before changing anything
// check every vector first.
func CheckNormalize(v []float32) error {
	_, err := normOf(v)
	return err
}

// normOf is v's norm, or ErrZeroNorm when v has no direction (zero,
// infinite or NaN).
func normOf(v []float32) (float64, error) {
	n := float64(Norm(v))
	if n == 0 || math.IsInf(n, 0) || math.IsNaN(n) {
		return 0, ErrZeroNorm
	}
	return n, nil
}

// Normalized returns a unit-norm copy of v, leaving v untouched.
func Normalized(v []float32) ([]float32, error) {
	c := append([]float32(nil), v...)
	if err := Normalize(c); err != nil {
		return nil, err
	}
	return c, nil
}

// dotGeneric is the pure-Go kernel: four accumulators so the compiler can
// overlap the multiplies; it is the twin the assembly is tested against.
func dotGeneric(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// cosineGeneric returns a·b, a·a and b·b in one pass.
func cosineGeneric(a, b []float32) (d, na, nb float32) {
	b = b[:len(a)]
	for i, x := range a {
		y := b[i]
		d += x * y
		na += x * x
		nb += y * y
	}
	return d, na, nb
}

// dotInt8Generic is the pure-Go int8 kernel. Inputs must lie in [-127, 127]
// (the quantizer never emits -128) so the SIMD twin cannot saturate.
func dotInt8Generic(a, b []int8) int32 {
	b = b[:len(a)]
	var s0, s1 int32
	i := 0
	for ; i+2 <= len(a); i += 2 {
		s0 += int32(a[i]) * int32(b[i])
		s1 += int32(a[i+1]) * int32(b[i+1])
	}
	for ; i < len(a); i++ {
		s0 += int32(a[i]) * int32(b[i])
	}
	return s0 + s1
}

// dotInt8RowsGeneric scores len(out) consecutive rows of stride bytes.
func dotInt8RowsGeneric(q, rows []int8, stride int, out []int32) {
	for i := range out {
		out[i] = dotInt8Generic(q[:stride], rows[i*stride:(i+1)*stride])
	}
}

// PrefetchRows hints the CPU to start loading every cache line of the
// given rows of data (row-major, dim columns), so a graph search can overlap
// the memory latency of a whole neighbour list instead of paying it row by
// row. It never faults and never changes a result; ids must be rows of data.
func PrefetchRows(data []float32, dim int, ids []uint32) { prefetchRows(data, dim, ids) }

// PrefetchCodes is PrefetchRows for int8 code rows of stride bytes.
func PrefetchCodes(codes []int8, stride int, ids []uint32) { prefetchCodes(codes, stride, ids) }
