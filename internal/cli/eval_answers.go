package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	llmspec "github.com/quarry-rag/quarry/llm/spec"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/eval"
	"github.com/quarry-rag/quarry/rag"
)

// goldenFlags are eval's flags for golden sets.
type goldenFlags struct {
	golden     string
	corpus     string
	judge      string
	judgeModel string
	model      string
	report     string
	compare    []string
	quality    qualityFlags
}

func (g *goldenFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&g.golden, "golden", "", "golden set (JSONL: question, reference, sources): answer each question and judge the answers")
	cmd.Flags().StringVar(&g.corpus, "corpus", "", "with --golden: ingest this folder into a scratch knowledge base first (hermetic runs)")
	cmd.Flags().StringVar(&g.judge, "judge", "deterministic", "with --golden: deterministic (no model, for CI) or llm (the --judge-model, else the llm setting)")
	cmd.Flags().StringVar(&g.judgeModel, "judge-model", "", "with --judge llm: the judge's chat model as provider:model (default: the llm setting)")
	cmd.Flags().StringVar(&g.model, "model", "", "with --golden: the chat model that answers, as provider:model (default: the llm setting; none answers extractively)")
	cmd.Flags().StringVar(&g.report, "report", "", "with --golden: write a self-contained HTML report to this file")
	cmd.Flags().StringArrayVar(&g.compare, "compare", nil, "with --golden: another configuration's --post list to run side by side (\"none\" for no post-processing); repeatable")
	g.quality.register(cmd)
}

// goldenReport is eval --golden's JSON output.
type goldenReport struct {
	Golden string            `json:"golden"`
	Corpus string            `json:"corpus,omitempty"`
	Judge  string            `json:"judge"`
	Runs   []*eval.AnswerRun `json:"runs"`
	Gates  []evalGateReport  `json:"gates,omitempty"`
}

