package eval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/llm"
	"github.com/quarry-rag/quarry/store"
)

// DefaultMetrics are the retrieval metrics reported when none are named.
var DefaultMetrics = []string{"ndcg@10", "recall@100", "mrr@10", "map", "p@10"}

// RetrievalOptions say how RunRetrieval measures a dataset.
type RetrievalOptions struct {
	// Configs are compared in order; gates apply to the first. Empty means
	// keyword alone.
	Configs []Config
	// TopK is the results taken per query (default 100).
	TopK int
	// Metrics are reported; every gate's metric is added.
	Metrics []Metric
	Gates   []Gate
}

// ParseRetrievalOptions reads configuration names, metric names and gate
// expressions as the command line and the API give them.
func ParseRetrievalOptions(configs, metrics, gates []string, topK int) (RetrievalOptions, error) {
	opt := RetrievalOptions{TopK: topK}
	if len(metrics) == 0 {
		metrics = DefaultMetrics
	}
	for _, m := range metrics {
		mm, err := ParseMetric(m)
		if err != nil {
			return opt, err
		}
		opt.Metrics = appendMetric(opt.Metrics, mm)
	}
	for _, g := range gates {
		gg, err := ParseGate(g)
		if err != nil {
			return opt, err
		}
		opt.Gates = append(opt.Gates, gg)
		opt.Metrics = appendMetric(opt.Metrics, gg.Metric)
	}
	if len(configs) == 0 {
		configs = []string{"keyword"}
	}
	var err error
	opt.Configs, err = ParseConfigs(configs)
	return opt, err
}

func appendMetric(ms []Metric, m Metric) []Metric {
	for _, x := range ms {
		if x == m {
			return ms
		}
	}
	return append(ms, m)
}

// RetrievalReport is one retrieval evaluation: the mean of each metric per
// configuration and the gates' verdicts on the first.
type RetrievalReport struct {
	Dataset  string         `json:"dataset"`
	Docs     int            `json:"docs"`
	Queries  int            `json:"queries"`
	Embedder string         `json:"embedder"`
	Configs  []ConfigReport `json:"configs"`
	Gates    []GateReport   `json:"gates,omitempty"`
	// metrics are the columns of WriteTable, in order.
	metrics []Metric
}

// ConfigReport is one configuration's means.
type ConfigReport struct {
	Name    string             `json:"name"`
	Mean    map[string]float64 `json:"mean"`
	Seconds float64            `json:"seconds"`
}

// GateReport is one gate's verdict.
type GateReport struct {
	Gate   string  `json:"gate"`
	Config string  `json:"config"`
	Value  float64 `json:"value"`
	Pass   bool    `json:"pass"`
}

// Failed reports whether a gate failed.
func (r *RetrievalReport) Failed() bool { return anyFailed(r.Gates) }

func anyFailed(gs []GateReport) bool {
	for _, g := range gs {
		if !g.Pass {
			return true
		}
	}
	return false
}

// RunRetrieval measures a BEIR dataset on a collection: the corpus is
// indexed unless the collection already holds that many documents, then
// every configuration retrieves for every query and is scored.
func RunRetrieval(ctx context.Context, c *store.Collection, e embed.Embedder, name string, ds *Dataset, opt RetrievalOptions) (*RetrievalReport, error) {
	if len(opt.Configs) == 0 {
		opt.Configs = Configs()[:1]
	}
	if opt.TopK <= 0 {
		opt.TopK = 100
	}
	if n, _ := c.Count(ctx, nil); n != len(ds.Corpus) {
		if err := IndexCorpus(ctx, c, e, ds.Corpus, 0); err != nil {
			return nil, err
		}
	}
	rep := &RetrievalReport{Dataset: name, Docs: len(ds.Corpus), Queries: len(ds.Queries), Embedder: e.Model().String(), metrics: opt.Metrics}
	var first Result
	for i, cfg := range opt.Configs {
		start := time.Now()
		run, err := Retrieve(ctx, c, e, ds.Queries, cfg, opt.TopK)
		if err != nil {
			return nil, err
		}
		res := Evaluate(ds.Qrels, run, opt.Metrics...)
		if i == 0 {
			first = res
			rep.Queries = res.Queries
		}
		rep.Configs = append(rep.Configs, ConfigReport{Name: cfg.Name, Mean: res.Mean, Seconds: time.Since(start).Seconds()})
	}
	for _, g := range opt.Gates {
		rep.Gates = append(rep.Gates, GateReport{Gate: g.String(), Config: opt.Configs[0].Name, Value: first.Mean[g.Metric.String()], Pass: g.Pass(first)})
	}
	return rep, nil
}

// WriteTable writes the report for people: a row per configuration.
func (r *RetrievalReport) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "%s: %d documents, %d judged queries, embedder %s\n\n", r.Dataset, r.Docs, r.Queries, r.Embedder)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "config\t")
	for _, m := range r.metrics {
		fmt.Fprintf(tw, "%s\t", m)
	}
	fmt.Fprintln(tw, "seconds\t")
	for _, c := range r.Configs {
		fmt.Fprintf(tw, "%s\t", c.Name)
		for _, m := range r.metrics {
			fmt.Fprintf(tw, "%.4f\t", c.Mean[m.String()])
		}
		fmt.Fprintf(tw, "%.1f\t\n", c.Seconds)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeGates(w, r.Gates)
}

