package kwbench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/quarry-rag/quarry/eval"
	"github.com/quarry-rag/quarry/index/bm25"
)

// Config is one benchmark run. DefaultConfig holds the workload.
type Config struct {
	Docs     int     `json:"docs"`
	Vocab    int     `json:"vocab"`
	Zipf     float64 `json:"zipf"`   // exponent s of P(rank r) ∝ r^−s, for words and query terms
	MinLen   int     `json:"minLen"` // words per document, drawn uniformly in [MinLen, MaxLen]
	MaxLen   int     `json:"maxLen"`
	Queries  int     `json:"queries"`
	MinTerms int     `json:"minTerms"` // distinct terms per query, uniform in [MinTerms, MaxTerms]
	MaxTerms int     `json:"maxTerms"`
	Seed     uint64  `json:"seed"`
	K        int     `json:"k"`
	// Passes is the number of timed passes over the queries, after one
	// untimed warm-up pass; a query's latency is its fastest pass.
	Passes int `json:"passes"`
	// Data, when set, is a directory with corpus.jsonl and queries.jsonl
	// to read instead of generating.
	Data string `json:"data,omitempty"`
	// Export, when set, receives corpus.jsonl, queries.jsonl and
	// quarry.run (Quarry's top k per query, TREC run format) for the peer
	// benchmarks in bench/peers.
	Export string `json:"export,omitempty"`
}

// DefaultConfig is the reference workload: 100k documents of 50–150 words
// over a 50k-word Zipf vocabulary, 1,000 queries of 2–5 terms, top 10.
func DefaultConfig() Config {
	return Config{
		Docs: 100_000, Vocab: 50_000, Zipf: 1, MinLen: 50, MaxLen: 150,
		Queries: 1000, MinTerms: 2, MaxTerms: 5, Seed: 1, K: 10, Passes: 3,
	}
}

// Check reports the first invalid setting.
func (c Config) Check() error {
	switch {
	case c.Data == "" && (c.Docs <= 0 || c.Vocab <= 0 || c.Queries <= 0):
		return errors.New("docs, vocab and queries must be positive")
	case c.Data == "" && (c.MinLen < 1 || c.MaxLen < c.MinLen):
		return errors.New("document lengths need 1 ≤ min-len ≤ max-len")
	case c.Data == "" && (c.MinTerms < 1 || c.MaxTerms < c.MinTerms || c.MaxTerms > c.Vocab):
		return errors.New("query terms need 1 ≤ min-terms ≤ max-terms ≤ vocab")
	case c.Data == "" && !(c.Zipf > 0):
		return errors.New("zipf exponent must be positive")
	case c.K <= 0 || c.Passes <= 0:
		return errors.New("k and passes must be positive")
	}
	return nil
}

// Report is the outcome of a run. Latencies are per query, one thread, each
// the query's fastest timed pass; QPS is the inverse of their mean.
type Report struct {
	Config       Config  `json:"config"`
	Docs         int     `json:"docs"`
	Queries      int     `json:"queries"`
	Terms        int     `json:"terms"`
	BuildSeconds float64 `json:"buildSeconds"`
	DocsPerSec   float64 `json:"docsPerSec"`
	HeapMB       float64 `json:"heapMB"` // live heap after the build, corpus text included
	P50Micros    float64 `json:"p50Micros"`
	P99Micros    float64 `json:"p99Micros"`
	MeanMicros   float64 `json:"meanMicros"`
	QPS          float64 `json:"qps"`
	MeanHits     float64 `json:"meanHits"`
}

