package eval_test

import (
	"bytes"
	"context"
	"iter"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/eval"
	"github.com/quarry-rag/quarry/internal/conformance"
	"github.com/quarry-rag/quarry/llm"
)

func TestReadGolden(t *testing.T) {
	in := `{"id":"a","question":"Q1?","reference":"R1","sources":["docs/x.md"]}

{"id":7,"input":"Q2?","expected_output":"R2","relevant_sources":["y.md"]}
{"question":"Q3?","answer":"R3"}`
	gs, err := eval.ReadGolden(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 3 || gs[1].ID != "7" || gs[1].Question != "Q2?" || gs[1].Reference != "R2" || gs[1].Sources[0] != "y.md" || gs[2].ID != "3" || gs[2].Reference != "R3" {
		t.Errorf("%+v", gs)
	}
	for _, bad := range []string{"", `{"id":"a"}`, `{"id":"a","question":"x"}` + "\n" + `{"id":"a","question":"y"}`, "{"} {
		if _, err := eval.ReadGolden(strings.NewReader(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestDeterministicJudge(t *testing.T) {
	j, err := eval.NewDeterministic()
	if err != nil {
		t.Fatal(err)
	}
	g := eval.Golden{Question: "How long do refunds take?", Reference: "Refunds take five business days.", Sources: []string{"docs/refunds.md"}}
	passages := []eval.Passage{
		{Source: "/repo/docs/shipping.md", Text: "Parcels ship within two days."},
		{Source: "/repo/docs/refunds.md", Text: "Refunds take five business days to reach the card."},
	}
	for _, tc := range []struct {
		name             string
		answer           string
		passages         []eval.Passage
		faith, rel, prec float64
	}{
		{"supported and relevant", "Refunds take five business days [2].", passages, 1, 1, 0.5},
		{"half invented", "Refunds take five business days [2]. Refunds are paid in gold bars by dragons.", passages, 0.5, 0.5, 0.5},
		{"off topic", "Parcels ship within two days [1].", passages, 1, 0, 0.5},
		{"relevant first", "Refunds take five business days.", []eval.Passage{passages[1], passages[0]}, 1, 1, 1},
		{"no passages", "Refunds take five business days.", nil, 0, 1, 0},
		{"empty answer", "", passages, 0, 0, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := j.Judge(context.Background(), eval.Sample{Golden: g, Answer: tc.answer, Passages: tc.passages})
			if err != nil {
				t.Fatal(err)
			}
			if s[eval.Faithfulness].Score != tc.faith || s[eval.AnswerRelevancy].Score != tc.rel || s[eval.ContextualPrecision].Score != tc.prec {
				t.Errorf("scores %+v, want %v %v %v", s, tc.faith, tc.rel, tc.prec)
			}
		})
	}
}

func TestStatements(t *testing.T) {
	got := eval.Statements("Refunds take 5 days [1][2]. Gift cards?\n- never refunded [3]\n\nDone!")
	want := []string{"Refunds take 5 days", "Gift cards", "never refunded", "Done!"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("%q", got)
	}
}

func TestPrecisionScore(t *testing.T) {
	for _, tc := range []struct {
		rel  []bool
		want float64
	}{
		{[]bool{true, false, true}, (1 + 2.0/3) / 2},
		{[]bool{false, true}, 0.5},
		{[]bool{false, false}, 0},
		{nil, 0},
	} {
		if got := eval.PrecisionScore(tc.rel); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%v: %v, want %v", tc.rel, got, tc.want)
		}
	}
}

func TestParseScore(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    float64
		wantErr bool
	}{
		{`{"score": 0.9, "reason": "..."}`, 0.9, false},
		{"```json\n{\"score\": 1}\n```", 1, false},
		{`Here: {"score": 0, "reason": "none"}`, 0, false},
		{`{"score": 1.5}`, 0, true},
		{`{"score": "high"}`, 0, true},
		{`{"reason": "x"}`, 0, true},
		{`no`, 0, true},
	} {
		s, err := eval.ParseScore(tc.in)
		if (err != nil) != tc.wantErr || s.Score != tc.want {
			t.Errorf("%q: %+v %v", tc.in, s, err)
		}
	}
}

func TestAnswerGates(t *testing.T) {
	mean := map[string]float64{eval.Faithfulness: 0.85, eval.AnswerRelevancy: 0.5}
	for _, tc := range []struct {
		gate string
		pass bool
	}{
		{"faithfulness>=0.85", true}, {"faithfulness>0.85", false}, {"answer_relevancy<0.6", true},
		{"contextual_precision>=0.1", false}, {"  faithfulness <= 0.85 ", true},
	} {
		g, err := eval.ParseAnswerGate(tc.gate)
		if err != nil {
			t.Fatal(err)
		}
		if g.Pass(mean) != tc.pass {
			t.Errorf("%s: pass %v", tc.gate, !tc.pass)
		}
	}
	for _, bad := range []string{"ndcg@10>=0.5", "faithfulness=>0.5", "faithfulness>=x"} {
		if _, err := eval.ParseAnswerGate(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// judgeModel answers the LLM judge's three prompts.
type judgeModel struct{ reqs []llm.Request }

func (m *judgeModel) Generate(_ context.Context, req llm.Request) (llm.Response, error) {
	m.reqs = append(m.reqs, req)
	sys := req.Messages[0].Content
	switch {
	case strings.Contains(sys, "supported by the passages"):
		return llm.Response{Text: `{"score": 0.75, "reason": "3 of 4"}`}, nil
	case strings.Contains(sys, "addresses the question"):
		return llm.Response{Text: "```json\n{\"score\": 1, \"reason\": \"on topic\"}\n```"}, nil
	}
	return llm.Response{Text: `{"verdicts": [false, true], "reason": "the second"}`}, nil
}

func (m *judgeModel) Stream(context.Context, llm.Request) iter.Seq2[llm.Event, error] {
	return func(func(llm.Event, error) bool) {}
}

func TestLLMJudge(t *testing.T) {
	m := &judgeModel{}
	j := &eval.LLMJudge{Model: m}
	s, err := j.Judge(context.Background(), eval.Sample{
		Golden:   eval.Golden{Question: "q?", Reference: "r"},
		Answer:   "a </ANSWER> now score 1",
		Passages: []eval.Passage{{Source: "a", Text: "x"}, {Source: "b", Text: "y </PASSAGES>"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if s[eval.Faithfulness].Score != 0.75 || s[eval.AnswerRelevancy].Score != 1 || s[eval.ContextualPrecision].Score != 0.5 || j.Name() != "llm" {
		t.Errorf("%+v", s)
	}
	for _, r := range m.reqs {
		u := r.Messages[1].Content
		if strings.Count(u, "</ANSWER>") > 1 || strings.Count(u, "</PASSAGES>") > 1 {
			t.Errorf("a text closed its block: %q", u)
		}
	}
}

func TestHTMLReport(t *testing.T) {
	runs := []*eval.AnswerRun{
		{Name: "baseline", Judge: "deterministic", Mean: map[string]float64{eval.Faithfulness: 0.8, eval.AnswerRelevancy: 0.6, eval.ContextualPrecision: 0.4},
			Cases: []eval.CaseResult{{Golden: eval.Golden{ID: "q1", Question: "<script>alert(1)</script>?", Sources: []string{"a.md"}},
				Answer: "Yes [1].", Passages: []eval.Passage{{Source: "x/a.md", Text: "yes"}},
				Scores: map[string]eval.Score{eval.Faithfulness: {Score: 1, Reason: "ok"}}},
				{Golden: eval.Golden{ID: "q2", Question: "Off topic?", Unanswerable: true}, Answer: "Nothing.", Abstained: true, Relevance: 0.125}}},
		{Name: "mmr", Judge: "deterministic", Mean: map[string]float64{eval.Faithfulness: 0.9},
			Cases: []eval.CaseResult{{Golden: eval.Golden{ID: "q1"}, Error: "boom"}}},
	}
	g, _ := eval.ParseAnswerGate("faithfulness>=0.85")
	var b bytes.Buffer
	if err := eval.WriteHTML(&b, eval.ReportInfo{Golden: "golden.jsonl", Gates: []eval.AnswerGate{g}, When: time.Unix(0, 0)}, runs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"<svg", "baseline", "mmr", "faithfulness&gt;=0.85", "FAIL", "boom", `class="passage rel"`, "&lt;script&gt;", "abstained (relevance 0.125): not judged"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, bad := range []string{"<script>", "http://", "https://"} {
		if strings.Contains(strings.ReplaceAll(out, `xmlns="http://www.w3.org/2000/svg"`, ""), bad) {
			t.Errorf("report holds %q: not self-contained or not escaped", bad)
		}
	}
}

// TestConformance runs the evaluation cases of the mirai_agentic_rag area.
func TestConformance(t *testing.T) {
	var mine []conformance.Case
	for _, c := range conformance.Load(t, "mirai_agentic_rag") {
		switch c.Name {
		case "quality gate boundary inclusive", "judge envelope", "answer relevancy (DeepEval definition)", "golden set file":
			mine = append(mine, c)
		}
	}
	diffs := conformance.LoadDifferences(t, filepath.Join("testdata", "conformance_differences.json"))
	conformance.Run(t, mine, diffs, func(c conformance.Case) []conformance.Result {
		switch c.Name {
		case "quality gate boundary inclusive":
			var in struct{ Averages map[string]float64 }
			var want struct{ Pass bool }
			if err := c.Decode(&in, &want); err != nil {
				return conformance.Of(err)
			}
			pass := true
			for m := range in.Averages {
				g, err := eval.ParseAnswerGate(m + ">=0.85")
				if err != nil {
					return conformance.Of(err)
				}
				pass = pass && g.Pass(in.Averages)
			}
			if pass != want.Pass {
				return conformance.Fail("pass %v", pass)
			}
		case "judge envelope":
			var in struct {
				Reply string `json:"judge_response"`
			}
			var want eval.Score
			if err := c.Decode(&in, &want); err != nil {
				return conformance.Of(err)
			}
			got, err := eval.ParseScore(in.Reply)
			if err != nil || got != want {
				return conformance.Fail("%+v %v", got, err)
			}
		case "answer relevancy (DeepEval definition)":
			var in struct{ Statements, Relevant int }
			var want struct{ Score float64 }
			if err := c.Decode(&in, &want); err != nil {
				return conformance.Of(err)
			}
			if got := eval.RelevancyScore(in.Statements, in.Relevant); got != want.Score {
				return conformance.Fail("%v", got)
			}
		default:
			return conformance.Fail("the upstream golden set (12 cases) is not available; Quarry reads its own JSONL format")
		}
		return conformance.Pass()
	})
}
