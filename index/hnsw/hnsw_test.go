package hnsw

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/quarry-rag/quarry/index/bitset"
	"github.com/quarry-rag/quarry/index/vec"
)

const testDim = 32

// clustered returns n unit vectors around c unit centres (σ per coordinate).
func clustered(r *rand.Rand, n, dim, c int, sigma float64) [][]float32 {
	centres := make([][]float32, c)
	for i := range centres {
		centres[i] = make([]float32, dim)
		for d := range dim {
			centres[i][d] = float32(r.NormFloat64())
		}
		_ = vec.Normalize(centres[i])
	}
	out := make([][]float32, n)
	for i := range out {
		ctr := centres[r.IntN(c)]
		v := make([]float32, dim)
		for d := range v {
			v[d] = ctr[d] + float32(sigma*r.NormFloat64())
		}
		_ = vec.Normalize(v)
		out[i] = v
	}
	return out
}

// build inserts data in order; tests default to EfConstruction 64 to stay
// quick under the race detector.
func build(t testing.TB, data [][]float32, cfg Config) *Index {
	t.Helper()
	if cfg.EfConstruction == 0 {
		cfg.EfConstruction = 64
	}
	x, err := New(len(data[0]), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range data {
		id, err := x.Add(v)
		if err != nil {
			t.Fatal(err)
		}
		if id != uint32(i) {
			t.Fatalf("Add #%d returned id %d", i, id)
		}
	}
	return x
}

// truth is the exact top-k among ids accepted by ok.
func truth(data [][]float32, q []float32, k int, ok func(uint32) bool) []vec.Result {
	t := vec.NewTopK(k)
	for i, v := range data {
		if ok == nil || ok(uint32(i)) {
			t.Push(uint32(i), vec.Dot(q, v))
		}
	}
	return t.Results(nil)
}

func recall(got, want []vec.Result) float64 {
	ids := map[uint32]bool{}
	for _, w := range want {
		ids[w.ID] = true
	}
	hit := 0
	for _, g := range got {
		if ids[g.ID] {
			hit++
		}
	}
	return float64(hit) / float64(max(1, len(want)))
}

func checkOrder(t *testing.T, rs []vec.Result) {
	t.Helper()
	for i := 1; i < len(rs); i++ {
		if rs[i].Before(rs[i-1]) {
			t.Fatalf("results out of order at %d: %v", i, rs)
		}
	}
}

func TestRecallUnfiltered(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	data := clustered(r, 3000, testDim, 30, 0.1)
	x := build(t, data, Config{Seed: 1})
	queries := clustered(r, 100, testDim, 30, 0.1)
	var sum float64
	for _, q := range queries {
		got, err := x.Search(q, 10, SearchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkOrder(t, got)
		sum += recall(got, truth(data, q, 10, nil))
	}
	if rec := sum / float64(len(queries)); rec < 0.95 {
		t.Fatalf("recall@10 = %.3f, want ≥ 0.95", rec)
	}
	if x.Len() != 3000 {
		t.Fatalf("Len = %d", x.Len())
	}
}

func TestDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	data := clustered(r, 500, testDim, 10, 0.1)
	var a, b bytes.Buffer
	if _, err := build(t, data, Config{Seed: 7}).WriteTo(&a); err != nil {
		t.Fatal(err)
	}
	if _, err := build(t, data, Config{Seed: 7}).WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two builds with the same seed differ")
	}
}

func TestFilteredRecall(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	const n = 3000
	data := clustered(r, n, testDim, 30, 0.1)
	x := build(t, data, Config{Seed: 3})
	queries := clustered(r, 40, testDim, 30, 0.1)
	for _, sel := range []float64{0.5, 0.1, 0.01, 0.001} {
		allow := bitset.New(n)
		for i := range n {
			if r.Float64() < sel {
				allow.Add(uint32(i))
			}
		}
		// Search picks exact or graph by size; graphSearch forces the walk
		// so both paths are held to the floor.
		for _, forceGraph := range []bool{false, true} {
			if forceGraph && sel < 0.05 {
				continue // too few allowed nodes for a walk to be sensible
			}
			var sum float64
			for _, q := range queries {
				var got []vec.Result
				if forceGraph {
					s := newSearcher(testDim, vec.Int8Stride(testDim))
					copy(s.q, q)
					_ = vec.Normalize(s.q)
					got = x.graphSearch(s, 10, filterEf(64, allow.Count(), n), allow)
				} else {
					var err error
					got, err = x.Search(q, 10, SearchOptions{Allow: allow})
					if err != nil {
						t.Fatal(err)
					}
				}
				checkOrder(t, got)
				for _, g := range got {
					if !allow.Contains(g.ID) {
						t.Fatalf("selectivity %v: result %d not allowed", sel, g.ID)
					}
				}
				want := truth(data, q, 10, allow.Contains)
				if len(got) != len(want) {
					t.Fatalf("selectivity %v: %d results, want %d", sel, len(got), len(want))
				}
				sum += recall(got, want)
			}
			if rec := sum / float64(len(queries)); rec < 0.95 {
				t.Fatalf("selectivity %v graph=%v: recall@10 = %.3f, want ≥ 0.95", sel, forceGraph, rec)
			}
		}
	}
}

