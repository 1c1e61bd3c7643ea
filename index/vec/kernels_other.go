//go:build !amd64 || purego

package vec

func dot(a, b []float32) float32 { return dotGeneric(a, b) }

func cosineParts(a, b []float32) (d, na, nb float32) { return cosineGeneric(a, b) }

func dotInt8(a, b []int8) int32 { return dotInt8Generic(a, b) }

func dotInt8Rows(q, rows []int8, stride int, out []int32) { dotInt8RowsGeneric(q, rows, stride, out) }

func prefetchRows(data []float32, dim int, ids []uint32) {}

func prefetchCodes(codes []int8, stride int, ids []uint32) {}
