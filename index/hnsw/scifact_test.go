package hnsw_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/embed/hash"
	"github.com/quarry-rag/quarry/eval"
	"github.com/quarry-rag/quarry/index/hnsw"
)

// BenchmarkSciFactHashEf measures recall@10 against an exhaustive search,
// and the time of one walk, by ef on SciFact embedded with the offline
// hash embedder: near-orthogonal vectors, the hard case behind the
// default ef floor (DefaultMinEfSearch).
//
//	go test ./index/hnsw -run '^$' -bench SciFactHashEf -benchtime 300x
func BenchmarkSciFactHashEf(b *testing.B) {
	dir := filepath.Join("..", "..", "..", "shared", "data", "scifact")
	if _, err := os.Stat(dir); err != nil {
		b.Skipf("SciFact not found at %s: %v", dir, err)
	}
	ds, err := eval.LoadBEIR(dir)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	e, err := hash.New(hash.Config{})
	if err != nil {
		b.Fatal(err)
	}
	texts := make([]string, len(ds.Corpus))
	for i, d := range ds.Corpus {
		texts[i] = d.Title + "\n" + d.Text
	}
	vecs, err := e.Embed(ctx, texts)
	if err != nil {
		b.Fatal(err)
	}
	// The embedded store's build settings.
	x, err := hnsw.New(e.Model().Dimension, hnsw.Config{Seed: 1, EfConstruction: 100})
	if err != nil {
		b.Fatal(err)
	}
	for _, v := range vecs {
		if _, err := x.Add(v); err != nil {
			b.Fatal(err)
		}
	}
	queries := make([][]float32, len(ds.Queries))
	exact := make([]map[uint32]bool, len(ds.Queries))
	for i, q := range ds.Queries {
		v, err := embed.EmbedQuery(ctx, e, []string{q.Text})
		if err != nil {
			b.Fatal(err)
		}
		queries[i] = v[0]
		res, err := x.Search(v[0], 10, hnsw.SearchOptions{Ef: len(vecs)})
		if err != nil {
			b.Fatal(err)
		}
		exact[i] = map[uint32]bool{}
		for _, r := range res {
			exact[i][r.ID] = true
		}
	}
	for _, quant := range []hnsw.Quantization{hnsw.QuantizationNone, hnsw.QuantizationInt8} {
		if err := x.SetQuantization(quant); err != nil {
			b.Fatal(err)
		}
		sweepSciFact(b, x, quant, queries, exact)
	}
}

func sweepSciFact(b *testing.B, x *hnsw.Index, quant hnsw.Quantization, queries [][]float32, exact []map[uint32]bool) {
	for _, ef := range []int{64, 96, 128, 192, 256, 512} {
		b.Run(fmt.Sprintf("%v/ef=%d", quant, ef), func(b *testing.B) {
			found, total := 0, 0
			for i := 0; b.Loop(); i++ {
				q := i % len(queries)
				res, err := x.Search(queries[q], 10, hnsw.SearchOptions{Ef: ef})
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range res {
					if exact[q][r.ID] {
						found++
					}
				}
				total += len(exact[q])
			}
			b.ReportMetric(float64(found)/float64(total), "recall@10")
		})
	}
}
