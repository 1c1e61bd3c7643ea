package annbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"github.com/quarry-rag/quarry/index/bitset"
	"github.com/quarry-rag/quarry/index/hnsw"
	"github.com/quarry-rag/quarry/index/vec"
)

// Config is one benchmark run. Zero fields take the defaults of DefaultConfig.
type Config struct {
	N        int     `json:"n"`
	Dim      int     `json:"dim"`
	Queries  int     `json:"queries"`
	Clusters int     `json:"clusters"`
	Sigma    float64 `json:"sigma"`
	Seed     uint64  `json:"seed"`
	K        int     `json:"k"`
	// Threads is the goroutine count of the exact scans; HNSW builds and
	// searches on one thread, like the peers it is compared with.
	Threads        int       `json:"threads"`
	M              int       `json:"m"`
	EfConstruction int       `json:"efConstruction"`
	Efs            []int     `json:"efs"`
	Selectivities  []float64 `json:"filterSelectivities,omitempty"`
	// Export, when set, is a directory that receives base.fvecs, query.fvecs
	// and gt.ivecs.
	Export string `json:"export,omitempty"`
	// BuildThreads, above 1, adds a pass that builds a second index with
	// hnsw.Index.AddBatch on that many goroutines and sweeps it.
	BuildThreads int `json:"buildThreads,omitempty"`
	// MapDir is where the last pass maps the float32 vectors
	// (hnsw.Index.MapVectors); empty means the system's temporary directory.
	MapDir string `json:"mapDir,omitempty"`
}

// DefaultConfig is the reference workload: 100k × 384 clustered
// vectors, 1,000 held-out queries, recall@10.
func DefaultConfig() Config {
	return Config{
		N: 100_000, Dim: 384, Queries: 1000, Clusters: 100, Sigma: 0.1, Seed: 1, K: 10,
		Threads: 2, M: hnsw.DefaultM, EfConstruction: hnsw.DefaultEfConstruction,
		Efs: []int{10, 12, 16, 20, 24, 32, 40, 48, 56, 64, 80, 96, 128, 192, 256, 384, 512},
	}
}

// Check reports the first invalid setting.
func (c Config) Check() error {
	if c.N <= 0 || c.Dim <= 0 || c.Queries <= 0 || c.Clusters <= 0 || c.Threads <= 0 || c.K <= 0 {
		return errors.New("n, dim, queries, clusters, threads and k must be positive")
	}
	for _, s := range c.Selectivities {
		if s <= 0 || s > 1 {
			return fmt.Errorf("filter selectivity %g is not in (0, 1]", s)
		}
	}
	for _, ef := range c.Efs {
		if ef <= 0 {
			return fmt.Errorf("ef %d must be positive", ef)
		}
	}
	return nil
}

// Point is one ef setting of a sweep.
type Point struct {
	Ef     int     `json:"ef"`
	Recall float64 `json:"recall"`
	QPS    Rate    `json:"qps"`
	// Path is how a filtered search ran: "exact" (scan of the allowed
	// vectors) or "graph" (filtered HNSW walk); empty when unfiltered.
	Path string `json:"path,omitempty"`
}

// Filtered is the sweep of one allow-set.
type Filtered struct {
	Selectivity float64 `json:"selectivity"`
	Allowed     int     `json:"allowed"`
	Points      []Point `json:"points"`
}

// Report holds every figure of a run.
type Report struct {
	Config      Config  `json:"config"`
	GenerateSec float64 `json:"generateSeconds"`
	TruthSec    float64 `json:"groundTruthSeconds"`
	ScalarQPS   Rate    `json:"exactScalarQPS"` // plain loop, one thread: the kernel reference
	Float32QPS  Rate    `json:"exactFloat32QPS"`
	Float32Rec  float64 `json:"exactFloat32Recall"`
	Int8QPS     Rate    `json:"exactInt8QPS"`
	Int8Rec     float64 `json:"exactInt8Recall"`
	Int8Rescore int     `json:"int8Rescore"`
	BuildSec    float64 `json:"buildSeconds"`
	InsertsPerS Rate    `json:"insertsPerSecond"`
	RSSPerVec   float64 `json:"rssBytesPerVector"`
	AnonPerVec  float64 `json:"anonBytesPerVector"` // private pages only
	HeapPerVec  float64 `json:"heapBytesPerVector"`
	// MappedAnonPerVec and MappedFilePerVec are the index's private and
	// file-backed resident memory once its float32 vectors are mapped: the
	// first must stay resident, the second is page cache the kernel may
	// drop. MappedSweep is the int8 walk over that layout (see Sweep).
	MappedAnonPerVec float64 `json:"mappedAnonBytesPerVector,omitempty"`
	MappedFilePerVec float64 `json:"mappedFileBytesPerVector,omitempty"`
	MappedSweep      []Point `json:"mappedSweep,omitempty"`
	// The parallel build (Config.BuildThreads) and its int8 sweep.
	ParallelBuildSec    float64 `json:"parallelBuildSeconds,omitempty"`
	ParallelInsertsPerS Rate    `json:"parallelInsertsPerSecond,omitzero"`
	ParallelSweep       []Point `json:"parallelSweep,omitempty"`
	// Sweep walks the graph the index's default way (int8 codes, float32
	// re-scoring); FloatSweep walks the same graph on the float32 vectors.
	Sweep        []Point    `json:"sweep"`
	FloatSweep   []Point    `json:"floatSweep"`
	CodeBytes    int        `json:"codeBytesPerVector"`
	FilteredRuns []Filtered `json:"filtered,omitempty"`
}

