package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/eval"
)

func newEvalCmd(stdio IO) *cobra.Command {
	var (
		f       kbFlags
		beir    string
		asJSON  bool
		topK    int
		modes   []string
		gates   []string
		metrics []string
		golden  quarry.AnswerEval
		model   string
		report  string
		quality qualityFlags
		corpora []string
		cal     quarry.CalibrateRequest
		calib   bool
	)
	cmd := &cobra.Command{
		Use:   "eval --beir DIR | --golden FILE | --calibrate",
		Short: "Measure retrieval quality on a BEIR-layout dataset, or answer quality on a golden set",
		Long: `Measure retrieval quality on a BEIR-layout dataset (corpus.jsonl, queries.jsonl,
qrels/test.tsv). Documents are indexed unsplit, one chunk each, with the title as its own
keyword field, in a scratch knowledge base with the configured embedder. Metrics follow
trec_eval: linear gain, only judged queries count, ties broken by document id.
--gate sets the exit code: 3 when a gate fails on the first mode.

--golden FILE answers each question of a golden set (JSONL: question, reference, sources,
answers, unanswerable) with the ask pipeline and scores the answers on faithfulness,
answer_relevancy and contextual_precision, with the deterministic judge (no model, for CI) or
an LLM judge; cases with answering sentences or marked unanswerable are also scored on
sentence_precision, sentence_recall, abstention, answered and markup, which need no judge.
--corpus DIR ingests a folder into a scratch knowledge base first (repeat it for several); --compare runs other
post-processing configurations side by side; --report writes a self-contained HTML report;
--gate 'faithfulness>=0.85' applies to the first configuration.

--calibrate measures which retrieval configuration (keyword, hybrid, hybrid with convex fusion
at a few vector weights) ranks the collection's own text best, on pseudo-queries drawn from its
chunks, and records the winner as the collection's search default (shown by quarry status);
the fixed rule is kept unless a configuration beats it clearly. With --golden FILE each
configuration's MRR@10 on the golden questions is shown beside it; with --beir DIR the
dataset is indexed in a scratch knowledge base and its nDCG@10 on the real judgements is
reported too; --corpus DIR calibrates a scratch knowledge base. --dry-run measures without
recording; --reset removes the calibration.`,
		Example: `  quarry eval --beir ../shared/data/scifact --mode all
  quarry eval --beir ../shared/data/cranfield --mode keyword --gate 'ndcg@10>=0.33'
  quarry eval --golden eval/testdata/golden/docs.jsonl --corpus docs --gate 'faithfulness>=0.85' --report report.html
  quarry eval --golden golden.jsonl --judge llm --judge-model openai:gpt-4o-mini --compare rerank=cohere,pack=4000
  quarry eval --calibrate
  quarry eval --calibrate --beir ../shared/data/scifact`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if calib {
				return runCalibrate(cmd, stdio, f, cal, beir, golden.Golden, corpora, modes, asJSON)
			}
			if (beir == "") == (golden.Golden == "") {
				return usageErr(errors.New("eval: give one of --beir DIR or --golden FILE"))
			}
			golden.Corpus = strings.Join(corpora, ", ")
			if golden.Golden == "" || golden.Corpus != "" {
				cleanup, err := f.scratch("quarry-eval-")
				if err != nil {
					return err
				}
				defer cleanup()
			}
			if beir != "" && f.collection == "" {
				f.collection = "eval"
			}
			k, err := openKB(ctx, &f, beir != "" || golden.Corpus != "",
				// The post-processors are each configuration's, not every answer's.
				quarry.WithTransforms(quality.transforms...), quarry.WithChatModelSpec(model))
			if err != nil {
				return err
			}
			defer k.Close()
			type evalReport interface {
				WriteTable(w io.Writer) error
				Failed() bool
			}
			var rep evalReport
			if beir != "" {
				rep, err = k.EvalRetrieval(ctx, quarry.RetrievalEval{Dataset: beir, Configs: modes, Metrics: metrics, Gates: gates, TopK: topK})
			} else {
				if golden.Corpus != "" {
					// Progress goes to stderr so --json output stays clean.
					if _, err := runIngest(ctx, IO{In: stdio.In, Out: stdio.Err, Err: stdio.Err}, k, quarry.IngestRequest{Paths: corpora}, false); err != nil {
						return err
					}
				}
				golden.Gates, golden.Post = gates, quality.post
				if cmd.Flags().Changed("mode") && len(modes) > 0 {
					golden.Mode = modes[0]
				}
				if cmd.Flags().Changed("top-k") {
					golden.TopK = topK
				}
				var ar *eval.AnswerReport
				if ar, err = k.EvalAnswers(ctx, golden); err == nil && report != "" {
					err = ar.WriteHTMLFile(report, time.Now())
				}
				rep = ar
			}
			if err != nil {
				return cliErr(err)
			}
			if asJSON {
				err = writeJSON(stdio, rep)
			} else {
				err = rep.WriteTable(stdio.Out)
			}
			if err != nil {
				return err
			}
			if report != "" && !asJSON {
				fmt.Fprintf(stdio.Out, "report: %s\n", report)
			}
			if rep.Failed() {
				return &ExitError{Code: ExitGate, Err: errors.New("a quality gate failed")}
			}
			return nil
		},
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&beir, "beir", "", "BEIR-layout dataset directory")
	fl.StringSliceVar(&modes, "mode", []string{"keyword"}, "configurations: keyword, vector, hybrid, hybrid-vw0.3, hybrid-convex, or all")
	fl.IntVar(&topK, "top-k", 100, "results per query")
	fl.StringSliceVar(&metrics, "metric", eval.DefaultMetrics, "metrics to report")
	fl.StringArrayVar(&gates, "gate", nil, "fail (exit 3) unless the first mode meets this, e.g. 'ndcg@10>=0.67'")
	fl.BoolVar(&asJSON, "json", false, "print the report as JSON")
	fl.StringVar(&golden.Golden, "golden", "", "golden set (JSONL: question, reference, sources): answer each question and judge the answers")
	fl.StringArrayVar(&corpora, "corpus", nil, "with --golden: ingest this folder into a scratch knowledge base first (hermetic runs); repeatable")
	fl.Float64Var(&golden.MinRelevance, "min-relevance", 0, "with --golden: the answers' relevance floor, 0 to 1 (default: search.min_relevance; negative: never abstain)")
	fl.StringVar(&golden.Judge, "judge", "deterministic", "with --golden: deterministic (no model, for CI) or llm (the --judge-model, else the llm setting)")
	fl.StringVar(&golden.JudgeModel, "judge-model", "", "with --judge llm: the judge's chat model as provider:model (default: the llm setting)")
	fl.StringVar(&model, "model", "", "with --golden: the chat model that answers, as provider:model (default: the llm setting; none answers extractively)")
	fl.StringVar(&report, "report", "", "with --golden: write a self-contained HTML report to this file")
	fl.StringArrayVar(&golden.Compare, "compare", nil, "with --golden: another configuration's --post list to run side by side (\"none\" for no post-processing); repeatable")
	fl.BoolVar(&calib, "calibrate", false, "measure the collection's best retrieval configuration and record it as its search default")
	fl.BoolVar(&cal.DryRun, "dry-run", false, "with --calibrate: measure without recording")
	fl.BoolVar(&cal.Reset, "reset", false, "with --calibrate: remove the calibration (searches follow the fixed rule)")
	fl.IntVar(&cal.Queries, "queries", 0, fmt.Sprintf("with --calibrate: pseudo-queries to draw (default %d)", eval.CalibrationQueries))
	quality.register(cmd)
	return cmd
}

