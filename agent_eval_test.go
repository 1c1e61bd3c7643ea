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
	for _, alts := range q.Needs {
		found := false
		for _, c := range cites {
			found = found || slices.Contains(alts, c.Source)
		}
		if !found {
			return false
		}
	}
	return true
}

// TestAgentMultiHop measures the offline agent against single-shot
// retrieval on thirty questions over the PostgreSQL manual that each need
// two pages: the share of answers citing a page of every part, at the
// same top-k, with the agent's cost. The agent must lead by ten points.
func TestAgentMultiHop(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("ingests the PostgreSQL manual: skipped in -short and -race runs")
	}
	if _, err := os.Stat(pgManual); err != nil {
		t.Skipf("%s not found (apt-get install postgresql-doc-15): skipped", pgManual)
	}
	ctx := context.Background()
	kb := quarrytest.NewKB(t)
	sc := quarry.Developer()
	if _, err := kb.Ingest(ctx, sc, quarry.IngestRequest{Paths: []string{pgManual}}); err != nil {
		t.Fatal(err)
	}
	qs := readMultiHop(t)
	const topK = 10
	var single, agentHits, calls, rounds, abstained int
	var singleTime, agentTime time.Duration
	for _, q := range qs {
		t0 := time.Now()
		one, err := kb.Ask(ctx, sc, quarry.AskRequest{Question: q.Question, TopK: topK})
		if err != nil {
			t.Fatal(err)
		}
		singleTime += time.Since(t0)
		t0 = time.Now()
		ag, err := kb.Ask(ctx, sc, quarry.AskRequest{Question: q.Question, TopK: topK, Agent: true})
		if err != nil {
			t.Fatal(err)
		}
		agentTime += time.Since(t0)
		s, a := allCited(q, one.Citations), allCited(q, ag.Citations)
		if s {
			single++
		}
		if a {
			agentHits++
		}
		if ag.Abstained {
			abstained++
		}
		calls += ag.Agent.ToolCalls
		rounds += ag.Agent.Rounds
		var srcs []string
		for _, c := range ag.Citations {
			srcs = append(srcs, c.Source)
		}
		t.Logf("%s single=%v agent=%v %s aspects=%q stopped=%q cited=%v", q.ID, s, a, ag.Agent.Triage.Kind, ag.Agent.Triage.Aspects, ag.Agent.Stopped, srcs)
	}
	n := float64(len(qs))
	t.Logf("all needed pages cited: single-shot %.3f, agent %.3f (top-k %d); agent: %.1f tool calls and %.1f rounds per question, %d abstained; time per question: single %v, agent %v",
		float64(single)/n, float64(agentHits)/n, topK, float64(calls)/n, float64(rounds)/n, abstained,
		(singleTime / time.Duration(len(qs))).Round(time.Millisecond), (agentTime / time.Duration(len(qs))).Round(time.Millisecond))
	if float64(agentHits-single)/n < 0.10 {
		t.Errorf("the agent cites every needed page for %d of %d questions, single-shot retrieval for %d: want a lead of at least 10 points", agentHits, len(qs), single)
	}
}
