package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry/internal/kwbench"
)

func newBenchKeywordCmd(stdio IO) *cobra.Command {
	cfg := kwbench.DefaultConfig()
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "keyword",
		Short: "Benchmark keyword search: BM25 top-k on a synthetic Zipf corpus",
		Long: `Benchmark keyword search on a synthetic corpus: documents of words drawn from
a Zipf vocabulary, queries of a few terms drawn from the same distribution,
disjunctive BM25 top-k with Quarry's default English analyzer, one thread.

Reports the index build time and the per-query latency (p50, p99, mean) and
QPS, each query timed at its fastest of the passes that follow one warm-up
pass (the machine may be shared; peers are measured the same way). --export writes the
corpus and queries in BEIR layout (corpus.jsonl, queries.jsonl) and Quarry's
own top k (quarry.run) for the peer benchmarks in bench/; --data reads such
a directory instead of generating, so Quarry and its peers measure the same
files.`,
		Example: `  quarry bench keyword
  quarry bench keyword --export /tmp/kw --json > /tmp/kw/quarry.json
  quarry bench keyword --data /tmp/kw`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cfg.Check(); err != nil {
				return usageErr(fmt.Errorf("bench keyword: %w", err))
			}
			rep, err := kwbench.Run(cmd.Context(), cfg, stdio.Err)
			if err != nil {
				return fmt.Errorf("bench keyword: %w", err)
			}
			if asJSON {
				enc := json.NewEncoder(stdio.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			rep.WriteTable(stdio.Out)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Docs, "docs", cfg.Docs, "documents to generate")
	f.IntVar(&cfg.Vocab, "vocab", cfg.Vocab, "distinct words in the Zipf vocabulary")
	f.Float64Var(&cfg.Zipf, "zipf", cfg.Zipf, "Zipf exponent s: P(rank r) ∝ r^-s")
	f.IntVar(&cfg.MinLen, "min-len", cfg.MinLen, "fewest words in a document")
	f.IntVar(&cfg.MaxLen, "max-len", cfg.MaxLen, "most words in a document")
	f.IntVar(&cfg.Queries, "queries", cfg.Queries, "queries to generate")
	f.IntVar(&cfg.MinTerms, "min-terms", cfg.MinTerms, "fewest terms in a query")
	f.IntVar(&cfg.MaxTerms, "max-terms", cfg.MaxTerms, "most terms in a query")
	f.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed for documents and queries")
	f.IntVar(&cfg.K, "k", cfg.K, "results per query")
	f.IntVar(&cfg.Passes, "passes", cfg.Passes, "timed passes over the queries (after one warm-up pass)")
	f.StringVar(&cfg.Data, "data", "", "read corpus.jsonl and queries.jsonl from this directory instead of generating")
	f.StringVar(&cfg.Export, "export", "", "write corpus.jsonl, queries.jsonl and quarry.run to this directory")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}
