package hnsw

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/quarry-rag/quarry/index/vec"
)

func TestAddBatchSmallIsAdd(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 11))
	data := clustered(r, 1500, testDim, 20, 0.1)
	cfg := Config{M: 8, EfConstruction: 48, Seed: 11}
	one := build(t, data, cfg)
	batched, err := New(testDim, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Batches under minBatch, crossing the quantizer's first fit.
	for lo := 0; lo < len(data); lo += minBatch - 1 {
		ids, err := batched.AddBatch(data[lo:min(lo+minBatch-1, len(data))], 4)
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range ids {
			if id != uint32(lo+i) {
				t.Fatalf("vector %d got id %d", lo+i, id)
			}
		}
	}
	if !bytes.Equal(writeIndex(t, one), writeIndex(t, batched)) {
		t.Fatal("small batches built a different index than Add")
	}
}

func TestAddBatchIsReproducible(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 14))
	data := clustered(r, 3000, testDim, 20, 0.1)
	cfg := Config{M: 8, EfConstruction: 48, Seed: 14}
	var want []byte
	for _, threads := range []int{1, 2, 4, 7, 4} {
		x, err := New(testDim, cfg)
		if err != nil {
			t.Fatal(err)
		}
		// Two batches: the second, past a chunk, searches what the first built.
		for _, b := range [][][]float32{data[:1300], data[1300:]} {
			if _, err := x.AddBatch(b, threads); err != nil {
				t.Fatal(err)
			}
		}
		got := writeIndex(t, x)
		if want == nil {
			want = got
		} else if !bytes.Equal(got, want) {
			t.Fatalf("%d goroutines built a different index than 1", threads)
		}
	}
}

func TestAddBatchParallel(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 12))
	data := clustered(r, 4000, testDim, 30, 0.1)
	queries := clustered(r, 100, testDim, 30, 0.1)
	cfg := Config{M: 8, EfConstruction: 64, Seed: 12}
	seq := build(t, data, cfg)
	par, err := New(testDim, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A first batch into the empty graph, then batches beside searches.
	if _, err := par.AddBatch(data[:1000], 4); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := par.Search(queries[i%len(queries)], 5, SearchOptions{}); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for lo := 1000; lo < len(data); lo += 1000 {
		ids, err := par.AddBatch(data[lo:lo+1000], 4)
		if err != nil {
			t.Fatal(err)
		}
		if ids[0] != uint32(lo) || ids[999] != uint32(lo+999) {
			t.Fatalf("batch at %d got ids %d…%d", lo, ids[0], ids[999])
		}
	}
	close(stop)
	wg.Wait()
	if par.Len() != len(data) {
		t.Fatalf("Len %d, want %d", par.Len(), len(data))
	}
	// The graph is sound (Read checks every link) and as good as the
	// sequential one.
	if _, err := Read(bytes.NewReader(writeIndex(t, par))); err != nil {
		t.Fatalf("the parallel graph does not read back: %v", err)
	}
	var rs, rp float64
	for _, q := range queries {
		want := truth(data, q, 10, nil)
		a, _ := seq.Search(q, 10, SearchOptions{Ef: 200})
		b, _ := par.Search(q, 10, SearchOptions{Ef: 200})
		rs += recall(a, want)
		rp += recall(b, want)
	}
	rs, rp = rs/float64(len(queries)), rp/float64(len(queries))
	t.Logf("recall@10 %.3f built in parallel, %.3f in turn", rp, rs)
	if rp < 0.9 || rp < rs-0.02 {
		t.Fatalf("recall@10 %.3f built in parallel, %.3f in turn", rp, rs)
	}
	// Every vector finds itself as often as in the sequential graph. A
	// node that other inserts could reach before its lower layers were
	// linked left its followers there without neighbours: 8–13 misses
	// here against 1.
	misses := func(x *Index) int {
		n := 0
		for _, v := range data {
			if res, _ := x.Search(v, 1, SearchOptions{}); len(res) == 0 || res[0].Score < 0.9999 {
				n++
			}
		}
		return n
	}
	if ms, mp := misses(seq), misses(par); mp > ms+2 {
		t.Fatalf("%d vectors do not find themselves in the parallel graph, %d in the sequential one", mp, ms)
	}
}

func TestAddBatchIsAllOrNothing(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 13))
	data := clustered(r, 300, testDim, 4, 0.1)
	x := build(t, data[:100], Config{M: 8, Seed: 13})
	before := writeIndex(t, x)
	bad := append([][]float32(nil), data[100:]...)
	bad[150] = make([]float32, testDim)
	if _, err := x.AddBatch(bad, 2); !errors.Is(err, vec.ErrZeroNorm) {
		t.Fatalf("a zero vector in the batch: %v, want ErrZeroNorm", err)
	}
	bad[150] = make([]float32, testDim+1)
	if _, err := x.AddBatch(bad, 2); !errors.Is(err, ErrDimension) {
		t.Fatalf("a vector of the wrong length: %v, want ErrDimension", err)
	}
	if !bytes.Equal(writeIndex(t, x), before) {
		t.Fatal("a refused batch changed the index")
	}
	// Freed slots are reused by a parallel batch too.
	for i := range 80 {
		if err := x.Delete(uint32(i)); err != nil {
			t.Fatal(err)
		}
	}
	x.Compact()
	ids, err := x.AddBatch(data[100:], 2)
	if err != nil {
		t.Fatal(err)
	}
	reused := 0
	for _, id := range ids {
		if id < 80 {
			reused++
		}
	}
	if reused != 80 || x.Len() != 220 || x.IDLimit() != 220 {
		t.Fatalf("reused %d slots, Len %d, IDLimit %d; want 80, 220, 220", reused, x.Len(), x.IDLimit())
	}
}
