// Package storebench measures the embedded store end to end on a synthetic
// corpus: bulk indexing until the indexes are queryable and checkpointed,
// opening from a checkpoint against opening by replaying rows, and query
// latency per search mode. Numbers are reported next to references measured
// in the same run (the slower single branch for hybrid, replay for open).
package storebench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/embed/hash"
	"github.com/quarry-rag/quarry/eval"
	"github.com/quarry-rag/quarry/internal/kwbench"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/embedded"
)

// Config is one run. Zero values mean the defaults of the workload.
type Config struct {
	Docs    int    `json:"docs"`    // 100,000
	Queries int    `json:"queries"` // 2,000
	K       int    `json:"k"`       // 10
	Seed    uint64 `json:"seed"`    // 1
	// Dir holds the knowledge base; a temporary directory when empty.
	Dir string `json:"dir,omitempty"`
}

// Latency is one mode's query latency.
type Latency struct {
	P50us float64 `json:"p50_us"`
	P99us float64 `json:"p99_us"`
	QPS   float64 `json:"qps"`
}

// Report is the outcome of a run.
type Report struct {
	Config         Config  `json:"config"`
	IndexSeconds   float64 `json:"index_seconds"`
	IndexRate      float64 `json:"index_docs_per_second"`
	OpenCheckpoint float64 `json:"open_checkpoint_seconds"`
	// FirstKeyword and FirstVector are an open from the checkpoint and
	// one search of that mode: what a CLI search pays before its answer.
	FirstKeyword float64            `json:"first_keyword_seconds"`
	FirstVector  float64            `json:"first_vector_seconds"`
	OpenReplay   float64            `json:"open_replay_seconds"`
	OpenRatio    float64            `json:"open_ratio"`
	Latency      map[string]Latency `json:"latency"`
	// HybridRatio is hybrid p50 over the slower branch's p50.
	HybridRatio float64 `json:"hybrid_over_slower_branch_p50"`
}