func TestDeleteAndCompact(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	const n = 2000
	data := clustered(r, n, testDim, 20, 0.1)
	x := build(t, data, Config{Seed: 4})
	gone := map[uint32]bool{}
	for i := range n {
		if r.IntN(3) == 0 || i == int(x.entry) {
			gone[uint32(i)] = true
			if err := x.Delete(uint32(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := x.Delete(0); !errors.Is(err, ErrNotFound) && !gone[0] {
		t.Fatalf("second delete: %v", err)
	}
	alive := func(id uint32) bool { return !gone[id] }
	queries := clustered(r, 40, testDim, 20, 0.1)
	check := func(stage string) {
		var sum float64
		for _, q := range queries {
			got, err := x.Search(q, 10, SearchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range got {
				if gone[g.ID] {
					t.Fatalf("%s: deleted node %d returned", stage, g.ID)
				}
			}
			sum += recall(got, truth(data, q, 10, alive))
		}
		if rec := sum / float64(len(queries)); rec < 0.95 {
			t.Fatalf("%s: recall@10 = %.3f, want ≥ 0.95", stage, rec)
		}
	}
	check("tombstoned")
	if got := x.Compact(); got != len(gone) {
		t.Fatalf("Compact unlinked %d, want %d", got, len(gone))
	}
	for id := range uint32(n) {
		for lc := 0; lc <= int(x.levels[id]); lc++ {
			blk := x.block(id, lc)
			for _, nb := range blk[1 : 1+blk[0]] {
				if gone[nb] {
					t.Fatalf("node %d still links to deleted %d", id, nb)
				}
			}
		}
	}
	check("compacted")
	// Freed ids are reused.
	id, err := x.Add(data[0])
	if err != nil {
		t.Fatal(err)
	}
	if !gone[id] {
		t.Fatalf("Add after Compact took fresh id %d, want a reused one", id)
	}
	got, _ := x.Search(data[0], 1, SearchOptions{})
	if len(got) != 1 || got[0].Score < 0.9999 {
		t.Fatalf("re-added vector not found: %v", got)
	}
	if x.Len() != n-len(gone)+1 {
		t.Fatalf("Len = %d", x.Len())
	}
}

func TestDeleteEverything(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	data := clustered(r, 50, testDim, 3, 0.1)
	x := build(t, data, Config{})
	for i := range data {
		_ = x.Delete(uint32(i))
	}
	if got, _ := x.Search(data[0], 5, SearchOptions{}); len(got) != 0 {
		t.Fatalf("search of an all-deleted index returned %v", got)
	}
	x.Compact()
	if got, _ := x.Search(data[0], 5, SearchOptions{}); len(got) != 0 {
		t.Fatalf("search of an emptied index returned %v", got)
	}
	if _, err := x.Add(data[1]); err != nil {
		t.Fatal(err)
	}
	if got, _ := x.Search(data[1], 5, SearchOptions{}); len(got) != 1 {
		t.Fatalf("after re-add: %v", got)
	}
}

func TestAddAfterDeletingEverything(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 10))
	data := clustered(r, 40, testDim, 3, 0.1)
	x := build(t, data[:30], Config{})
	for i := range 30 {
		_ = x.Delete(uint32(i))
	}
	for _, v := range data[30:] { // no Compact in between
		if _, err := x.Add(v); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := x.Search(data[35], 10, SearchOptions{})
	if len(got) != 10 || got[0].ID != 35 {
		t.Fatalf("nodes added after deleting everything are unreachable: %v", got)
	}
	x.Compact()
	if got, _ := x.Search(data[35], 10, SearchOptions{}); len(got) != 10 || got[0].ID != 35 {
		t.Fatalf("after Compact: %v", got)
	}
}

func TestSaveLoad(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	data := clustered(r, 1500, testDim, 15, 0.1)
	x := build(t, data, Config{M: 8, EfConstruction: 100, Seed: 6})
	for i := range 100 {
		_ = x.Delete(uint32(i * 7))
	}
	x.Compact()
	_ = x.Delete(3)
	var buf bytes.Buffer
	if _, err := x.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	y, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if y.Config() != x.Config() || y.Len() != x.Len() {
		t.Fatalf("loaded config %+v len %d, want %+v len %d", y.Config(), y.Len(), x.Config(), x.Len())
	}
	for _, q := range clustered(r, 20, testDim, 15, 0.1) {
		a, _ := x.Search(q, 10, SearchOptions{})
		b, _ := y.Search(q, 10, SearchOptions{})
		if len(a) != len(b) {
			t.Fatalf("loaded index returns %d results, original %d", len(b), len(a))
		}
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("loaded index differs at %d: %v vs %v", i, b[i], a[i])
			}
		}
	}
	// Both continue identically: same generator state, same free list.
	v := data[1]
	ia, _ := x.Add(v)
	ib, _ := y.Add(v)
	var wa, wb bytes.Buffer
	_, _ = x.WriteTo(&wa)
	_, _ = y.WriteTo(&wb)
	if ia != ib || !bytes.Equal(wa.Bytes(), wb.Bytes()) {
		t.Fatal("original and loaded index diverge after the same Add")
	}
}

func TestReadCorrupt(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	x := build(t, clustered(r, 200, 8, 4, 0.1), Config{M: 4, Seed: 7})
	var buf bytes.Buffer
	if _, err := x.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	dir := t.TempDir()
	readers := map[string]func(io.Reader) (*Index, error){
		"Read":       Read,
		"ReadMapped": func(r io.Reader) (*Index, error) { return ReadMapped(r, dir) },
	}
	for name, read := range readers {
		for cut := 0; cut < len(good); cut += 1 + cut/8 {
			if _, err := read(bytes.NewReader(good[:cut])); err == nil {
				t.Fatalf("%s: file truncated to %d bytes read without error", name, cut)
			}
		}
		for range 300 {
			bad := append([]byte(nil), good...)
			i := r.IntN(len(bad))
			bad[i] ^= byte(1 + r.IntN(255))
			if _, err := read(bytes.NewReader(bad)); err == nil {
				t.Fatalf("%s: byte %d flipped: read without error", name, i)
			}
		}
	}
	if _, err := Read(bytes.NewReader([]byte("not an index at all"))); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("garbage: %v, want ErrCorrupt", err)
	}
}

func TestValidateRejectsForgedLinks(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	x := build(t, clustered(r, 100, 8, 4, 0.1), Config{M: 4})
	x.links0[1] = 5000 // a neighbour beyond the node count
	var buf bytes.Buffer
	if _, err := x.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(&buf); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("forged link with a valid checksum: %v, want ErrCorrupt", err)
	}
}