func writeGates(w io.Writer, gs []GateReport) error {
	for _, g := range gs {
		verdict := "pass"
		if !g.Pass {
			verdict = "FAIL"
		}
		if _, err := fmt.Fprintf(w, "gate %s on %s: %.4f %s\n", g.Gate, g.Config, g.Value, verdict); err != nil {
			return err
		}
	}
	return nil
}

// AnswerConfig is one post-processing configuration an answer evaluation
// compares.
type AnswerConfig struct {
	Name string
	Post []string
}

// AnswerConfigs are the configurations of a run: the baseline with post
// first, then each compare entry, a comma-separated post list ("none" or
// "" for no post-processing).
func AnswerConfigs(post, compare []string) []AnswerConfig {
	base := AnswerConfig{Name: "baseline", Post: post}
	if len(post) > 0 {
		base.Name = strings.Join(post, ",")
	}
	out := []AnswerConfig{base}
	for _, c := range compare {
		c = strings.TrimSpace(c)
		if c == "none" || c == "" {
			out = append(out, AnswerConfig{Name: "none"})
			continue
		}
		out = append(out, AnswerConfig{Name: c, Post: strings.Split(c, ",")})
	}
	return out
}

// NewJudge is the judge named kind: "deterministic" (or "") needs no
// model; "llm" judges with model, which the caller opened from its spec
// (label names it in reports).
func NewJudge(kind string, model llm.ChatModel, label string) (Judge, error) {
	switch kind {
	case "deterministic", "":
		return NewDeterministic()
	case "llm":
		if model == nil {
			return nil, errors.New("the llm judge needs a chat model: name a judge model or set llm")
		}
		return &LLMJudge{Model: model, Label: "llm " + label}, nil
	}
	return nil, fmt.Errorf("judge %q: use deterministic or llm", kind)
}

// AnswerReport is one answer evaluation: a run per configuration and the
// gates' verdicts on the first.
type AnswerReport struct {
	Golden string       `json:"golden"`
	Corpus string       `json:"corpus,omitempty"`
	Judge  string       `json:"judge"`
	Runs   []*AnswerRun `json:"runs"`
	Gates  []GateReport `json:"gates,omitempty"`
	// questions is the golden set's size; gates are the parsed gates, for
	// the HTML report.
	questions int
	gates     []AnswerGate
}

// Failed reports whether a gate failed.
func (r *AnswerReport) Failed() bool { return anyFailed(r.Gates) }

// RunAnswers answers the golden set once per configuration (answerer
// gives each configuration's Answerer) and judges every answer; gates
// apply to the first configuration.
func RunAnswers(ctx context.Context, golden []Golden, configs []AnswerConfig, answerer func(AnswerConfig) (Answerer, error), judge Judge, gates []AnswerGate) (*AnswerReport, error) {
	rep := &AnswerReport{Judge: judge.Name(), questions: len(golden), gates: gates}
	for _, c := range configs {
		a, err := answerer(c)
		if err != nil {
			return nil, err
		}
		run, err := EvaluateAnswers(ctx, c.Name, a, golden, judge)
		if err != nil {
			return nil, err
		}
		rep.Runs = append(rep.Runs, run)
	}
	if len(rep.Runs) == 0 {
		return nil, errors.New("eval: no configuration to run")
	}
	for _, g := range gates {
		first := rep.Runs[0]
		rep.Gates = append(rep.Gates, GateReport{Gate: g.String(), Config: first.Name, Value: first.Mean[g.Metric], Pass: g.Pass(first.Mean)})
	}
	return rep, nil
}

// WriteTable writes the report for people: a row per configuration.
func (r *AnswerReport) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "%s: %d questions, judge %s\n\n", r.Golden, r.questions, r.Judge)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	metrics := slices.Clip(AnswerMetrics)
	for _, m := range SentenceMetrics {
		if _, ok := r.Runs[0].Mean[m]; ok {
			metrics = append(metrics, m)
		}
	}
	fmt.Fprint(tw, "config\t")
	for _, m := range metrics {
		fmt.Fprintf(tw, "%s\t", m)
	}
	fmt.Fprintln(tw, "failed\t")
	for _, run := range r.Runs {
		failed := 0
		for _, c := range run.Cases {
			if c.Error != "" {
				failed++
			}
		}
		fmt.Fprintf(tw, "%s\t", run.Name)
		for _, m := range metrics {
			fmt.Fprintf(tw, "%.4f\t", run.Mean[m])
		}
		fmt.Fprintf(tw, "%d\t\n", failed)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeGates(w, r.Gates)
}

// WriteHTMLFile writes the report's self-contained HTML page (WriteHTML)
// to path, creating its folder.
func (r *AnswerReport) WriteHTMLFile(path string, when time.Time) error {
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := WriteHTML(f, ReportInfo{Golden: r.Golden, Corpus: r.Corpus, Gates: r.gates, When: when}, r.Runs); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
