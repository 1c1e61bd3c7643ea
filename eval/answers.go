package eval

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/rag"
)

// CaseResult is one golden case answered and judged.
type CaseResult struct {
	Golden   Golden           `json:"golden"`
	Answer   string           `json:"answer"`
	Passages []Passage        `json:"passages"`
	Cited    []int            `json:"cited"`
	Scores   map[string]Score `json:"scores"`
	Seconds  float64          `json:"seconds"`
	// Abstained and Relevance are the answer's (rag.Answer).
	Abstained bool    `json:"abstained,omitempty"`
	Relevance float64 `json:"relevance"`
	// Error is why the case could not be answered or judged; its scores
	// then count as 0.
	Error string `json:"error,omitempty"`
}

// AnswerRun is a golden set answered by one configuration.
type AnswerRun struct {
	// Name names the configuration ("baseline", "mmr", …).
	Name  string       `json:"name"`
	Judge string       `json:"judge"`
	Cases []CaseResult `json:"cases"`
	// Mean is each metric's mean over the cases.
	Mean map[string]float64 `json:"mean"`
}

// Answerer answers questions: a *rag.Pipeline, or a knowledge base's
// answers with their options.
type Answerer interface {
	Ask(ctx context.Context, req rag.Request) (*rag.Answer, error)
}

// EvaluateAnswers asks every golden question and has the judge score each
// answer. A case that fails is recorded with its error and scores 0; only
// the context's end stops the run.
func EvaluateAnswers(ctx context.Context, name string, p Answerer, golden []Golden, judge Judge) (*AnswerRun, error) {
	run := &AnswerRun{Name: name, Judge: judge.Name(), Mean: map[string]float64{}}
	an, err := bm25.NewAnalyzer(bm25.AnalyzerConfig{})
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	for _, g := range golden {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		start := time.Now()
		cr := CaseResult{Golden: g, Scores: map[string]Score{}}
		a, err := p.Ask(ctx, rag.Request{Question: g.Question})
		if err == nil {
			cr.Answer, cr.Abstained, cr.Relevance = a.Text, a.Abstained, a.Relevance
			for _, c := range a.Passages {
				cr.Passages = append(cr.Passages, Passage{Source: c.Source, Text: c.Text})
			}
			for _, c := range a.Citations {
				cr.Cited = append(cr.Cited, c.N)
			}
			// An abstention says nothing for a judge to weigh: it is
			// scored by the sentence metrics alone.
			if !a.Abstained {
				var scores map[string]Score
				if scores, err = judge.Judge(ctx, Sample{Golden: g, Answer: a.Text, Passages: cr.Passages}); err == nil {
					cr.Scores = scores
				}
			}
			for m, sc := range sentenceScores(an, g, a) {
				cr.Scores[m] = sc
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			cr.Error = err.Error()
		}
		cr.Seconds = time.Since(start).Seconds()
		run.Cases = append(run.Cases, cr)
	}
	// The judge's means are over the answers it judged and the cases that
	// failed (which count 0); abstentions are left out.
	for _, m := range AnswerMetrics {
		sum, n := 0.0, 0
		for _, c := range run.Cases {
			if c.Abstained && c.Error == "" {
				continue
			}
			sum += c.Scores[m].Score
			n++
		}
		if n > 0 {
			run.Mean[m] = sum / float64(n)
		}
	}
	for _, m := range SentenceMetrics {
		sum, n := 0.0, 0
		for _, c := range run.Cases {
			if sc, ok := c.Scores[m]; ok {
				sum += sc.Score
				n++
			}
		}
		if n > 0 {
			run.Mean[m] = sum / float64(n)
		}
	}
	return run, nil
}

// AnswerGate is a threshold on an answer metric's mean, such as
// faithfulness>=0.85. Boundaries are inclusive for >= and <=.
type AnswerGate struct {
	Metric string
	Op     string
	Value  float64
}

var answerGateRE = regexp.MustCompile(`^\s*([A-Za-z_]+)\s*(>=|<=|>|<)\s*([0-9.eE+-]+)\s*$`)

// ParseAnswerGate reads "metric op value" for an answer metric
// (AnswerMetrics, SentenceMetrics).
func ParseAnswerGate(s string) (AnswerGate, error) {
	m := answerGateRE.FindStringSubmatch(s)
	if m == nil {
		return AnswerGate{}, fmt.Errorf("gate %q: write it as metric>=value, such as faithfulness>=0.85", s)
	}
	metric := strings.ToLower(m[1])
	all := append(slices.Clip(AnswerMetrics), SentenceMetrics...)
	if !slices.Contains(all, metric) {
		return AnswerGate{}, fmt.Errorf("gate %q: unknown answer metric %q (use %s)", s, m[1], strings.Join(all, ", "))
	}
	v, err := strconv.ParseFloat(m[3], 64)
	if err != nil || math.IsNaN(v) {
		return AnswerGate{}, fmt.Errorf("gate %q: %q is not a number", s, m[3])
	}
	return AnswerGate{Metric: metric, Op: m[2], Value: v}, nil
}

// Pass reports whether the means meet the gate.
func (g AnswerGate) Pass(mean map[string]float64) bool {
	v := mean[g.Metric]
	switch g.Op {
	case ">=":
		return v >= g.Value
	case ">":
		return v > g.Value
	case "<=":
		return v <= g.Value
	}
	return v < g.Value
}

// String writes the gate back.
func (g AnswerGate) String() string {
	return g.Metric + g.Op + strconv.FormatFloat(g.Value, 'g', -1, 64)
}
