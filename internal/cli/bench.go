package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry/internal/annbench"
)

func newBenchCmd(stdio IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure Quarry's indexes on generated workloads",
		Long: `Measure Quarry's indexes on generated workloads. Every figure is reported
beside a reference measured in the same run.`,
	}
	cmd.AddCommand(newBenchANNCmd(stdio))
	cmd.AddCommand(newBenchKeywordCmd(stdio))
	cmd.AddCommand(newBenchStoreCmd(stdio))
	return cmd
}

func newBenchANNCmd(stdio IO) *cobra.Command {
	cfg := annbench.DefaultConfig()
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ann",
		Short: "Benchmark vector search: exact scans and HNSW on clustered vectors",
		Long: `Benchmark vector search on a mixture of Gaussian clusters (unit vectors) with
held-out queries and exact ground truth from the exact scan.

Reports the exact scan (float32 SIMD and int8 with float32 re-scoring) against a
plain scalar loop, HNSW build rate (inserts/s, one thread), memory per vector
(RSS growth over the build divided by n), and recall@k and QPS (one thread) for
a sweep of ef, walking the same graph on float32 vectors and on int8 codes (the
default, re-scored in float32). With --filter-selectivity, each selectivity gets
a random allow-set and a sweep scored against the exact filtered ground truth.
--export writes the data in TEXMEX format (base.fvecs, query.fvecs, gt.ivecs)
for the peer benchmarks in bench/.`,
		Example: `  quarry bench ann --n 20000
  quarry bench ann --n 100000 --filter-selectivity 0.5,0.1,0.01,0.001 --export /tmp/ann`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cfg.Check(); err != nil {
				return usageErr(fmt.Errorf("bench ann: %w", err))
			}
			rep, err := annbench.Run(cmd.Context(), cfg, stdio.Err)
			if err != nil {
				return fmt.Errorf("bench ann: %w", err)
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
	f.IntVar(&cfg.N, "n", cfg.N, "base vectors")
	f.IntVar(&cfg.Dim, "dim", cfg.Dim, "dimension")
	f.IntVar(&cfg.Queries, "queries", cfg.Queries, "held-out queries")
	f.IntVar(&cfg.Clusters, "clusters", cfg.Clusters, "Gaussian clusters")
	f.Float64Var(&cfg.Sigma, "sigma", cfg.Sigma, "per-coordinate standard deviation around each unit centre")
	f.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed for data, allow-sets and HNSW levels")
	f.IntVar(&cfg.K, "k", cfg.K, "neighbours per query (recall@k)")
	f.Float64SliceVar(&cfg.Selectivities, "filter-selectivity", nil, "allowed fractions to benchmark filtered search at, e.g. 0.5,0.1,0.01")
	f.IntVar(&cfg.Threads, "threads", cfg.Threads, "goroutines for exact scans and ground truth (HNSW runs on one)")
	f.IntVar(&cfg.M, "m", cfg.M, "HNSW M")
	f.IntVar(&cfg.EfConstruction, "ef-construction", cfg.EfConstruction, "HNSW efConstruction")
	f.IntSliceVar(&cfg.Efs, "ef", cfg.Efs, "search ef values to sweep")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.StringVar(&cfg.Export, "export", "", "write base.fvecs, query.fvecs and gt.ivecs to this directory")
	f.IntVar(&cfg.BuildThreads, "build-threads", 0, "also build the index again on this many goroutines (hnsw AddBatch) and sweep it")
	f.StringVar(&cfg.MapDir, "map-dir", "", "directory of the mapped-vector pass's scratch file (default: the system's temporary directory)")
	return cmd
}
