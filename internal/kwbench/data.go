// Package kwbench is the keyword-search benchmark behind `quarry bench
// keyword`: a synthetic Zipf corpus, its export in BEIR layout for the peer
// engines in bench/peers, and single-threaded latency measurements of
// index/bm25.
package kwbench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/quarry-rag/quarry/eval"
)

// Corpus is a benchmark's documents and queries.
type Corpus struct {
	Docs    []eval.Doc
	Queries []eval.Query
}

// Word is the synthetic word of frequency rank r (0 is the most frequent):
// two or more consonant-vowel syllables, the base-39 digits of r. Only the
// vowels a, o and u are used, so no Porter or Snowball English rule changes
// a word and none is a stop word: every engine indexes exactly these terms.
func Word(r int) string {
	const cons, vowels = "bdfgklmnprtvz", "aou"
	b := make([]byte, 0, 8)
	for i := 0; i < 2 || r > 0; i++ {
		d := r % 39
		r /= 39
		b = append(b, cons[d/3], vowels[d%3])
	}
	return string(b)
}

// zipf draws ranks in [0, n) with P(r) ∝ (r+1)^−s by inverting the CDF.
type zipf struct{ cdf []float64 }

func newZipf(n int, s float64) *zipf {
	cdf := make([]float64, n)
	sum := 0.0
	for r := range n {
		sum += math.Pow(float64(r+1), -s)
		cdf[r] = sum
	}
	for r := range cdf {
		cdf[r] /= sum
	}
	return &zipf{cdf: cdf}
}

func (z *zipf) draw(rng *rand.Rand) int {
	r, _ := slices.BinarySearch(z.cdf, rng.Float64())
	return min(r, len(z.cdf)-1)
}

// Generate builds the corpus cfg describes. Documents and queries come from
// separate random streams of the seed, so changing the number of documents
// leaves the queries alone.
func Generate(cfg Config) *Corpus {
	words := make([]string, cfg.Vocab)
	for r := range words {
		words[r] = Word(r)
	}
	z := newZipf(cfg.Vocab, cfg.Zipf)
	c := &Corpus{Docs: make([]eval.Doc, cfg.Docs), Queries: make([]eval.Query, cfg.Queries)}
	rng := rand.New(rand.NewPCG(cfg.Seed, 1))
	var b strings.Builder
	for i := range c.Docs {
		n := cfg.MinLen + rng.IntN(cfg.MaxLen-cfg.MinLen+1)
		b.Reset()
		for j := range n {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[z.draw(rng)])
		}
		c.Docs[i] = eval.Doc{ID: fmt.Sprintf("d%07d", i), Text: b.String()}
	}
	rng = rand.New(rand.NewPCG(cfg.Seed, 2))
	for i := range c.Queries {
		n := cfg.MinTerms + rng.IntN(cfg.MaxTerms-cfg.MinTerms+1)
		terms := make([]string, 0, n)
		for len(terms) < n {
			if w := words[z.draw(rng)]; !slices.Contains(terms, w) {
				terms = append(terms, w)
			}
		}
		c.Queries[i] = eval.Query{ID: fmt.Sprintf("q%04d", i), Text: strings.Join(terms, " ")}
	}
	return c
}

// Export writes dir/corpus.jsonl and dir/queries.jsonl (BEIR layout).
func (c *Corpus) Export(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := writeFile(filepath.Join(dir, "corpus.jsonl"), func(f *os.File) error { return eval.WriteCorpus(f, c.Docs) }); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, "queries.jsonl"), func(f *os.File) error { return eval.WriteQueries(f, c.Queries) })
}

// Load reads a corpus exported by Export (or any BEIR corpus and queries).
func Load(dir string) (*Corpus, error) {
	var c Corpus
	for _, part := range []struct {
		name string
		read func(*os.File) error
	}{
		{"corpus.jsonl", func(f *os.File) (err error) { c.Docs, err = eval.ReadCorpus(f); return err }},
		{"queries.jsonl", func(f *os.File) (err error) { c.Queries, err = eval.ReadQueries(f); return err }},
	} {
		path := filepath.Join(dir, part.name)
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("load: %w", err)
		}
		err = part.read(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", path, err)
		}
	}
	return &c, nil
}

func writeFile(path string, write func(*os.File) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("export %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("export %s: %w", path, err)
	}
	return nil
}
