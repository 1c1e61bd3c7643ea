package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry/eval"
)

type evalReport struct {
	Dataset string             `json:"dataset"`
	Docs    int                `json:"docs"`
	Queries int                `json:"queries"`
	Embeder string             `json:"embedder"`
	Configs []evalConfigReport `json:"configs"`
	Gates   []evalGateReport   `json:"gates,omitempty"`
}

type evalConfigReport struct {
	Name    string             `json:"name"`
	Mean    map[string]float64 `json:"mean"`
	Seconds float64            `json:"seconds"`
}

type evalGateReport struct {
	Gate   string  `json:"gate"`
	Config string  `json:"config"`
	Value  float64 `json:"value"`
	Pass   bool    `json:"pass"`
}

func newEvalCmd(stdio IO) *cobra.Command {
	var (
		f       kbFlags
		beir    string
		modes   []string
		topK    int
		asJSON  bool
		gates   []string
		metrics []string
		golden  goldenFlags
	)
	cmd := &cobra.Command{
		Use:   "eval --beir DIR | --golden FILE",
		Short: "Measure retrieval quality on a BEIR-layout dataset, or answer quality on a golden set",
		Long: `Measure retrieval quality on a BEIR-layout dataset (corpus.jsonl, queries.jsonl,
qrels/test.tsv). Documents are indexed unsplit, one chunk each, with the title as its own
keyword field, in a scratch knowledge base with the configured embedder. Metrics follow
trec_eval: linear gain, only judged queries count, ties broken by document id.
--gate sets the exit code: 3 when a gate fails on the first mode.

--golden FILE answers each question of a golden set (JSONL: question, reference, sources) with
the ask pipeline and scores the answers on faithfulness, answer_relevancy and
contextual_precision, with the deterministic judge (no model, for CI) or an LLM judge.
--corpus DIR ingests a folder into a scratch knowledge base first; --compare runs other
post-processing configurations side by side; --report writes a self-contained HTML report;
--gate 'faithfulness>=0.85' applies to the first configuration.`,
		Example: `  quarry eval --beir ../shared/data/scifact --mode all
  quarry eval --beir ../shared/data/cranfield --mode keyword --gate 'ndcg@10>=0.33'
  quarry eval --golden eval/testdata/golden/docs.jsonl --corpus docs --gate 'faithfulness>=0.85' --report report.html
  quarry eval --golden golden.jsonl --judge llm --judge-model openai:gpt-4o-mini --compare rerank=cohere,pack=4000`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if golden.golden != "" {
				if beir != "" {
					return usageErr(errors.New("eval: --beir and --golden are separate runs; give one"))
				}
				mode, k := "", 0
				if cmd.Flags().Changed("mode") && len(modes) > 0 {
					mode = modes[0]
				}
				if cmd.Flags().Changed("top-k") {
					k = topK
				}
				return runGolden(cmd, stdio, &f, &golden, mode, k, gates, asJSON)
			}
			if beir == "" {
				return usageErr(errors.New("eval: --beir DIR or --golden FILE is required"))
			}
			var ms []eval.Metric
			for _, m := range metrics {
				mm, err := eval.ParseMetric(m)
				if err != nil {
					return usageErr(err)
				}
				ms = append(ms, mm)
			}
			var gs []eval.Gate
			for _, g := range gates {
				gg, err := eval.ParseGate(g)
				if err != nil {
					return usageErr(err)
				}
				gs = append(gs, gg)
				ms = appendMetric(ms, gg.Metric)
			}
			cfgs, err := eval.ParseConfigs(modes)
			if err != nil {
				return usageErr(err)
			}
			ds, err := eval.LoadBEIR(beir)
			if err != nil {
				return err
			}
			cleanup, err := f.scratch("quarry-eval-")
			if err != nil {
				return err
			}
			defer cleanup()
			ctx := cmd.Context()
			if f.collection == "" {
				f.collection = "eval"
			}
			k, err := openKB(ctx, &f, true)
			if err != nil {
				return err
			}
			defer k.Close()
			coll, err := collection(ctx, k, true, nil)
			if err != nil {
				return err
			}
			if n, _ := coll.Count(ctx, nil); n != len(ds.Corpus) {
				if err := eval.IndexCorpus(ctx, coll, k.Embedder(), ds.Corpus, 0); err != nil {
					return err
				}
			}
			rep := evalReport{Dataset: beir, Docs: len(ds.Corpus), Queries: len(ds.Queries), Embeder: k.Embedder().Model().String()}
			var first eval.Result
			for i, c := range cfgs {
				start := time.Now()
				run, err := eval.Retrieve(ctx, coll, k.Embedder(), ds.Queries, c, topK)
				if err != nil {
					return err
				}
				res := eval.Evaluate(ds.Qrels, run, ms...)
				if i == 0 {
					first = res
					rep.Queries = res.Queries
				}
				rep.Configs = append(rep.Configs, evalConfigReport{Name: c.Name, Mean: res.Mean, Seconds: time.Since(start).Seconds()})
			}
			failed := false
			for _, g := range gs {
				pass := g.Pass(first)
				failed = failed || !pass
				rep.Gates = append(rep.Gates, evalGateReport{Gate: g.String(), Config: cfgs[0].Name, Value: first.Mean[g.Metric.String()], Pass: pass})
			}
			if asJSON {
				enc := json.NewEncoder(stdio.Out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else {
				printEval(stdio, rep, ms)
			}
			if failed {
				return &ExitError{Code: ExitGate, Err: errors.New("a quality gate failed")}
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&beir, "beir", "", "BEIR-layout dataset directory")
	cmd.Flags().StringSliceVar(&modes, "mode", []string{"keyword"}, "configurations: keyword, vector, hybrid, hybrid-vw0.3, hybrid-convex, or all")
	cmd.Flags().IntVar(&topK, "top-k", 100, "results per query")
	cmd.Flags().StringSliceVar(&metrics, "metric", []string{"ndcg@10", "recall@100", "mrr@10", "map", "p@10"}, "metrics to report")
	cmd.Flags().StringArrayVar(&gates, "gate", nil, "fail (exit 3) unless the first mode meets this, e.g. 'ndcg@10>=0.67'")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	golden.register(cmd)
	return cmd
}

func appendMetric(ms []eval.Metric, m eval.Metric) []eval.Metric {
	for _, x := range ms {
		if x.String() == m.String() {
			return ms
		}
	}
	return append(ms, m)
}

func printEval(stdio IO, rep evalReport, ms []eval.Metric) {
	fmt.Fprintf(stdio.Out, "%s: %d documents, %d judged queries, embedder %s\n\n", rep.Dataset, rep.Docs, rep.Queries, rep.Embeder)
	tw := tabwriter.NewWriter(stdio.Out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "config\t")
	for _, m := range ms {
		fmt.Fprintf(tw, "%s\t", m)
	}
	fmt.Fprintln(tw, "seconds\t")
	for _, c := range rep.Configs {
		fmt.Fprintf(tw, "%s\t", c.Name)
		for _, m := range ms {
			fmt.Fprintf(tw, "%.4f\t", c.Mean[m.String()])
		}
		fmt.Fprintf(tw, "%.1f\t\n", c.Seconds)
	}
	tw.Flush()
	for _, g := range rep.Gates {
		verdict := "pass"
		if !g.Pass {
			verdict = "FAIL"
		}
		fmt.Fprintf(stdio.Out, "gate %s on %s: %.4f %s\n", g.Gate, g.Config, g.Value, verdict)
	}
}