// runCalibrate is quarry eval --calibrate: on the knowledge base, or on a
// scratch one holding a BEIR dataset or the --corpus folders.
func runCalibrate(cmd *cobra.Command, stdio IO, f kbFlags, req quarry.CalibrateRequest, beir, golden string, corpora, modes []string, asJSON bool) error {
	ctx := cmd.Context()
	if beir != "" && len(corpora) > 0 {
		return usageErr(errors.New("eval --calibrate: --beir indexes its own dataset; give it without --corpus"))
	}
	scratch := beir != "" || len(corpora) > 0
	if scratch {
		cleanup, err := f.scratch("quarry-eval-")
		if err != nil {
			return err
		}
		defer cleanup()
	}
	if beir != "" && f.collection == "" {
		f.collection = "eval"
	}
	k, err := openKB(ctx, &f, scratch)
	if err != nil {
		return err
	}
	defer k.Close()
	if len(corpora) > 0 {
		if _, err := runIngest(ctx, IO{In: stdio.In, Out: stdio.Err, Err: stdio.Err}, k, quarry.IngestRequest{Paths: corpora}, false); err != nil {
			return err
		}
	}
	req.Collection, req.Golden, req.BEIR = f.collection, golden, beir
	if cmd.Flags().Changed("mode") {
		req.Configs = modes
	}
	res, err := k.Calibrate(ctx, quarry.Developer(), req)
	if err != nil {
		return cliErr(err)
	}
	if asJSON {
		return writeJSON(stdio, res)
	}
	return res.WriteTable(stdio.Out)
}