// runGolden answers a golden set with each configuration and judges it;
// gates apply to the first configuration.
func runGolden(cmd *cobra.Command, stdio IO, f *kbFlags, g *goldenFlags, mode string, topK int, gateSpecs []string, asJSON bool) error {
	ctx := cmd.Context()
	var gates []eval.AnswerGate
	for _, s := range gateSpecs {
		gg, err := eval.ParseAnswerGate(s)
		if err != nil {
			return usageErr(err)
		}
		gates = append(gates, gg)
	}
	golden, err := eval.LoadGolden(g.golden)
	if err != nil {
		return usageErr(err)
	}
	if g.corpus != "" {
		cleanup, err := f.scratch("quarry-golden-")
		if err != nil {
			return err
		}
		defer cleanup()
	}
	k, err := openKB(ctx, f, g.corpus != "", quarry.WithChatModelSpec(g.model), quarry.WithTransforms(g.quality.transforms...))
	if err != nil {
		return err
	}
	defer k.Close()
	if g.corpus != "" {
		// Progress goes to stderr so --json output stays clean.
		if _, err := runIngest(ctx, IO{In: stdio.In, Out: stdio.Err, Err: stdio.Err}, k, quarry.IngestRequest{Paths: []string{g.corpus}}, false); err != nil {
			return err
		}
	}
	judge, err := newJudge(g, k.Config().LLM)
	if err != nil {
		return err
	}
	type config struct {
		name string
		post []string
	}
	configs := []config{{name: "baseline", post: g.quality.post}}
	if len(g.quality.post) > 0 {
		configs[0].name = strings.Join(g.quality.post, ",")
	}
	for _, c := range g.compare {
		c = strings.TrimSpace(c)
		if c == "none" || c == "" {
			configs = append(configs, config{name: "none"})
			continue
		}
		configs = append(configs, config{name: c, post: strings.Split(c, ",")})
	}
	rep := goldenReport{Golden: g.golden, Corpus: g.corpus, Judge: judge.Name()}
	for _, c := range configs {
		a := answerer{k: k, req: quarry.AskRequest{TopK: topK, Mode: mode, Post: c.post}}
		if err := k.CheckAsk(ctx, quarry.Developer(), a.req); err != nil {
			return cliErr(err)
		}
		run, err := eval.EvaluateAnswers(ctx, c.name, a, golden, judge)
		if err != nil {
			return err
		}
		rep.Runs = append(rep.Runs, run)
	}
	failed := false
	for _, gt := range gates {
		pass := gt.Pass(rep.Runs[0].Mean)
		failed = failed || !pass
		rep.Gates = append(rep.Gates, evalGateReport{Gate: gt.String(), Config: rep.Runs[0].Name, Value: rep.Runs[0].Mean[gt.Metric], Pass: pass})
	}
	if g.report != "" {
		if err := writeReport(g.report, eval.ReportInfo{Golden: g.golden, Corpus: g.corpus, Gates: gates, When: time.Now()}, rep.Runs); err != nil {
			return err
		}
	}
	if asJSON {
		enc := json.NewEncoder(stdio.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		printGolden(stdio.Out, rep, len(golden))
	}
	if g.report != "" && !asJSON {
		fmt.Fprintf(stdio.Out, "report: %s\n", g.report)
	}
	if failed {
		return &ExitError{Code: ExitGate, Err: errors.New("a quality gate failed")}
	}
	return nil
}

// answerer asks the knowledge base with one configuration's options.
type answerer struct {
	k   *quarry.KB
	req quarry.AskRequest
}

func (a answerer) Ask(ctx context.Context, r rag.Request) (*rag.Answer, error) {
	req := a.req
	req.Question = r.Question
	res, err := a.k.Ask(ctx, quarry.Developer(), req)
	if err != nil {
		return nil, cliErr(err)
	}
	return res.Raw, nil
}

// newJudge builds the --judge; the LLM judge's model defaults to the llm
// setting.
func newJudge(g *goldenFlags, setting string) (eval.Judge, error) {
	switch g.judge {
	case "deterministic", "":
		return eval.NewDeterministic()
	case "llm":
		spec := g.judgeModel
		if spec == "" {
			spec = setting
		}
		m, err := llmspec.Open(spec)
		if err != nil {
			return nil, usageErr(fmt.Errorf("--judge-model: %w", err))
		}
		if m == nil {
			return nil, usageErr(errors.New("--judge llm needs a chat model: pass --judge-model provider:model or set llm"))
		}
		return &eval.LLMJudge{Model: m, Label: "llm " + spec}, nil
	}
	return nil, usageErr(fmt.Errorf("--judge %q: use deterministic or llm", g.judge))
}

func writeReport(path string, info eval.ReportInfo, runs []*eval.AnswerRun) error {
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := eval.WriteHTML(f, info, runs); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func printGolden(w io.Writer, rep goldenReport, n int) {
	fmt.Fprintf(w, "%s: %d questions, judge %s\n\n", rep.Golden, n, rep.Judge)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "config\t")
	for _, m := range eval.AnswerMetrics {
		fmt.Fprintf(tw, "%s\t", m)
	}
	fmt.Fprintln(tw, "failed\t")
	for _, r := range rep.Runs {
		failed := 0
		for _, c := range r.Cases {
			if c.Error != "" {
				failed++
			}
		}
		fmt.Fprintf(tw, "%s\t", r.Name)
		for _, m := range eval.AnswerMetrics {
			fmt.Fprintf(tw, "%.4f\t", r.Mean[m])
		}
		fmt.Fprintf(tw, "%d\t\n", failed)
	}
	tw.Flush()
	for _, g := range rep.Gates {
		verdict := "pass"
		if !g.Pass {
			verdict = "FAIL"
		}
		fmt.Fprintf(w, "gate %s on %s: %.4f %s\n", g.Gate, g.Config, g.Value, verdict)
	}
}
