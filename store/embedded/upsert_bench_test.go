package embedded_test

import (
	"context"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/embed/hash"
	"github.com/quarry-rag/quarry/internal/kwbench"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/embedded"
)

// BenchmarkUpsert writes 20,000 chunks of the keyword benchmark's corpus
// with 512-d hash embeddings, in batches of 500 as ingestion commits
// them, into a new knowledge base per iteration, and reports chunks per
// second: the SQLite rows, the journal and every index. The embeddings are
// computed before the clock starts.
func BenchmarkUpsert(b *testing.B) {
	ctx := context.Background()
	kc := kwbench.DefaultConfig()
	kc.Docs, kc.Queries = 20_000, 1
	corpus := kwbench.Generate(kc)
	emb, err := hash.New(hash.Config{})
	if err != nil {
		b.Fatal(err)
	}
	texts := make([]string, len(corpus.Docs))
	for i, d := range corpus.Docs {
		texts[i] = d.Text
	}
	vecs, err := embed.Batched{Embedder: emb}.Embed(ctx, texts)
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	for b.Loop() {
		docs := make([]*document.Document, len(corpus.Docs))
		for i, d := range corpus.Docs {
			doc := document.New(d.Text)
			doc.ID, doc.SourceType, doc.SourceName = d.ID, document.SourceFile, d.ID
			doc.Embedding = vecs[i]
			docs[i] = doc
		}
		bk, err := embedded.Open(ctx, b.TempDir(), embedded.Options{CheckpointRows: -1})
		if err != nil {
			b.Fatal(err)
		}
		s := store.New(bk)
		c, err := s.EnsureCollection(ctx, store.CollectionConfig{Name: "bench", Model: emb.Model()})
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		for start := 0; start < len(docs); start += 500 {
			if err := c.Upsert(ctx, docs[start:min(start+500, len(docs))]); err != nil {
				b.Fatal(err)
			}
		}
		total += time.Since(t0)
		b.StopTimer()
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.N*len(corpus.Docs))/total.Seconds(), "chunks/s")
}
