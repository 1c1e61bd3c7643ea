package hnsw

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

// writeIndex is x in its file format: two indexes that write the same bytes
// hold the same vectors, graph and quantizer.
func writeIndex(t *testing.T, x *Index) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := x.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestMappedVectorsBuildTheSameIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	// 64 dimensions × 6,000 rows is 1.5 MB: the file grows past its first
	// mapping, so rows written before a remap must read back after it.
	data := clustered(r, 6000, 64, 30, 0.1)
	cfg := Config{M: 8, EfConstruction: 32, Seed: 9}
	heap := build(t, data, cfg)

	mapped, err := New(64, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := mapped.MapVectors(t.TempDir()); errors.Is(err, errors.ErrUnsupported) {
		t.Skip("no mmap on this system: MapVectors refuses")
	} else if err != nil {
		t.Fatal(err)
	}
	mapped.Grow(100) // a reservation below the first mapping's size
	for _, v := range data {
		if _, err := mapped.Add(v); err != nil {
			t.Fatal(err)
		}
	}
	// Mapping after the build moves the rows that are there.
	moved := build(t, data, cfg)
	if err := moved.MapVectors(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if !mapped.VectorsMapped() || !moved.VectorsMapped() || heap.VectorsMapped() {
		t.Fatal("VectorsMapped disagrees with MapVectors")
	}
	want := writeIndex(t, heap)
	for name, x := range map[string]*Index{"mapped before adding": mapped, "mapped after adding": moved} {
		if !bytes.Equal(writeIndex(t, x), want) {
			t.Errorf("%s: index differs from the one built on the heap", name)
		}
		for _, q := range clustered(r, 20, 64, 30, 0.1) {
			a, _ := heap.Search(q, 10, SearchOptions{})
			b, err := x.Search(q, 10, SearchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(a) != len(b) {
				t.Fatalf("%s: %d results, heap index %d", name, len(b), len(a))
			}
			for i := range a {
				if a[i] != b[i] {
					t.Fatalf("%s: result %d is %v, heap index %v", name, i, b[i], a[i])
				}
			}
		}
	}
	// Deletes, compaction and the slots it frees work on mapped rows too.
	for _, x := range []*Index{heap, mapped} {
		for i := range 500 {
			if err := x.Delete(uint32(i * 3)); err != nil {
				t.Fatal(err)
			}
		}
		x.Compact()
		for _, v := range data[:200] {
			if _, err := x.Add(v); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !bytes.Equal(writeIndex(t, mapped), writeIndex(t, heap)) {
		t.Error("after deletes, compaction and re-adds the mapped index differs from the heap one")
	}
	// A read index maps too, and maps once.
	y, err := Read(bytes.NewReader(want))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := y.MapVectors(dir); err != nil {
		t.Fatal(err)
	}
	if err := y.MapVectors(dir); err != nil {
		t.Fatalf("mapping twice: %v", err)
	}
	if !bytes.Equal(writeIndex(t, y), want) {
		t.Error("a read index differs once mapped")
	}
	// And one read straight into a mapped file, through a reader that
	// does not tell its length and one that does.
	for _, r := range []io.Reader{struct{ io.Reader }{bytes.NewReader(want)}, bytes.NewReader(want)} {
		z, err := ReadMapped(r, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if !z.VectorsMapped() || !bytes.Equal(writeIndex(t, z), want) {
			t.Error("ReadMapped differs from the index it read")
		}
		if err := z.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, x := range []*Index{heap, mapped, moved, y} {
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestClosedIndexRefuses(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 10))
	data := clustered(r, 200, testDim, 4, 0.1)
	for _, mapped := range []bool{false, true} {
		x := build(t, data, Config{M: 8, Seed: 10})
		if mapped {
			if err := x.MapVectors(t.TempDir()); errors.Is(err, errors.ErrUnsupported) {
				continue
			} else if err != nil {
				t.Fatal(err)
			}
		}
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		if err := x.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		checks := map[string]error{
			"Search":          func() error { _, err := x.Search(data[0], 5, SearchOptions{}); return err }(),
			"Add":             func() error { _, err := x.Add(data[0]); return err }(),
			"Delete":          x.Delete(1),
			"WriteTo":         func() error { _, err := x.WriteTo(&bytes.Buffer{}); return err }(),
			"SetQuantization": x.SetQuantization(QuantizationNone),
			"MapVectors":      x.MapVectors(t.TempDir()),
		}
		for name, err := range checks {
			if !errors.Is(err, ErrClosed) {
				t.Errorf("mapped %v: %s after Close: %v, want ErrClosed", mapped, name, err)
			}
		}
		x.Grow(10)
		if n := x.Compact(); n != 0 {
			t.Errorf("Compact after Close unlinked %d", n)
		}
	}
}

func TestMapVectorsRefusesAMissingDirectory(t *testing.T) {
	x, err := New(8, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.MapVectors(t.TempDir() + "/missing"); err == nil {
		t.Fatal("MapVectors into a missing directory succeeded")
	}
	if x.VectorsMapped() {
		t.Fatal("a failed MapVectors left the index mapped")
	}
	if _, err := x.Add(make([]float32, 8)); err == nil {
		t.Fatal("adding a zero vector succeeded") // still usable, and still checking
	}
	v := []float32{1, 0, 0, 0, 0, 0, 0, 0}
	if _, err := x.Add(v); err != nil {
		t.Fatalf("the index is unusable after a failed MapVectors: %v", err)
	}
}
