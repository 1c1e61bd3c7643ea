package document

import (
	"fmt"
	"math"
)

// CheckVector validates an embedding: non-empty, of dimension dim when dim >
// 0, every component finite, and a float32 sum of squares that is neither 0
// nor +Inf (a vector like [1e20, 0, 0] overflows and could never be
// normalised). Stores never normalise silently, so this is the last gate.
func CheckVector(v []float32, dim int) error {
	if len(v) == 0 {
		return ErrEmptyVector
	}
	if dim > 0 && len(v) != dim {
		return fmt.Errorf("%w: got %d, want %d", ErrDimension, len(v), dim)
	}
	var sum float32
	for i, x := range v {
		if x != x || math.IsInf(float64(x), 0) {
			return fmt.Errorf("%w: component %d is %v", ErrNonFinite, i, x)
		}
		sum += x * x
	}
	if sum == 0 {
		return ErrZeroNorm
	}
	if math.IsInf(float64(sum), 1) {
		return ErrNormOverflow
	}
	return nil
}

// Cosine returns the cosine similarity of a and b in [-1, 1], accumulated in
// float64 so it is the reference the SIMD kernels are tested against. A
// zero-norm operand gives 0, never NaN; vectors of different lengths are an
// error.
func Cosine(a, b []float32) (float64, error) {
	if len(a) != len(b) {
		return 0, fmt.Errorf("cosine: %w (%d and %d)", ErrLengthMismatch, len(a), len(b))
	}
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0, nil
	}
	s := dot / (math.Sqrt(na) * math.Sqrt(nb))
	return max(-1, min(1, s)), nil
}

// CosineDistance is 1 − Cosine(a, b), in [0, 2].
func CosineDistance(a, b []float32) (float64, error) {
	s, err := Cosine(a, b)
	if err != nil {
		return 0, err
	}
	return 1 - s, nil
}

// SimilarityFromDistance converts a cosine distance back to a similarity.
func SimilarityFromDistance(d float64) float64 { return 1 - d }
