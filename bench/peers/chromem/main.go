// Command chromem runs github.com/philippgille/chromem-go's exact query on
// the files `quarry bench ann --export DIR` writes and prints recall@k and
// QPS, the peer figure for Quarry's exact scan. chromem-go splits each query
// over runtime.NumCPU() goroutines; -threads pins GOMAXPROCS to match Quarry's
// --threads.
//
//	cd bench/peers && go run ./chromem -dir DIR -threads 2
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/philippgille/chromem-go"
)

func main() {
	dir := flag.String("dir", "", "directory with base.fvecs, query.fvecs, gt.ivecs")
	threads := flag.Int("threads", 2, "GOMAXPROCS for the run")
	k := flag.Int("k", 10, "neighbours per query")
	asJSON := flag.Bool("json", false, "print JSON")
	flag.Parse()
	if err := run(*dir, *threads, *k, *asJSON); err != nil {
		fmt.Fprintln(os.Stderr, "chromem:", err)
		os.Exit(1)
	}
}

func run(dir string, threads, k int, asJSON bool) error {
	if dir == "" {
		return errors.New("-dir is required")
	}
	runtime.GOMAXPROCS(threads)
	base, err := readVecs(filepath.Join(dir, "base.fvecs"))
	if err != nil {
		return err
	}
	queries, err := readVecs(filepath.Join(dir, "query.fvecs"))
	if err != nil {
		return err
	}
	gt, err := readVecs(filepath.Join(dir, "gt.ivecs"))
	if err != nil {
		return err
	}
	ctx := context.Background()
	noEmbed := func(context.Context, string) ([]float32, error) {
		return nil, errors.New("the benchmark supplies every embedding")
	}
	db := chromem.NewDB()
	c, err := db.CreateCollection("bench", nil, noEmbed)
	if err != nil {
		return err
	}
	docs := make([]chromem.Document, len(base))
	for i, v := range base {
		docs[i] = chromem.Document{ID: strconv.Itoa(i), Embedding: bitsToFloats(v), Content: "-"}
	}
	t0 := time.Now()
	if err := c.AddDocuments(ctx, docs, threads); err != nil {
		return err
	}
	load := time.Since(t0).Seconds()

	qs := make([][]float32, len(queries))
	for i, q := range queries {
		qs[i] = bitsToFloats(q)
	}
	// The machine is shared: as in quarry bench ann, the queries run in ten
	// chunks, three passes each, and each chunk's fastest pass counts.
	// Wall and CPU time are both kept; CPU time does not count the time
	// other processes held the cores.
	hits := 0
	var total, totalCPU time.Duration
	size := max(1, (len(qs)+9)/10)
	for lo := 0; lo < len(qs); lo += size {
		hi := min(len(qs), lo+size)
		fastest, fastestCPU := time.Duration(1<<63-1), time.Duration(1<<63-1)
		for pass := range 3 {
			t0, c0 := time.Now(), cpuTime()
			for i := lo; i < hi; i++ {
				res, err := c.QueryEmbedding(ctx, qs[i], k, nil, nil)
				if err != nil {
					return fmt.Errorf("query %d: %w", i, err)
				}
				if pass == 0 {
					hits += countHits(res, gt[i], k)
				}
			}
			fastest = min(fastest, time.Since(t0))
			fastestCPU = min(fastestCPU, cpuTime()-c0)
		}
		total += fastest
		totalCPU += fastestCPU
	}
	best := float64(len(qs)) / total.Seconds()
	bestCPU := float64(len(qs)) / totalCPU.Seconds()
	recall := float64(hits) / float64(len(qs)*k)
	if asJSON {
		return json.NewEncoder(os.Stdout).Encode(map[string]any{
			"engine": "chromem-go", "n": len(base), "dim": len(base[0]), "threads": threads,
			"loadSeconds": load, "qps": map[string]float64{"wall": best, "cpu": bestCPU}, "recall": recall,
		})
	}
	fmt.Printf("chromem-go v0.7.0 exact query, n=%d dim=%d, GOMAXPROCS=%d\n", len(base), len(base[0]), threads)
	fmt.Printf("  loaded in %.1fs; %.1f QPS (wall), %.1f per CPU s, recall@%d %.4f\n", load, best, bestCPU, k, recall)
	return nil
}

func countHits(res []chromem.Result, gt []uint32, k int) int {
	want := map[uint32]bool{}
	for _, id := range gt[:min(k, len(gt))] {
		want[id] = true
	}
	hits := 0
	for _, r := range res {
		if id, err := strconv.Atoi(r.ID); err == nil && want[uint32(id)] {
			hits++
		}
	}
	return hits
}

// cpuTime is the CPU time (user + system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// readVecs reads a TEXMEX .fvecs or .ivecs file as raw 32-bit words.
func readVecs(path string) ([][]uint32, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out [][]uint32
	for len(b) > 0 {
		if len(b) < 4 {
			return nil, fmt.Errorf("%s: truncated", path)
		}
		d := int(binary.LittleEndian.Uint32(b))
		if d <= 0 || len(b) < 4+4*d {
			return nil, fmt.Errorf("%s: bad record", path)
		}
		row := make([]uint32, d)
		for i := range row {
			row[i] = binary.LittleEndian.Uint32(b[4+4*i:])
		}
		out = append(out, row)
		b = b[4+4*d:]
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: empty", path)
	}
	return out, nil
}

func bitsToFloats(v []uint32) []float32 {
	f := make([]float32, len(v))
	for i, x := range v {
		f[i] = math.Float32frombits(x)
	}
	return f
}
