package hnsw

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quarry-rag/quarry/index/vec"
)

// TestInt8WalkRecall walks one graph both ways: the int8 walk with float32
// re-scoring must find what the float32 walk finds.
func TestInt8WalkRecall(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 11))
	const dim = 64
	data := clustered(r, 4000, dim, 40, 0.1)
	queries := clustered(r, 100, dim, 40, 0.1)
	x := build(t, data, Config{Seed: 11})
	if x.Config().Quantization != QuantizationInt8 || x.z == nil {
		t.Fatalf("default index: quantization %v, quantizer fitted %v", x.Config().Quantization, x.z != nil)
	}
	measure := func() float64 {
		var sum float64
		for _, q := range queries {
			got, err := x.Search(q, 10, SearchOptions{Ef: 64})
			if err != nil {
				t.Fatal(err)
			}
			checkOrder(t, got)
			for _, g := range got {
				// Scores are float32 dot products, never the codes' estimate.
				if want := vec.Dot(mustNorm(t, q), x.vector(g.ID)); g.Score != want {
					t.Fatalf("id %d scored %v, float32 dot %v", g.ID, g.Score, want)
				}
			}
			sum += recall(got, truth(data, q, 10, nil))
		}
		return sum / float64(len(queries))
	}
	int8Rec := measure()
	if err := x.SetQuantization(QuantizationNone); err != nil {
		t.Fatal(err)
	}
	if x.z != nil || x.codes != nil {
		t.Fatal("QuantizationNone kept the codes")
	}
	floatRec := measure()
	t.Logf("recall@10 at ef 64: int8 walk %.3f, float32 walk %.3f", int8Rec, floatRec)
	if int8Rec < floatRec-0.02 {
		t.Fatalf("int8 walk recall %.3f, float32 walk %.3f", int8Rec, floatRec)
	}
}

func mustNorm(t *testing.T, q []float32) []float32 {
	t.Helper()
	n, err := vec.Normalized(q)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestQuantizerFollowsDoubling: the quantizer is fitted at quantTrainMin
// nodes and refitted to every vector each time the node count doubles.
func TestQuantizerFollowsDoubling(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 12))
	data := clustered(r, 2*quantTrainMin+5, 16, 8, 0.1)
	x, err := New(16, Config{Seed: 12, EfConstruction: 32})
	if err != nil {
		t.Fatal(err)
	}
	fitted := func(n int) []float32 {
		z, err := vec.TrainInt8(x.vecs[:n*x.dim], x.dim)
		if err != nil {
			t.Fatal(err)
		}
		_, sc := z.Params()
		return sc
	}
	var at1024 []float32
	for i, v := range data {
		if _, err := x.Add(v); err != nil {
			t.Fatal(err)
		}
		switch n := i + 1; {
		case n < quantTrainMin:
			if x.z != nil {
				t.Fatalf("quantizer fitted at %d nodes", n)
			}
		case n == quantTrainMin:
			_, at1024 = x.z.Params()
			if !slices.Equal(at1024, fitted(n)) {
				t.Fatal("first fit is not over every vector")
			}
		case n < 2*quantTrainMin:
			if _, sc := x.z.Params(); !slices.Equal(sc, at1024) {
				t.Fatalf("quantizer refitted at %d nodes", n)
			}
		case n == 2*quantTrainMin:
			if _, sc := x.z.Params(); !slices.Equal(sc, fitted(n)) {
				t.Fatal("refit at the doubling is not over every vector")
			}
		}
	}
	// Every slot's codes are its vector's under the current quantizer.
	want := make([]int8, x.stride)
	for id := range uint32(x.n) {
		x.z.Encode(want, x.vector(id))
		if !slices.Equal(x.code(id), want) {
			t.Fatalf("node %d has stale codes", id)
		}
	}
}