// Run generates the data, measures and returns the report, logging progress
// lines to log.
func Run(ctx context.Context, cfg Config, log io.Writer) (*Report, error) {
	if cfg.N <= 0 || cfg.Dim <= 0 || cfg.Queries <= 0 || cfg.Clusters <= 0 || cfg.K <= 0 {
		return nil, fmt.Errorf("annbench: n, dim, queries, clusters and k must be positive")
	}
	rep := &Report{Config: cfg}
	t0 := time.Now()
	d := Generate(cfg.N, cfg.Queries, cfg.Dim, cfg.Clusters, cfg.Sigma, cfg.Seed)
	rep.GenerateSec = time.Since(t0).Seconds()
	fmt.Fprintf(log, "generated %d × %d base vectors and %d queries in %.1fs\n", cfg.N, cfg.Dim, cfg.Queries, rep.GenerateSec)

	t0 = time.Now()
	truth, err := d.ComputeTruth(max(cfg.K, 100), cfg.Threads, nil)
	if err != nil {
		return nil, err
	}
	d.Truth = truth
	rep.TruthSec = time.Since(t0).Seconds()
	fmt.Fprintf(log, "exact ground truth in %.1fs\n", rep.TruthSec)
	if cfg.Export != "" {
		if err := d.Export(cfg.Export); err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "exported base.fvecs, query.fvecs, gt.ivecs to %s\n", cfg.Export)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := rep.exact(d, log); err != nil {
		return nil, err
	}
	x, err := rep.build(ctx, d, log)
	if err != nil {
		return nil, err
	}
	if err := x.SetQuantization(hnsw.QuantizationNone); err != nil {
		return nil, err
	}
	rep.FloatSweep, err = sweep(ctx, x, d, cfg, nil, d.Truth)
	if err != nil {
		return nil, err
	}
	if err := x.SetQuantization(hnsw.QuantizationDefault); err != nil {
		return nil, err
	}
	rep.Sweep, err = sweep(ctx, x, d, cfg, nil, d.Truth)
	if err != nil {
		return nil, err
	}
	for i, sel := range cfg.Selectivities {
		allow := RandomAllow(cfg.N, sel, cfg.Seed+uint64(i)+1)
		ft, err := d.ComputeTruth(cfg.K, cfg.Threads, allow)
		if err != nil {
			return nil, err
		}
		f := Filtered{Selectivity: sel, Allowed: allow.Count()}
		f.Points, err = sweep(ctx, x, d, cfg, allow, ft)
		if err != nil {
			return nil, err
		}
		rep.FilteredRuns = append(rep.FilteredRuns, f)
		fmt.Fprintf(log, "filtered sweep at selectivity %g done\n", sel)
	}
	if cfg.BuildThreads > 1 {
		if err := rep.parallel(ctx, d, log); err != nil {
			return nil, err
		}
	}
	if err := rep.mapped(ctx, x, d, log); err != nil {
		return nil, err
	}
	return rep, x.Close()
}

