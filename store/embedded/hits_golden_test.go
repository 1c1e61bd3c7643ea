package embedded_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/cpu"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/embed/hash"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/internal/kwbench"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/embedded"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/hits.golden.json from the current code")

// goldenHit is one hit as the golden file records it: its id, its score's
// exact bits and a digest of everything the row gave back, so a change of
// layout or read path that alters any byte of a hit shows.
type goldenHit struct {
	ID     string `json:"id"`
	Score  string `json:"score"`
	Digest string `json:"digest"`
}

// goldenCorpus is a few thousand chunks of the keyword benchmark's Zipf
// corpus with metadata of every JSON type and full provenance, so each
// stored column carries something.
func goldenCorpus(t *testing.T) ([]*document.Document, []string, [][]float32, embed.ModelInfo) {
	t.Helper()
	kc := kwbench.DefaultConfig()
	kc.Docs, kc.Queries = 3000, 20
	corpus := kwbench.Generate(kc)
	emb, err := hash.New(hash.Config{Dimension: 128})
	if err != nil {
		t.Fatal(err)
	}
	docs := make([]*document.Document, len(corpus.Docs))
	texts := make([]string, len(corpus.Docs))
	for i, d := range corpus.Docs {
		doc := document.New(d.Text)
		doc.ID = d.ID
		doc.SourceType, doc.SourceName = document.SourceFile, fmt.Sprintf("dir/file-%03d.md", i/10)
		doc.Metadata = map[string]any{
			"n":     int64(i),
			"ratio": float64(i) / 7,
			"even":  i%2 == 0,
			"tags":  []any{fmt.Sprint("t", i%5), fmt.Sprint("u", i%3)},
			"title": fmt.Sprintf("Chunk «%d»", i),
		}
		doc.Provenance = document.Provenance{Source: doc.SourceName, LineStart: i%10*4 + 1, LineEnd: i%10*4 + 4,
			HeadingPath: []string{"Part", fmt.Sprint("Section ", i%7)}, CharStart: i % 10 * 100, CharEnd: i%10*100 + len(d.Text),
			ChunkIndex: i % 10, ChunkCount: 10}
		docs[i] = doc
		texts[i] = d.Text
	}
	vecs, err := embed.Batched{Embedder: emb}.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range docs {
		docs[i].Embedding = vecs[i]
	}
	qs := make([]string, len(corpus.Queries))
	for i, q := range corpus.Queries {
		qs[i] = q.Text
	}
	qv, err := embed.Batched{Embedder: emb}.Embed(context.Background(), qs)
	if err != nil {
		t.Fatal(err)
	}
	return docs, qs, qv, emb.Model()
}

// TestHitsMatchGolden holds the embedded store to the hit lists recorded
// from an earlier build (testdata/hits.golden.json): every mode, with and
// without a filter and with and without vectors, must give the same ids,
// the same score bits and the same bytes in every hit. A change to how rows
// are laid out or read must leave all of it alone; `go test -run
// TestHitsMatchGolden -update` rewrites the file when results are meant to
// change.
func TestHitsMatchGolden(t *testing.T) {
	if runtime.GOARCH != "amd64" || !cpu.X86.HasAVX2 || !cpu.X86.HasFMA {
		// Scores are compared bit for bit, and the distance kernels and
		// the compiler's fused multiply-adds round differently elsewhere.
		t.Skip("the golden hit lists were recorded with the amd64 AVX2/FMA kernels; this machine rounds differently")
	}
	ctx := context.Background()
	docs, qs, qv, model := goldenCorpus(t)
	bk, err := embedded.Open(ctx, t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := store.New(bk)
	defer s.Close()
	schema := &document.Schema{Fields: []document.Field{{Name: "n", Type: document.TypeInteger, Filterable: true}, {Name: "tags", Type: document.TypeStringList, Filterable: true}}}
	c, err := s.EnsureCollection(ctx, store.CollectionConfig{Name: "golden", Model: model, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	for start := 0; start < len(docs); start += 500 {
		if err := c.Upsert(ctx, docs[start:min(start+500, len(docs))]); err != nil {
			t.Fatal(err)
		}
	}
	f := filter.And(filter.Gte("n", 1000), filter.ContainsAny("tags", "t1", "t2"))
	got := map[string][]goldenHit{}
	for _, mode := range []store.Mode{store.ModeKeyword, store.ModeVector, store.ModeHybrid} {
		for _, filtered := range []bool{false, true} {
			for _, vectors := range []bool{false, true} {
				for i := range qs {
					req := store.SearchRequest{Mode: mode, TopK: 10, Vectors: vectors}
					if mode != store.ModeVector {
						req.Query = qs[i]
					}
					if mode != store.ModeKeyword {
						req.Embedding = qv[i]
					}
					if filtered {
						req.Filter = f
					}
					hits, err := c.Search(ctx, req)
					if err != nil {
						t.Fatal(err)
					}
					key := fmt.Sprintf("%s/filter=%v/vectors=%v/q%02d", mode, filtered, vectors, i)
					got[key] = goldenHits(t, hits)
				}
			}
		}
	}
	path := filepath.Join("testdata", "hits.golden.json")
	if *updateGolden {
		b, err := json.MarshalIndent(got, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string][]goldenHit
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if len(want) != len(got) {
		t.Fatalf("%d result lists, the golden file has %d", len(got), len(want))
	}
	for key, w := range want {
		g := got[key]
		if len(g) != len(w) {
			t.Errorf("%s: %d hits, want %d", key, len(g), len(w))
			continue
		}
		for i := range w {
			if g[i] != w[i] {
				t.Errorf("%s: hit %d is %+v, want %+v", key, i, g[i], w[i])
			}
		}
	}
}

func goldenHits(t *testing.T, hits []store.Hit) []goldenHit {
	t.Helper()
	out := make([]goldenHit, len(hits))
	for i, h := range hits {
		d := h.Doc
		b, err := json.Marshal(struct {
			Content, SourceType, SourceName string
			Metadata                        map[string]any
			Provenance                      document.Provenance
			Embedding                       []float32
		}{d.Content, d.SourceType, d.SourceName, d.Metadata, d.Provenance, d.Embedding})
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		out[i] = goldenHit{ID: d.ID, Score: fmt.Sprintf("%016x", math.Float64bits(d.Score)), Digest: hex.EncodeToString(sum[:8])}
	}
	return out
}