// version1 rewrites an index file as the version 1 format had it: no
// quantization fields.
func version1(t *testing.T, x *Index) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := x.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	tail := 4 + 4 + 4 // quantization, quantizer columns, checksum
	if x.z != nil {
		tail += 8 * x.dim
	}
	body := slices.Clone(b[:len(b)-tail])
	binary.LittleEndian.PutUint32(body[len(magic):], 1)
	return binary.LittleEndian.AppendUint32(body, crc32.Checksum(body, castagnoli))
}

func TestReadVersion1(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 13))
	data := clustered(r, 1500, testDim, 15, 0.1)
	for _, q := range []Quantization{QuantizationInt8, QuantizationNone} {
		x := build(t, data, Config{Seed: 13, Quantization: q})
		y, err := Read(bytes.NewReader(version1(t, x)))
		if err != nil {
			t.Fatalf("%v: %v", q, err)
		}
		// Version 1 predates quantization: it loads with the default,
		// fitted to every vector.
		if y.Config().Quantization != QuantizationInt8 || y.z == nil {
			t.Fatalf("%v: loaded as %v, quantizer fitted %v", q, y.Config().Quantization, y.z != nil)
		}
		got, err := y.Search(data[0], 5, SearchOptions{})
		if err != nil || len(got) != 5 || got[0].ID != 0 {
			t.Fatalf("%v: search after loading version 1: %v %v", q, got, err)
		}
	}
}

func TestSaveLoadQuantization(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 14))
	data := clustered(r, 1100, testDim, 10, 0.1)
	for _, q := range []Quantization{QuantizationInt8, QuantizationNone} {
		x := build(t, data, Config{Seed: 14, Quantization: q})
		var buf bytes.Buffer
		if _, err := x.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		y, err := Read(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		if y.Config() != x.Config() || (y.z == nil) != (x.z == nil) || !slices.Equal(y.codes, x.codes) {
			t.Fatalf("%v: loaded %+v (codes %d), saved %+v (codes %d)", q, y.Config(), len(y.codes), x.Config(), len(x.codes))
		}
	}
}

// TestReadRejectsBadQuantizer: forged quantization fields are corrupt files,
// with a valid checksum or not.
func TestReadRejectsBadQuantizer(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 15))
	x := build(t, clustered(r, 1100, 8, 4, 0.1), Config{Seed: 15})
	var buf bytes.Buffer
	if _, err := x.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	// Trailer: quantization u32, columns u32, 8 offsets, 8 scales, checksum.
	qAt := len(good) - 4 - 8*4*2 - 4 - 4
	reseal := func(b []byte) []byte {
		body := b[:len(b)-4]
		return binary.LittleEndian.AppendUint32(slices.Clone(body), crc32.Checksum(body, castagnoli))
	}
	cases := map[string]func(b []byte){
		"unknown quantization": func(b []byte) { binary.LittleEndian.PutUint32(b[qAt:], 9) },
		"quantizer on an unquantized index": func(b []byte) {
			binary.LittleEndian.PutUint32(b[qAt:], uint32(QuantizationNone))
		},
		"columns differ from dimension": func(b []byte) { binary.LittleEndian.PutUint32(b[qAt+4:], 7) },
		"NaN scale": func(b []byte) {
			binary.LittleEndian.PutUint32(b[qAt+8+8*4:], math.Float32bits(float32(math.NaN())))
		},
		"zero scale": func(b []byte) { binary.LittleEndian.PutUint32(b[qAt+8+8*4+4:], 0) },
	}
	for name, mutate := range cases {
		b := slices.Clone(good)
		mutate(b)
		if _, err := Read(bytes.NewReader(reseal(b))); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err = %v, want ErrCorrupt", name, err)
		}
	}
}

func TestUnknownQuantization(t *testing.T) {
	if _, err := New(8, Config{Quantization: 9}); err == nil {
		t.Fatal("New accepted quantization 9")
	}
	x, _ := New(8, Config{})
	if err := x.SetQuantization(9); err == nil {
		t.Fatal("SetQuantization accepted 9")
	}
}