func TestConcurrentSearchWhileAdding(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	data := clustered(r, 700, testDim, 12, 0.1)
	x := build(t, data[:200], Config{M: 8, EfConstruction: 32})
	queries := clustered(r, 20, testDim, 12, 0.1)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 60 {
				if _, err := x.Search(queries[(g+i)%len(queries)], 5, SearchOptions{Ef: 16}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i, v := range data[200:] {
		if _, err := x.Add(v); err != nil {
			t.Fatal(err)
		}
		if i%50 == 0 {
			_ = x.Delete(uint32(i))
		}
		if i == 300 {
			x.Compact()
		}
	}
	wg.Wait()
}

func TestErrors(t *testing.T) {
	if _, err := New(0, Config{}); err == nil {
		t.Fatal("dimension 0 accepted")
	}
	if _, err := New(4, Config{M: 1}); err == nil {
		t.Fatal("M = 1 accepted")
	}
	x, _ := New(4, Config{})
	if _, err := x.Add([]float32{1, 2}); !errors.Is(err, ErrDimension) {
		t.Fatalf("short vector: %v", err)
	}
	if _, err := x.Add(make([]float32, 4)); !errors.Is(err, vec.ErrZeroNorm) {
		t.Fatalf("zero vector: %v", err)
	}
	if got, err := x.Search([]float32{1, 0, 0, 0}, 3, SearchOptions{}); err != nil || got != nil {
		t.Fatalf("empty index: %v %v", got, err)
	}
	if _, err := x.Search([]float32{1}, 3, SearchOptions{}); !errors.Is(err, ErrDimension) {
		t.Fatalf("short query: %v", err)
	}
	if err := x.Delete(9); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete unknown: %v", err)
	}
}
