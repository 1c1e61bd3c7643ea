package static

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"sort"
)

type tensorInfo struct {
	Dtype       string   `json:"dtype"`
	Shape       []int    `json:"shape"`
	DataOffsets [2]int64 `json:"data_offsets"`
}

// readEmbeddings reads the embedding table of a safetensors file: the
// tensor named "embeddings" (model2vec's name), else the only 2-D tensor.
func readEmbeddings(b []byte) (table []float32, rows, dim int, err error) {
	if len(b) < 8 {
		return nil, 0, 0, fmt.Errorf("not a safetensors file: %d bytes", len(b))
	}
	n := binary.LittleEndian.Uint64(b)
	if n > uint64(len(b)-8) {
		return nil, 0, 0, fmt.Errorf("not a safetensors file: header of %d bytes in a file of %d", n, len(b))
	}
	var header map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &header); err != nil {
		return nil, 0, 0, fmt.Errorf("safetensors header: %w", err)
	}
	data := b[8+n:]
	tensors := map[string]tensorInfo{}
	var names []string
	for name, raw := range header {
		if name == "__metadata__" {
			continue
		}
		var t tensorInfo
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, 0, 0, fmt.Errorf("safetensors tensor %s: %w", name, err)
		}
		tensors[name] = t
		if len(t.Shape) == 2 {
			names = append(names, name)
		}
	}
	t, ok := tensors["embeddings"]
	if !ok {
		if len(names) != 1 {
			sort.Strings(names)
			return nil, 0, 0, fmt.Errorf("no tensor named embeddings and %d 2-D tensors %v", len(names), names)
		}
		t = tensors[names[0]]
	}
	if len(t.Shape) != 2 || t.Shape[0] <= 0 || t.Shape[1] <= 0 {
		return nil, 0, 0, fmt.Errorf("embedding tensor of shape %v, want [vocabulary, dimension]", t.Shape)
	}
	rows, dim = t.Shape[0], t.Shape[1]
	count := rows * dim
	start, end := t.DataOffsets[0], t.DataOffsets[1]
	width := map[string]int64{"F32": 4, "F16": 2, "BF16": 2}[t.Dtype]
	if width == 0 {
		return nil, 0, 0, fmt.Errorf("embedding tensor of dtype %s (F32, F16 and BF16 are read)", t.Dtype)
	}
	if start < 0 || end > int64(len(data)) || end-start != int64(count)*width {
		return nil, 0, 0, fmt.Errorf("embedding tensor data [%d, %d) does not fit %v %s in %d bytes", start, end, t.Shape, t.Dtype, len(data))
	}
	raw := data[start:end]
	table = make([]float32, count)
	switch t.Dtype {
	case "F32":
		for i := range table {
			table[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	case "F16":
		for i := range table {
			table[i] = halfToFloat(binary.LittleEndian.Uint16(raw[2*i:]))
		}
	case "BF16":
		for i := range table {
			table[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(raw[2*i:])) << 16)
		}
	}
	return table, rows, dim, nil
}

// halfToFloat converts an IEEE 754 half-precision number.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal
		f := float32(frac) / 1024 * float32(math.Pow(2, -14))
		if sign != 0 {
			return -f
		}
		return f
	case exp == 0x1f:
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
}