// Run builds the index and times the queries. Progress lines go to log.
func Run(ctx context.Context, cfg Config, log io.Writer) (*Report, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	var c *Corpus
	if cfg.Data != "" {
		fmt.Fprintf(log, "reading %s\n", cfg.Data)
		var err error
		if c, err = Load(cfg.Data); err != nil {
			return nil, err
		}
	} else {
		fmt.Fprintf(log, "generating %d documents and %d queries (seed %d)\n", cfg.Docs, cfg.Queries, cfg.Seed)
		c = Generate(cfg)
	}
	if cfg.Export != "" {
		if err := c.Export(cfg.Export); err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "exported corpus.jsonl and queries.jsonl to %s\n", cfg.Export)
	}
	rep := &Report{Config: cfg, Docs: len(c.Docs), Queries: len(c.Queries)}

	x, err := bm25.New(bm25.Config{})
	if err != nil {
		return nil, err
	}
	runtime.GC()
	start := time.Now()
	for i, d := range c.Docs {
		if i%10000 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if err := x.Add(uint32(i), bm25.Doc{ID: d.ID, Title: d.Title, Text: d.Text}); err != nil {
			return nil, err
		}
	}
	build := time.Since(start)
	rep.BuildSeconds = build.Seconds()
	rep.DocsPerSec = float64(len(c.Docs)) / build.Seconds()
	rep.Terms = x.Terms()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rep.HeapMB = float64(ms.HeapAlloc) / (1 << 20)
	fmt.Fprintf(log, "built the index in %.2fs\n", rep.BuildSeconds)

	texts := make([]string, len(c.Queries))
	for i, q := range c.Queries {
		texts[i] = q.Text
	}
	hits := 0
	for _, q := range texts { // warm-up, untimed
		hits += len(x.Search(q, cfg.K, bm25.SearchOptions{}))
	}
	rep.MeanHits = float64(hits) / float64(len(texts))
	// Each query's latency is its fastest of the timed passes: on a shared
	// machine that filters out preemption by other work, the same way for
	// Quarry and its peers.
	lat := make([]time.Duration, len(texts))
	for p := range cfg.Passes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for i, q := range texts {
			t := time.Now()
			x.Search(q, cfg.K, bm25.SearchOptions{})
			if d := time.Since(t); p == 0 || d < lat[i] {
				lat[i] = d
			}
		}
	}
	var total time.Duration
	for _, d := range lat {
		total += d
	}
	slices.Sort(lat)
	rep.P50Micros = micros(Percentile(lat, 50))
	rep.P99Micros = micros(Percentile(lat, 99))
	rep.MeanMicros = micros(total) / float64(len(lat))
	rep.QPS = float64(len(lat)) / total.Seconds()

	if cfg.Export != "" {
		if err := writeRun(filepath.Join(cfg.Export, "quarry.run"), x, c.Queries, cfg.K); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// Percentile is the nearest-rank p-th percentile of sorted latencies: the
// smallest value with at least p% of the values at or below it. The peer
// programs compute it the same way.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p/100+0.9999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// writeRun writes the top k of every query in TREC run format, so a peer
// can measure how far its ranking agrees with Quarry's.
func writeRun(path string, x *bm25.Index, qs []eval.Query, k int) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write run: %w", err)
	}
	w := bufio.NewWriter(f)
	for _, q := range qs {
		for i, h := range x.Search(q.Text, k, bm25.SearchOptions{}) {
			fmt.Fprintf(w, "%s Q0 %s %d %.6f quarry\n", q.ID, h.ID, i+1, h.Score)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("write run %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write run %s: %w", path, err)
	}
	return nil
}

// WriteTable prints the report for people.
func (r *Report) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "keyword search, BM25 top-%d, disjunctive, 1 thread\n", r.Config.K)
	fmt.Fprintf(w, "  corpus   %d documents, %d terms, %d queries (fastest of %d passes each)\n", r.Docs, r.Terms, r.Queries, r.Config.Passes)
	fmt.Fprintf(w, "  build    %.2f s (%.0f docs/s), heap %.0f MB\n", r.BuildSeconds, r.DocsPerSec, r.HeapMB)
	fmt.Fprintf(w, "  latency  p50 %.1f µs, p99 %.1f µs, mean %.1f µs\n", r.P50Micros, r.P99Micros, r.MeanMicros)
	fmt.Fprintf(w, "  QPS      %.0f (mean hits %.1f)\n", r.QPS, r.MeanHits)
}
