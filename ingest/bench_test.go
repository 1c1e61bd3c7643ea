package ingest_test

import (
	"context"
	"os"
	"testing"

	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/load"
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
