package ingest_test

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/load"
	"github.com/quarry-rag/quarry/split"
)

// pgDocs is Debian's postgresql-doc-15 HTML manual, a real corpus of
// 1,169 pages.
const pgDocs = "/usr/share/doc/postgresql-doc-15/html"

// BenchmarkIngestPostgresDocs ingests the PostgreSQL manual with the hash
// embedder until the indexes are queryable and checkpointed, and reports
// chunks per second: with the embedding cache, and without it as the
// command line runs the hash embedder.
func BenchmarkIngestPostgresDocs(b *testing.B) {
	b.Run("cache", func(b *testing.B) { benchIngest(b, true) })
	b.Run("nocache", func(b *testing.B) { benchIngest(b, false) })
}

func benchIngest(b *testing.B, cache bool) {
	if _, err := os.Stat(pgDocs); err != nil {
		b.Skipf("%s not found (apt-get install postgresql-doc-15)", pgDocs)
	}
	var chunks int
	for b.Loop() {
		b.StopTimer()
		e := newEnv(b, b.TempDir())
		b.StartTimer()
		opt := ingest.Options{Collection: e.coll, Embedder: e.emb, Loader: load.New(load.Options{})}
		if cache {
			opt.Cache = e.b.EmbeddingCache()
		}
		rep, err := ingest.Run(context.Background(), []string{pgDocs}, opt)
		if err != nil {
			b.Fatal(err)
		}
		chunks = rep.Chunks
		b.StopTimer()
		e.s.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(chunks)*float64(b.N)/b.Elapsed().Seconds(), "chunks/s")
	b.ReportMetric(float64(chunks), "chunks")
}

// BenchmarkIngestGoSource ingests Go's own source tree (go env GOROOT's
// src: code, test data, generated tables, every odd file a real tree
// holds) and reports the time, each outcome's count, and the chunks' sizes:
// percentiles and the maximum in characters, the largest in tokens, and
// how many exceed the 512-token budget (none should). docs/ingestion.md
// quotes it; run it with -benchtime=1x.
func BenchmarkIngestGoSource(b *testing.B) {
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Skipf("go env GOROOT: %v", err)
	}
	src := filepath.Join(strings.TrimSpace(string(goroot)), "src")
	if _, err := os.Stat(filepath.Join(src, "net", "http", "server.go")); err != nil {
		b.Skipf("Go's source tree is not at %s", src)
	}
	var rep *ingest.Report
	var e *env
	for b.Loop() {
		b.StopTimer()
		if e != nil {
			e.s.Close()
		}
		e = newEnv(b, b.TempDir())
		b.StartTimer()
		var err error
		// Data kept: the chunk sizes are those of everything the tree holds.
		rep, err = ingest.Run(context.Background(), []string{src}, ingest.Options{Collection: e.coll, Embedder: e.emb, Loader: load.New(load.Options{KeepData: true})})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	defer e.s.Close()
	var sizes []int
	var tok split.Tokenizer
	maxTokens, over := 0, 0
	err = e.coll.Scan(context.Background(), 1000, func(docs []*document.Document) error {
		for _, d := range docs {
			sizes = append(sizes, utf8.RuneCountInString(d.Content))
			if len(d.Content) > 512 { // fewer bytes are fewer tokens
				n, err := tok.Count(d.Content)
				if err != nil {
					return err
				}
				maxTokens = max(maxTokens, n)
				if n > 512 {
					over++
					if over <= 5 {
						b.Logf("over the budget: %s lines %d-%d, %d tokens", d.SourceName, d.Provenance.LineStart, d.Provenance.LineEnd, n)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	slices.Sort(sizes)
	pct := func(p float64) float64 { return float64(sizes[int(p*float64(len(sizes)-1))]) }
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/ingest")
	b.ReportMetric(float64(rep.Chunks), "chunks")
	b.ReportMetric(float64(rep.Written), "written")
	b.ReportMetric(float64(rep.Ignored), "skipped")
	b.ReportMetric(float64(rep.NoText), "no-text")
	b.ReportMetric(float64(rep.Failed), "failed")
	b.ReportMetric(pct(0.5), "p50-chars")
	b.ReportMetric(pct(0.9), "p90-chars")
	b.ReportMetric(pct(0.99), "p99-chars")
	b.ReportMetric(float64(sizes[len(sizes)-1]), "max-chars")
	b.ReportMetric(float64(maxTokens), "max-tokens")
	b.ReportMetric(float64(over), "over-budget")
	reasons := map[string]int{}
	for _, n := range append(slices.Clone(rep.Notes), rep.Errors...) {
		if i := strings.Index(n, ": "); i >= 0 {
			n = n[i+2:]
		}
		reasons[n]++
	}
	for _, r := range slices.Sorted(maps.Keys(reasons)) {
		b.Logf("%6d  %s", reasons[r], r)
	}
}
