// Package annbench generates the synthetic workloads behind `quarry bench
// ann` and measures Quarry's vector indexes on them: clustered unit vectors,
// held-out queries, exact ground truth, TEXMEX file export for peer engines,
// and the build, memory, recall and throughput figures of the report.
package annbench

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/quarry-rag/quarry/index/bitset"
	"github.com/quarry-rag/quarry/index/vec"
)

// Dataset is a base matrix, held-out queries and their exact neighbours.
type Dataset struct {
	Dim     int
	Base    []float32 // row-major, unit rows
	Queries []float32 // row-major, unit rows, drawn like Base but not in it
	// Truth[i] lists the exact nearest base rows of query i, best first.
	Truth [][]uint32
}

// N is the number of base rows.
func (d *Dataset) N() int { return len(d.Base) / d.Dim }

// NQ is the number of queries.
func (d *Dataset) NQ() int { return len(d.Queries) / d.Dim }

// Query returns query i.
func (d *Dataset) Query(i int) []float32 { return d.Queries[i*d.Dim : (i+1)*d.Dim] }

// Vector returns base vector i.
func (d *Dataset) Vector(i int) []float32 { return d.Base[i*d.Dim : (i+1)*d.Dim] }

// Generate draws n base vectors and nq queries from a mixture of clusters
// isotropic Gaussians around random unit centres with per-coordinate standard
// deviation sigma, every vector L2-normalised. Equal arguments give equal
// data.
func Generate(n, nq, dim, clusters int, sigma float64, seed uint64) *Dataset {
	r := rand.New(rand.NewPCG(seed, 0x51ed2701))
	centres := make([]float32, clusters*dim)
	for c := range clusters {
		row := centres[c*dim : (c+1)*dim]
		for d := range row {
			row[d] = float32(r.NormFloat64())
		}
		_ = vec.Normalize(row)
	}
	draw := func(m int) []float32 {
		out := make([]float32, m*dim)
		for i := range m {
			c := r.IntN(clusters)
			row := out[i*dim : (i+1)*dim]
			for d := range row {
				row[d] = centres[c*dim+d] + float32(sigma*r.NormFloat64())
			}
			if vec.Normalize(row) != nil {
				row[0] = 1 // a zero draw is practically impossible; keep it valid
			}
		}
		return out
	}
	return &Dataset{Dim: dim, Base: draw(n), Queries: draw(nq)}
}

// ComputeTruth fills Truth with the exact top-k of every query among rows in
// allow (nil: all rows), using the exact scan on threads goroutines.
func (d *Dataset) ComputeTruth(k, threads int, allow *bitset.Set) ([][]uint32, error) {
	out := make([][]uint32, d.NQ())
	for i := range out {
		rs, err := vec.Scan(d.Base, d.Dim, d.Query(i), k, vec.ScanOptions{Threads: threads, Allow: allow})
		if err != nil {
			return nil, fmt.Errorf("ground truth: %w", err)
		}
		ids := make([]uint32, len(rs))
		for j, r := range rs {
			ids[j] = r.ID
		}
		out[i] = ids
	}
	return out, nil
}

// RandomAllow returns a set holding each of n ids with probability sel,
// drawn from seed; at least one id is always allowed.
func RandomAllow(n int, sel float64, seed uint64) *bitset.Set {
	r := rand.New(rand.NewPCG(seed, math.Float64bits(sel)))
	s := bitset.New(n)
	for i := range n {
		if r.Float64() < sel {
			s.Add(uint32(i))
		}
	}
	if s.Count() == 0 && n > 0 {
		s.Add(uint32(r.IntN(n)))
	}
	return s
}

// Export writes base.fvecs, query.fvecs and gt.ivecs (TEXMEX format: each
// record is a little-endian int32 dimension followed by the values) to dir.
func (d *Dataset) Export(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := writeFvecs(filepath.Join(dir, "base.fvecs"), d.Base, d.Dim); err != nil {
		return err
	}
	if err := writeFvecs(filepath.Join(dir, "query.fvecs"), d.Queries, d.Dim); err != nil {
		return err
	}
	return writeIvecs(filepath.Join(dir, "gt.ivecs"), d.Truth)
}

func writeFvecs(path string, data []float32, dim int) error {
	return writeFile(path, func(w *bufio.Writer) error {
		var b [4]byte
		for i := 0; i < len(data); i += dim {
			binary.LittleEndian.PutUint32(b[:], uint32(dim))
			w.Write(b[:])
			for _, x := range data[i : i+dim] {
				binary.LittleEndian.PutUint32(b[:], math.Float32bits(x))
				w.Write(b[:])
			}
		}
		return nil
	})
}

func writeIvecs(path string, rows [][]uint32) error {
	return writeFile(path, func(w *bufio.Writer) error {
		var b [4]byte
		for _, row := range rows {
			binary.LittleEndian.PutUint32(b[:], uint32(len(row)))
			w.Write(b[:])
			for _, x := range row {
				binary.LittleEndian.PutUint32(b[:], x)
				w.Write(b[:])
			}
		}
		return nil
	})
}

// writeFile writes through a buffer; bufio keeps the first write error and
// Flush reports it.
func writeFile(path string, fill func(*bufio.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = fill(w)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("export %s: %w", path, err)
	}
	return nil
}
