//go:build amd64 && !purego

package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDotAVX512AgreesWithAVX2: the two float kernels Dot chooses between
// by CPU return the same bits, so scores (and the hits stored in golden
// files) do not depend on the CPU; both agree with the generic kernel
// within rounding.
func TestDotAVX512AgreesWithAVX2(t *testing.T) {
	if !hasAVX512 {
		t.Skip("this CPU has no AVX-512; Dot uses the AVX2 kernel")
	}
	r := rand.New(rand.NewPCG(5, 5))
	for _, n := range lengths() {
		if n == 0 {
			continue
		}
		for range 20 {
			off := r.IntN(4)
			a := randVec(r, n+off)[off:]
			b := randVec(r, n+off)[off:]
			var scale float64
			for i := range a {
				scale += math.Abs(float64(a[i]) * float64(b[i]))
			}
			x512 := float64(dotAVX512(&a[0], &b[0], n))
			x2 := float64(dotAVX2(&a[0], &b[0], n))
			if math.Float64bits(x512) != math.Float64bits(x2) || !closeRel(x512, float64(dotGeneric(a, b)), scale) {
				t.Fatalf("n=%d: AVX-512 %v, AVX2 %v, generic %v", n, x512, x2, dotGeneric(a, b))
			}
		}
	}
}