// parallel builds the index again in one AddBatch on Config.BuildThreads
// goroutines, as a bulk ingest would, and sweeps it.
func (rep *Report) parallel(ctx context.Context, d *Dataset, log io.Writer) error {
	cfg := rep.Config
	x, err := hnsw.New(d.Dim, hnsw.Config{M: cfg.M, EfConstruction: cfg.EfConstruction, Seed: cfg.Seed})
	if err != nil {
		return err
	}
	defer x.Close()
	rows := make([][]float32, d.N())
	for i := range rows {
		rows[i] = d.Vector(i)
	}
	t0, c0 := time.Now(), cpuTime()
	if _, err := x.AddBatch(rows, cfg.BuildThreads); err != nil {
		return fmt.Errorf("parallel build: %w", err)
	}
	wall := time.Since(t0)
	rep.ParallelBuildSec = wall.Seconds()
	rep.ParallelInsertsPerS = rateOf(d.N(), wall, cpuTime()-c0)
	fmt.Fprintf(log, "HNSW built on %d goroutines in %.1fs\n", cfg.BuildThreads, rep.ParallelBuildSec)
	rep.ParallelSweep, err = sweep(ctx, x, d, cfg, nil, d.Truth)
	return err
}

// mapped moves the built index's float32 vectors into a mapped file,
// sweeps the int8 walk again, which now re-scores from the mapped rows,
// and measures what stayed in private memory and what file pages the
// searches mapped.
func (rep *Report) mapped(ctx context.Context, x *hnsw.Index, d *Dataset, log io.Writer) error {
	dir := rep.Config.MapDir
	if dir == "" {
		dir = os.TempDir()
	}
	settle()
	m0 := memory()
	err := x.MapVectors(dir)
	if errors.Is(err, errors.ErrUnsupported) {
		fmt.Fprintf(log, "mapped vectors: %v; pass skipped\n", err)
		return nil
	}
	if err != nil {
		return err
	}
	rep.MappedSweep, err = sweep(ctx, x, d, rep.Config, nil, d.Truth)
	if err != nil {
		return err
	}
	// Measured after the sweep: the file pages counted are those its
	// searches touched, as in a server that has been answering.
	settle()
	m1 := memory()
	n := float64(d.N())
	rep.MappedAnonPerVec = rep.AnonPerVec + (m1.anon-m0.anon)/n
	rep.MappedFilePerVec = (m1.file - m0.file) / n
	fmt.Fprintf(log, "mapped-vector sweep done\n")
	return nil
}

// Rate is a throughput measured two ways: per second of wall time, and per
// second of CPU time the process used. On a shared machine the CPU figure is
// the stable one: it does not count time other processes held the cores.
type Rate struct {
	Wall float64 `json:"wall"`
	CPU  float64 `json:"cpu"`
}

func rateOf(n int, wall, cpu time.Duration) Rate {
	r := Rate{Wall: float64(n) / wall.Seconds()}
	if cpu > 0 {
		r.CPU = float64(n) / cpu.Seconds()
	}
	return r
}

// timeQueries times f over every query. The queries run in ten chunks, each
// chunk three times, and each chunk's fastest pass counts, so a burst of
// someone else's work slows one pass, not the figure.
func timeQueries(nq int, f func(i int) error) (Rate, error) {
	const chunks, passes = 10, 3
	size := max(1, (nq+chunks-1)/chunks)
	var wall, cpu time.Duration
	for lo := 0; lo < nq; lo += size {
		hi := min(nq, lo+size)
		bestWall, bestCPU := time.Duration(1<<63-1), time.Duration(1<<63-1)
		for range passes {
			t0, c0 := time.Now(), cpuTime()
			for i := lo; i < hi; i++ {
				if err := f(i); err != nil {
					return Rate{}, err
				}
			}
			bestWall = min(bestWall, time.Since(t0))
			bestCPU = min(bestCPU, cpuTime()-c0)
		}
		wall += bestWall
		cpu += bestCPU
	}
	return rateOf(nq, wall, cpu), nil
}

// meanRecall scores the last results of every query against truth.
func meanRecall(got [][]vec.Result, truth [][]uint32, k int) float64 {
	var sum float64
	for i, rs := range got {
		sum += recallOf(rs, truth[i], k)
	}
	return sum / float64(max(1, len(got)))
}

func recallOf(got []vec.Result, want []uint32, k int) float64 {
	want = want[:min(k, len(want))]
	hit := 0
	for _, g := range got {
		for _, w := range want {
			if g.ID == w {
				hit++
				break
			}
		}
	}
	return float64(hit) / float64(max(1, len(want)))
}

