package quarry_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/eval"
	"github.com/quarry-rag/quarry/quarrytest"
)

// pgManual is Debian's postgresql-doc-15 HTML manual, one page per file.
const pgManual = "/usr/share/doc/postgresql-doc-15/html"

// multiHop is a question of the multi-hop set: each entry of Needs is a
// part of the answer, with the pages any of which holds it.
type multiHop struct {
	ID       string     `json:"id"`
	Question string     `json:"question"`
	Needs    [][]string `json:"needs"`
}

func readMultiHop(t *testing.T) []multiHop {
	t.Helper()
	f, err := os.Open("testdata/agent/pgmanual-multihop.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []multiHop
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var q multiHop
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			t.Fatal(err)
		}
		out = append(out, q)
	}
	return out
}

// allCited reports whether the answer cites a page of every part.
func allCited(q multiHop, cites []quarry.Passage) bool {
	srcs := make([]string, len(cites))
	for i, c := range cites {
		srcs[i] = c.Source
	}
	return allIn(q, srcs)
}

// allRead reports whether the passages the answer was written from hold a
// page of every part.
func allRead(q multiHop, a *quarry.AskResult) bool {
	var srcs []string
	for _, p := range a.Raw.Passages {
		srcs = append(srcs, p.Source)
	}
	return allIn(q, srcs)
}

func allIn(q multiHop, srcs []string) bool {
	for _, alts := range q.Needs {
		found := false
		for _, s := range srcs {
			found = found || slices.Contains(alts, s)
		}
		if !found {
			return false
		}
	}
	return true
}

// multiHopKB is a knowledge base of the PostgreSQL manual, skipping the
// test where the manual is absent or the run is short or raced.
func multiHopKB(t *testing.T, opts ...quarry.Option) *quarry.KB {
	t.Helper()
	if testing.Short() || raceEnabled {
		t.Skip("ingests the PostgreSQL manual: skipped in -short and -race runs")
	}
	if _, err := os.Stat(pgManual); err != nil {
		t.Skipf("%s not found (apt-get install postgresql-doc-15): skipped", pgManual)
	}
	kb := quarrytest.NewKB(t, opts...)
	if _, err := kb.Ingest(context.Background(), quarry.Developer(), quarry.IngestRequest{Paths: []string{pgManual}}); err != nil {
		t.Fatal(err)
	}
	return kb
}

// multiHopTopK is the top-k both ways of answering read.
const multiHopTopK = 10

// multiHopRun is how one way of answering did on the set.
type multiHopRun struct {
	cited, read, abstained, calls, rounds int
	elapsed                               time.Duration
	answers                               []*quarry.AskResult
}

// runMultiHop asks every question of the set, with the agent or not.
func runMultiHop(t *testing.T, kb *quarry.KB, qs []multiHop, withAgent bool) multiHopRun {
	t.Helper()
	var r multiHopRun
	for _, q := range qs {
		t0 := time.Now()
		a, err := kb.Ask(context.Background(), quarry.Developer(), quarry.AskRequest{Question: q.Question, TopK: multiHopTopK, Agent: withAgent})
		if err != nil {
			t.Fatal(err)
		}
		r.elapsed += time.Since(t0)
		r.answers = append(r.answers, a)
		if allCited(q, a.Citations) {
			r.cited++
		}
		if allRead(q, a) {
			r.read++
		}
		if a.Abstained {
			r.abstained++
		}
		if a.Agent != nil {
			r.calls += a.Agent.ToolCalls
			r.rounds += a.Agent.Rounds
		}
	}
	return r
}