// Run executes the benchmark, logging progress to log.
func Run(ctx context.Context, cfg Config, log io.Writer) (*Report, error) {
	if cfg.Docs <= 0 {
		cfg.Docs = 100_000
	}
	if cfg.Queries <= 0 {
		cfg.Queries = 2000
	}
	if cfg.K <= 0 {
		cfg.K = 10
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "quarry-storebench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	kc := kwbench.DefaultConfig()
	kc.Docs, kc.Queries, kc.Seed = cfg.Docs, cfg.Queries, cfg.Seed
	corpus := kwbench.Generate(kc)
	emb, err := hash.New(hash.Config{})
	if err != nil {
		return nil, err
	}
	rep := &Report{Config: cfg, Latency: map[string]Latency{}}

	fmt.Fprintf(log, "indexing %d documents into %s\n", cfg.Docs, dir)
	start := time.Now()
	s, b, coll, err := open(ctx, dir, emb)
	if err != nil {
		return nil, err
	}
	if err := eval.IndexCorpus(ctx, coll, emb, corpus.Docs, 2000); err != nil {
		return nil, err
	}
	if err := b.Checkpoint(ctx); err != nil {
		return nil, err
	}
	rep.IndexSeconds = time.Since(start).Seconds()
	rep.IndexRate = float64(cfg.Docs) / rep.IndexSeconds
	fmt.Fprintf(log, "indexed in %.1fs (%.0f docs/s, queryable and checkpointed)\n", rep.IndexSeconds, rep.IndexRate)
	if err := s.Close(); err != nil {
		return nil, err
	}

	vecs, err := embed.Batched{Embedder: emb}.Embed(ctx, queryTexts(corpus))
	if err != nil {
		return nil, err
	}
	// Open from the checkpoint and answer one search, then open by replay
	// (checkpoint removed). An open reads an index only when a search
	// first needs it, so the checkpoint's figure is an open and a hybrid
	// search, which reads them all; a keyword or a vector search alone
	// reads less.
	first := func(m store.Mode) (float64, error) {
		runtime.GC() // the last open's indexes are garbage: collect them outside the timing
		start := time.Now()
		s, _, coll, err := open(ctx, dir, emb)
		if err != nil {
			return 0, err
		}
		defer s.Close()
		req := store.SearchRequest{Mode: m, TopK: cfg.K}
		if m != store.ModeVector {
			req.Query = corpus.Queries[0].Text
		}
		if m != store.ModeKeyword {
			req.Embedding = vecs[0]
		}
		if _, err := coll.Search(ctx, req); err != nil {
			return 0, err
		}
		return time.Since(start).Seconds(), nil
	}
	if rep.OpenCheckpoint, err = first(store.ModeHybrid); err != nil {
		return nil, err
	}
	if rep.FirstKeyword, err = first(store.ModeKeyword); err != nil {
		return nil, err
	}
	if rep.FirstVector, err = first(store.ModeVector); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "open with checkpoint and a hybrid search: %.3fs (a keyword search: %.3fs, a vector search: %.3fs)\n",
		rep.OpenCheckpoint, rep.FirstKeyword, rep.FirstVector)
	if err := os.RemoveAll(filepath.Join(dir, "index")); err != nil {
		return nil, err
	}
	start = time.Now()
	s, _, coll, err = open(ctx, dir, emb)
	if err != nil {
		return nil, err
	}
	if _, err := coll.Count(ctx, nil); err != nil {
		return nil, err
	}
	rep.OpenReplay = time.Since(start).Seconds()
	rep.OpenRatio = rep.OpenCheckpoint / rep.OpenReplay
	fmt.Fprintf(log, "open by replay: %.3fs (checkpoint/replay = %.3f)\n", rep.OpenReplay, rep.OpenRatio)
	defer s.Close()

	modes := []store.Mode{store.ModeKeyword, store.ModeVector, store.ModeHybrid}
	// Interleave modes per query so machine noise hits all of them alike.
	lat := map[store.Mode][]time.Duration{}
	for pass := range 2 {
		for i, q := range corpus.Queries {
			for _, m := range modes {
				req := store.SearchRequest{Mode: m, TopK: cfg.K}
				if m != store.ModeVector {
					req.Query = q.Text
				}
				if m != store.ModeKeyword {
					req.Embedding = vecs[i]
				}
				t0 := time.Now()
				if _, err := coll.Search(ctx, req); err != nil {
					return nil, err
				}
				if pass == 1 { // the first pass warms caches
					lat[m] = append(lat[m], time.Since(t0))
				}
			}
		}
	}
	for _, m := range modes {
		d := lat[m]
		var total time.Duration
		for _, x := range d {
			total += x
		}
		slices.Sort(d)
		rep.Latency[string(m)] = Latency{
			P50us: float64(kwbench.Percentile(d, 50).Microseconds()),
			P99us: float64(kwbench.Percentile(d, 99).Microseconds()),
			QPS:   float64(len(d)) / total.Seconds(),
		}
		fmt.Fprintf(log, "%-8s p50 %6.0fµs  p99 %6.0fµs  %6.0f q/s\n", m, rep.Latency[string(m)].P50us, rep.Latency[string(m)].P99us, rep.Latency[string(m)].QPS)
	}
	slower := max(rep.Latency["keyword"].P50us, rep.Latency["vector"].P50us)
	rep.HybridRatio = rep.Latency["hybrid"].P50us / slower
	fmt.Fprintf(log, "hybrid p50 / slower branch p50 = %.3f\n", rep.HybridRatio)
	return rep, nil
}

func open(ctx context.Context, dir string, emb embed.Embedder) (*store.Store, *embedded.Backend, *store.Collection, error) {
	b, err := embedded.Open(ctx, dir, embedded.Options{})
	if err != nil {
		return nil, nil, nil, err
	}
	s := store.New(b)
	c, err := s.EnsureCollection(ctx, store.CollectionConfig{Name: "bench", Model: emb.Model()})
	if err != nil {
		s.Close()
		return nil, nil, nil, err
	}
	return s, b, c, nil
}

func queryTexts(c *kwbench.Corpus) []string {
	out := make([]string, len(c.Queries))
	for i, q := range c.Queries {
		out[i] = q.Text
	}
	return out
}