func (rep *Report) exact(d *Dataset, log io.Writer) error {
	cfg := rep.Config
	nq := d.NQ()
	// The scalar loop is slow by design; a tenth of the queries suffice.
	ns := max(1, nq/10)
	top := vec.NewTopK(cfg.K)
	t0, c0 := time.Now(), cpuTime()
	for i := range ns {
		q := d.Query(i)
		top.Reset(cfg.K)
		for j := range d.N() {
			row := d.Vector(j)
			var s float32
			for c := range row {
				s += q[c] * row[c]
			}
			top.Push(uint32(j), s)
		}
	}
	rep.ScalarQPS = rateOf(ns, time.Since(t0), cpuTime()-c0)

	opt := vec.ScanOptions{Threads: cfg.Threads}
	got := make([][]vec.Result, nq)
	qps, err := timeQueries(nq, func(i int) (err error) {
		got[i], err = vec.Scan(d.Base, d.Dim, d.Query(i), cfg.K, opt)
		return err
	})
	if err != nil {
		return err
	}
	rep.Float32QPS, rep.Float32Rec = qps, meanRecall(got, d.Truth, cfg.K)

	m, err := vec.QuantizeInt8(d.Base, d.Dim)
	if err != nil {
		return err
	}
	rep.Int8Rescore = vec.DefaultRescore(cfg.K)
	qps, err = timeQueries(nq, func(i int) (err error) {
		got[i], err = m.Scan(d.Base, d.Query(i), cfg.K, opt)
		return err
	})
	if err != nil {
		return err
	}
	rep.Int8QPS, rep.Int8Rec = qps, meanRecall(got, d.Truth, cfg.K)
	fmt.Fprintf(log, "exact scans measured\n")
	return nil
}

// resident is the process's resident memory in bytes: private pages (the
// heap, anonymous mappings) and pages of mapped files, from
// /proc/self/status. Both are zero where that file does not exist.
type resident struct{ anon, file float64 }

func (r resident) total() float64 { return r.anon + r.file }

func memory() resident {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return resident{}
	}
	var r resident
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) != 3 || f[2] != "kB" {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "RssAnon:":
			r.anon = kb * 1024
		case "RssFile:", "RssShmem:":
			r.file += kb * 1024
		}
	}
	return r
}

func heapInUse() float64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return float64(s[0].Value.Uint64())
}

// settle collects garbage and returns freed pages to the OS so RSS reflects
// live data.
func settle() {
	runtime.GC()
	debug.FreeOSMemory()
}

func (rep *Report) build(ctx context.Context, d *Dataset, log io.Writer) (*hnsw.Index, error) {
	cfg := rep.Config
	settle()
	m0, heap0 := memory(), heapInUse()
	x, err := hnsw.New(d.Dim, hnsw.Config{M: cfg.M, EfConstruction: cfg.EfConstruction, Seed: cfg.Seed})
	if err != nil {
		return nil, err
	}
	x.Grow(d.N())
	t0, c0 := time.Now(), cpuTime()
	for i := range d.N() {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if _, err := x.Add(d.Vector(i)); err != nil {
			return nil, fmt.Errorf("build: %w", err)
		}
	}
	wall := time.Since(t0)
	rep.BuildSec = wall.Seconds()
	rep.InsertsPerS = rateOf(d.N(), wall, cpuTime()-c0)
	settle()
	m1 := memory()
	rep.RSSPerVec = (m1.total() - m0.total()) / float64(d.N())
	rep.AnonPerVec = (m1.anon - m0.anon) / float64(d.N())
	rep.HeapPerVec = (heapInUse() - heap0) / float64(d.N())
	if x.Config().Quantization == hnsw.QuantizationInt8 {
		rep.CodeBytes = vec.Int8Stride(d.Dim)
	}
	fmt.Fprintf(log, "HNSW built in %.1fs\n", rep.BuildSec)
	return x, nil
}

func sweep(ctx context.Context, x *hnsw.Index, d *Dataset, cfg Config, allow *bitset.Set, truth [][]uint32) ([]Point, error) {
	var pts []Point
	for _, ef := range cfg.Efs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		opt := hnsw.SearchOptions{Ef: ef, Allow: allow}
		got := make([][]vec.Result, d.NQ())
		qps, err := timeQueries(d.NQ(), func(i int) (err error) {
			got[i], err = x.Search(d.Query(i), cfg.K, opt)
			return err
		})
		if err != nil {
			return nil, err
		}
		p := Point{Ef: ef, Recall: meanRecall(got, truth, cfg.K), QPS: qps}
		if allow != nil {
			p.Path = "graph"
			if x.ExactFor(allow, cfg.K, ef) {
				p.Path = "exact"
			}
		}
		pts = append(pts, p)
	}
	return pts, nil
}

// FirstReaching returns the point with the smallest ef whose recall is at
// least target, or false.
func FirstReaching(pts []Point, target float64) (Point, bool) {
	for _, p := range pts {
		if p.Recall >= target {
			return p, true
		}
	}
	return Point{}, false
}

