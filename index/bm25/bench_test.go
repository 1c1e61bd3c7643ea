package bm25_test

import (
	"testing"

	"github.com/quarry-rag/quarry/index/bitset"
	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/internal/kwbench"
)

// benchCorpus is the bench keyword workload at a size a benchmark can
// build quickly.
func benchCorpus(docs int) *kwbench.Corpus {
	cfg := kwbench.DefaultConfig()
	cfg.Docs = docs
	return kwbench.Generate(cfg)
}

func buildBench(b *testing.B, c *kwbench.Corpus) *bm25.Index {
	x, err := bm25.New(bm25.Config{})
	if err != nil {
		b.Fatal(err)
	}
	for i, d := range c.Docs {
		if err := x.Add(uint32(i), bm25.Doc{ID: d.ID, Text: d.Text}); err != nil {
			b.Fatal(err)
		}
	}
	return x
}

// BenchmarkSearch is one disjunctive top-10 query of 2–5 Zipf terms over
// 100k documents of 50–150 words.
func BenchmarkSearch(b *testing.B) {
	c := benchCorpus(100_000)
	x := buildBench(b, c)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		x.Search(c.Queries[i%len(c.Queries)].Text, 10, bm25.SearchOptions{})
		i++
	}
}

// BenchmarkSearchFiltered is BenchmarkSearch restricted to an allow-set of
// every tenth document.
func BenchmarkSearchFiltered(b *testing.B) {
	c := benchCorpus(100_000)
	x := buildBench(b, c)
	allow := bitset.New(len(c.Docs))
	for i := 0; i < len(c.Docs); i += 10 {
		allow.Add(uint32(i))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		x.Search(c.Queries[i%len(c.Queries)].Text, 10, bm25.SearchOptions{Allow: allow})
		i++
	}
}

// BenchmarkAdd indexes one 50–150-word document.
func BenchmarkAdd(b *testing.B) {
	c := benchCorpus(20_000)
	b.ReportAllocs()
	var x *bm25.Index
	i := 0
	for b.Loop() {
		if i%len(c.Docs) == 0 {
			b.StopTimer()
			x, _ = bm25.New(bm25.Config{})
			b.StartTimer()
		}
		d := c.Docs[i%len(c.Docs)]
		if err := x.Add(uint32(i%len(c.Docs)), bm25.Doc{ID: d.ID, Text: d.Text}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
