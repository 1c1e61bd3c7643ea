//go:build amd64 && !purego

package vec

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// hasAVX2FMA and hasAVX512 are the read-only results of CPU feature
// detection (the latter includes the system's support for the registers),
// fixed at start-up; they are the only package-level state.
var (
	hasAVX2FMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA
	hasAVX512  = hasAVX2FMA && cpu.X86.HasAVX512F
)

// Implemented in kernels_amd64.s.
//
//go:noescape
func dotAVX2(a, b *float32, n int) float32

//go:noescape
func dotAVX512(a, b *float32, n int) float32

//go:noescape
func cosineAVX2(a, b *float32, n int) (d, na, nb float32)

// dotInt8AVX2 needs n to be a multiple of 32.
//
//go:noescape
func dotInt8AVX2(a, b *int8, n int) int32

// dotInt8RowsAVX2 writes q·row_i into out[i] for rows of stride bytes; stride
// is a multiple of 32.
//
//go:noescape
func dotInt8RowsAVX2(q, rows *int8, stride, nrows int, out *int32)

func dot(a, b []float32) float32 {
	if hasAVX512 {
		return dotAVX512(&a[0], &b[0], len(a))
	}
	if hasAVX2FMA {
		return dotAVX2(&a[0], &b[0], len(a))
	}
	return dotGeneric(a, b)
}

func cosineParts(a, b []float32) (d, na, nb float32) {
	if hasAVX2FMA {
		return cosineAVX2(&a[0], &b[0], len(a))
	}
	return cosineGeneric(a, b)
}

func dotInt8(a, b []int8) int32 {
	if hasAVX2FMA {
		n := len(a) &^ 31
		var s int32
		if n > 0 {
			s = dotInt8AVX2(&a[0], &b[0], n)
		}
		if n < len(a) {
			s += dotInt8Generic(a[n:], b[n:len(a)])
		}
		return s
	}
	return dotInt8Generic(a, b)
}

// dotInt8Rows scores len(out) rows of stride bytes against q (len stride).
func dotInt8Rows(q, rows []int8, stride int, out []int32) {
	if len(out) == 0 {
		return
	}
	if hasAVX2FMA && stride%32 == 0 {
		_ = rows[len(out)*stride-1]
		dotInt8RowsAVX2(&q[0], &rows[0], stride, len(out), &out[0])
		return
	}
	dotInt8RowsGeneric(q, rows, stride, out)
}

// prefetchRowsAVX2 prefetches every cache line of each row. Whole rows,
// not only their first lines, measured faster for both walks on 100k × 384
// (BenchmarkSearch100k in index/hnsw: the float32 walk at ef 64 from 370–410
// to 270–280 µs, the int8 walk from 205–225 to 150–170 µs): the hardware
// prefetcher does not follow a row far enough before the kernel reaches it.
//
//go:noescape
func prefetchRowsAVX2(base unsafe.Pointer, ids *uint32, n, rowBytes int)

func prefetchRows(data []float32, dim int, ids []uint32) {
	if len(ids) > 0 && len(data) > 0 {
		prefetchRowsAVX2(unsafe.Pointer(&data[0]), &ids[0], len(ids), 4*dim)
	}
}

func prefetchCodes(codes []int8, stride int, ids []uint32) {
	if len(ids) > 0 && len(codes) > 0 {
		prefetchRowsAVX2(unsafe.Pointer(&codes[0]), &ids[0], len(ids), stride)
	}
}