// WriteTable prints the report for people. Throughputs appear twice: per
// wall-clock second and per CPU second (see Rate).
func (rep *Report) WriteTable(w io.Writer) {
	c := rep.Config
	fmt.Fprintf(w, "quarry bench ann: n=%d dim=%d queries=%d clusters=%d sigma=%g seed=%d k=%d\n\n",
		c.N, c.Dim, c.Queries, c.Clusters, c.Sigma, c.Seed, c.K)
	fmt.Fprintf(w, "exact scan, %d threads      QPS (wall)  QPS (per CPU s)  recall@%d  vs scalar (CPU)\n", c.Threads, c.K)
	fmt.Fprintf(w, "  scalar loop (1 thread) %10.1f  %15.1f\n", rep.ScalarQPS.Wall, rep.ScalarQPS.CPU)
	fmt.Fprintf(w, "  float32 (SIMD)         %10.1f  %15.1f  %9.4f  %8.1f×\n",
		rep.Float32QPS.Wall, rep.Float32QPS.CPU, rep.Float32Rec, rep.Float32QPS.CPU/rep.ScalarQPS.CPU)
	fmt.Fprintf(w, "  int8 + re-score %-4d   %10.1f  %15.1f  %9.4f  %8.1f×\n\n",
		rep.Int8Rescore, rep.Int8QPS.Wall, rep.Int8QPS.CPU, rep.Int8Rec, rep.Int8QPS.CPU/rep.ScalarQPS.CPU)
	fmt.Fprintf(w, "HNSW M=%d efConstruction=%d, 1 thread: built in %.1fs = %.0f inserts/s (%.0f per CPU s); memory %.0f B/vector RSS, %.0f private (%.0f B Go heap)\n\n",
		c.M, c.EfConstruction, rep.BuildSec, rep.InsertsPerS.Wall, rep.InsertsPerS.CPU, rep.RSSPerVec, rep.AnonPerVec, rep.HeapPerVec)
	writeSweep(w, "unfiltered, float32 walk", rep.FloatSweep, c.K)
	writeSweep(w, fmt.Sprintf("unfiltered, int8 walk (%d B of codes per vector, in the memory above), float32 re-scoring", rep.CodeBytes), rep.Sweep, c.K)
	for _, f := range rep.FilteredRuns {
		writeSweep(w, fmt.Sprintf("filtered %g%% (%d allowed)", 100*f.Selectivity, f.Allowed), f.Points, c.K)
	}
	if rep.ParallelSweep != nil {
		fmt.Fprintf(w, "HNSW built again on %d goroutines (AddBatch): %.1fs = %.0f inserts/s (%.1f× the one-thread build)\n",
			c.BuildThreads, rep.ParallelBuildSec, rep.ParallelInsertsPerS.Wall, rep.ParallelInsertsPerS.Wall/rep.InsertsPerS.Wall)
		writeSweep(w, "unfiltered, int8 walk, the graph built in parallel", rep.ParallelSweep, c.K)
	}
	if rep.MappedSweep != nil {
		fmt.Fprintf(w, "float32 vectors mapped from a file: memory %.0f B/vector private (was %.0f) + %.0f B/vector of file pages mapped by the searches, which the kernel may drop\n",
			rep.MappedAnonPerVec, rep.AnonPerVec, rep.MappedFilePerVec)
		writeSweep(w, "unfiltered, int8 walk, float32 re-scoring from the mapped rows (in page cache)", rep.MappedSweep, c.K)
	}
}

func writeSweep(w io.Writer, title string, pts []Point, k int) {
	fmt.Fprintf(w, "%s\n    ef  recall@%d  QPS (wall)  QPS (per CPU s)  path\n", title, k)
	for _, p := range pts {
		fmt.Fprintf(w, "  %4d  %9.4f  %10.1f  %15.1f  %s\n", p.Ef, p.Recall, p.QPS.Wall, p.QPS.CPU, p.Path)
	}
	for _, target := range []float64{0.95, 0.99} {
		if p, ok := FirstReaching(pts, target); ok {
			fmt.Fprintf(w, "  smallest ef with recall ≥ %.2f: %d (%.4f at %.1f QPS wall, %.1f per CPU s)\n",
				target, p.Ef, p.Recall, p.QPS.Wall, p.QPS.CPU)
		} else {
			fmt.Fprintf(w, "  recall %.2f not reached\n", target)
		}
	}
	fmt.Fprintln(w)
}
