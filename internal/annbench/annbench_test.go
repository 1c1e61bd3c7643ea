package annbench

import (
	"context"
	"encoding/binary"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

func TestGenerateDeterministicAndNormalised(t *testing.T) {
	a := Generate(200, 20, 16, 5, 0.1, 3)
	b := Generate(200, 20, 16, 5, 0.1, 3)
	if !slices.Equal(a.Base, b.Base) || !slices.Equal(a.Queries, b.Queries) {
		t.Fatal("same seed, different data")
	}
	if c := Generate(200, 20, 16, 5, 0.1, 4); slices.Equal(a.Base, c.Base) {
		t.Fatal("different seeds, same data")
	}
	for i := range a.N() {
		var s float64
		for _, x := range a.Base[i*16 : (i+1)*16] {
			s += float64(x) * float64(x)
		}
		if math.Abs(s-1) > 1e-5 {
			t.Fatalf("row %d has squared norm %v", i, s)
		}
	}
}

func TestExportTexmex(t *testing.T) {
	d := Generate(50, 7, 8, 3, 0.1, 1)
	truth, err := d.ComputeTruth(5, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	d.Truth = truth
	dir := t.TempDir()
	if err := d.Export(dir); err != nil {
		t.Fatal(err)
	}
	base, _ := os.ReadFile(filepath.Join(dir, "base.fvecs"))
	if len(base) != 50*(4+4*8) || binary.LittleEndian.Uint32(base) != 8 {
		t.Fatalf("base.fvecs: %d bytes, first dim %d", len(base), binary.LittleEndian.Uint32(base))
	}
	if got := math.Float32frombits(binary.LittleEndian.Uint32(base[4:])); got != d.Base[0] {
		t.Fatalf("base.fvecs first value %v, want %v", got, d.Base[0])
	}
	gt, _ := os.ReadFile(filepath.Join(dir, "gt.ivecs"))
	if len(gt) != 7*(4+4*5) || binary.LittleEndian.Uint32(gt[4:]) != truth[0][0] {
		t.Fatalf("gt.ivecs malformed: %d bytes", len(gt))
	}
}

func TestRandomAllow(t *testing.T) {
	s := RandomAllow(10000, 0.1, 1)
	if c := s.Count(); c < 900 || c > 1100 {
		t.Fatalf("10%% of 10000 allowed %d", c)
	}
	if RandomAllow(100, 1e-9, 1).Count() != 1 {
		t.Fatal("a tiny selectivity must still allow one id")
	}
}

func TestRunSmall(t *testing.T) {
	cfg := DefaultConfig()
	cfg.N, cfg.Dim, cfg.Queries, cfg.Clusters = 600, 16, 20, 6
	cfg.Efs = []int{16, 64}
	cfg.Selectivities = []float64{0.5, 0.01}
	cfg.MapDir = t.TempDir()
	cfg.BuildThreads = 2
	rep, err := Run(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Float32Rec != 1 || rep.Int8Rec < 0.95 || len(rep.Sweep) != 2 || len(rep.FilteredRuns) != 2 {
		t.Fatalf("report: %+v", rep)
	}
	if p, ok := FirstReaching(rep.Sweep, 0.95); !ok || p.Ef != 16 && p.Ef != 64 {
		t.Fatalf("sweep %+v", rep.Sweep)
	}
	if runtime.GOOS == "linux" {
		// The same graph re-scored from mapped rows finds the same nodes.
		if len(rep.MappedSweep) != 2 || rep.MappedSweep[1].Recall != rep.Sweep[1].Recall {
			t.Fatalf("mapped sweep %+v, heap sweep %+v", rep.MappedSweep, rep.Sweep)
		}
		if rep.MappedFilePerVec <= 0 {
			t.Fatalf("mapping the vectors added %.0f B/vector of file pages", rep.MappedFilePerVec)
		}
	}
	if len(rep.ParallelSweep) != 2 || rep.ParallelSweep[1].Recall < 0.95 || rep.ParallelInsertsPerS.Wall <= 0 {
		t.Fatalf("parallel build: %+v at %+v", rep.ParallelSweep, rep.ParallelInsertsPerS)
	}
	if p := rep.FilteredRuns[1].Points[0].Path; p != "exact" {
		t.Fatalf("1%% of 600 should be scanned exactly, got %s", p)
	}
	rep.WriteTable(io.Discard)
}