// TestAgentMultiHop measures the offline agent against single-shot
// retrieval on thirty questions over the PostgreSQL manual that each need
// two pages: the share of answers citing a page of every part, at the
// same top-k, with the agent's cost. The agent must lead by ten points.
func TestAgentMultiHop(t *testing.T) {
	kb := multiHopKB(t)
	qs := readMultiHop(t)
	single := runMultiHop(t, kb, qs, false)
	ag := runMultiHop(t, kb, qs, true)
	for i, q := range qs {
		a := ag.answers[i]
		var srcs []string
		for _, c := range a.Citations {
			srcs = append(srcs, c.Source)
		}
		t.Logf("%s single=%v agent=%v %s aspects=%q stopped=%q cited=%v", q.ID, allCited(q, single.answers[i].Citations), allCited(q, a.Citations),
			a.Agent.Triage.Kind, a.Agent.Triage.Aspects, a.Agent.Stopped, srcs)
	}
	n := float64(len(qs))
	per := func(d time.Duration) time.Duration { return (d / time.Duration(len(qs))).Round(time.Millisecond) }
	t.Logf("all needed pages cited: single-shot %.3f, agent %.3f; among the passages read: single-shot %.3f, agent %.3f (top-k %d); agent: %.1f tool calls and %.1f rounds per question, %d abstained; time per question: single %v, agent %v",
		float64(single.cited)/n, float64(ag.cited)/n, float64(single.read)/n, float64(ag.read)/n, multiHopTopK,
		float64(ag.calls)/n, float64(ag.rounds)/n, ag.abstained, per(single.elapsed), per(ag.elapsed))
	if float64(ag.cited-single.cited)/n < 0.10 {
		t.Errorf("the agent cites every needed page for %d of %d questions, single-shot retrieval for %d: want a lead of at least 10 points", ag.cited, len(qs), single.cited)
	}
}

// TestAgentMultiHopLLM runs the set with a chat model (QUARRY_TEST_LLM, a
// model spec such as ollama:llama3.2 or openai:gpt-4o-mini) answering and
// driving the agent, and the same model judging faithfulness and answer
// relevancy (eval.LLMJudge). It reports; the offline test gates.
func TestAgentMultiHopLLM(t *testing.T) {
	spec := os.Getenv("QUARRY_TEST_LLM")
	if spec == "" {
		t.Skip("QUARRY_TEST_LLM is unset (a chat model spec, e.g. ollama:llama3.2): the agent's model path is not measured")
	}
	kb := multiHopKB(t, quarry.WithChatModelSpec(spec))
	model, err := kb.ChatModel()
	if err != nil || model == nil {
		t.Fatalf("QUARRY_TEST_LLM=%s opened no chat model: %v", spec, err)
	}
	qs := readMultiHop(t)
	judge := &eval.LLMJudge{Model: model}
	for _, withAgent := range []bool{false, true} {
		r := runMultiHop(t, kb, qs, withAgent)
		sums := map[string]float64{}
		for i, q := range qs {
			a := r.answers[i]
			var ps []eval.Passage
			for _, p := range a.Raw.Passages {
				ps = append(ps, eval.Passage{Source: p.Source, Text: p.Text})
			}
			var srcs []string
			for _, need := range q.Needs {
				srcs = append(srcs, need...)
			}
			sc, err := judge.Judge(context.Background(), eval.Sample{Golden: eval.Golden{ID: q.ID, Question: q.Question, Sources: srcs}, Answer: a.Answer, Passages: ps})
			if err != nil {
				t.Fatal(err)
			}
			for m, v := range sc {
				sums[m] += v.Score
			}
		}
		n := float64(len(qs))
		t.Logf("agent=%v: all needed pages cited %.3f, read %.3f, %d abstained, %.1f tool calls per question; judge (%s): faithfulness %.3f, answer relevancy %.3f, contextual precision %.3f; %v per question",
			withAgent, float64(r.cited)/n, float64(r.read)/n, r.abstained, float64(r.calls)/n, spec,
			sums[eval.Faithfulness]/n, sums[eval.AnswerRelevancy]/n, sums[eval.ContextualPrecision]/n, (r.elapsed / time.Duration(len(qs))).Round(time.Millisecond))
	}
}
