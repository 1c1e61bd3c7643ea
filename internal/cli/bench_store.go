package cli

import (
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry/internal/storebench"
)

func newBenchStoreCmd(stdio IO) *cobra.Command {
	var (
		cfg    storebench.Config
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Index a synthetic corpus in the embedded store; time opening and each search mode",
		Long: `Index a synthetic corpus (Zipf vocabulary, hash embeddings) in the embedded store until it
is queryable and checkpointed, then time opening from the checkpoint against opening by
replaying rows, and the p50/p99 latency of keyword, vector and hybrid search with the
queries interleaved. Hybrid is reported against the slower of its two branches.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			log := stdio.Err
			rep, err := storebench.Run(cmd.Context(), cfg, log)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(stdio.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&cfg.Docs, "docs", 100_000, "documents (one chunk each)")
	cmd.Flags().IntVar(&cfg.Queries, "queries", 2000, "queries per mode")
	cmd.Flags().IntVar(&cfg.K, "k", 10, "results per query")
	cmd.Flags().Uint64Var(&cfg.Seed, "seed", 1, "corpus seed")
	cmd.Flags().StringVar(&cfg.Dir, "dir", "", "knowledge base directory to keep (default: a temporary one)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}
