package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/agent"
	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/llm"
	"github.com/quarry-rag/quarry/quarrytest"
)

// corpus is a small source: each text one passage, searched by shared
// terms, the best first.
type corpus struct {
	docs  []*document.Document
	an    *bm25.Analyzer
	fail  error
	delay time.Duration

	mu      sync.Mutex
	queries []agent.Query
}

func newCorpus(t *testing.T, prefix string, texts ...string) *corpus {
	t.Helper()
	an, err := bm25.NewAnalyzer(bm25.AnalyzerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	c := &corpus{an: an}
	for i, tx := range texts {
		d := document.New(tx)
		d.ID = prefix + string(rune('a'+i))
		d.SourceName = prefix + ".md"
		d.Provenance.ChunkIndex, d.Provenance.ChunkCount = i, len(texts)
		c.docs = append(c.docs, d)
	}
	return c
}

func (c *corpus) Search(ctx context.Context, q agent.Query) ([]*document.Document, error) {
	c.mu.Lock()
	c.queries = append(c.queries, q)
	c.mu.Unlock()
	if c.delay > 0 {
		select {
		case <-time.After(c.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if c.fail != nil {
		return nil, c.fail
	}
	m, err := filter.NewMatcher(q.Filter)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, t := range c.an.Analyze(q.Text) {
		want[t] = true
	}
	type hit struct {
		d *document.Document
		n int
	}
	var hits []hit
	for _, d := range c.docs {
		n := 0
		for _, t := range c.an.Analyze(d.Content) {
			if want[t] {
				n++
			}
		}
		if n > 0 && m.MatchDocument(d) {
			hits = append(hits, hit{d, n})
		}
	}
	slices.SortStableFunc(hits, func(a, b hit) int { return b.n - a.n })
	k := q.TopK
	if k <= 0 {
		k = 3
	}
	var out []*document.Document
	for _, h := range hits[:min(k, len(hits))] {
		out = append(out, h.d)
	}
	return out, nil
}

func (c *corpus) Neighbours(_ context.Context, d *document.Document, window int) ([]*document.Document, error) {
	var out []*document.Document
	for _, x := range c.docs {
		if x.ID != d.ID && abs(x.Provenance.ChunkIndex-d.Provenance.ChunkIndex) <= window {
			out = append(out, x)
		}
	}
	return out, nil
}

func (c *corpus) Linked(context.Context, *document.Document, int) ([]*document.Document, error) {
	return nil, nil
}

func (c *corpus) Document(_ context.Context, d *document.Document, limit int) ([]*document.Document, error) {
	return c.docs[:min(limit, len(c.docs))], nil
}

func (c *corpus) asked() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, q := range c.queries {
		out = append(out, q.Text)
	}
	return out
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func TestTriageByRules(t *testing.T) {
	cases := []struct {
		q       string
		kind    string
		aspects []string
	}{
		{"hello there!", agent.KindNone, nil},
		{"Thanks", agent.KindNone, nil},
		{"How do refunds work?", agent.KindLookup, []string{"How do refunds work?"}},
		{"What is the difference between VACUUM FULL and CLUSTER?", agent.KindMultiStep, []string{"VACUUM FULL", "CLUSTER"}},
		{"Compare gift cards with vouchers", agent.KindMultiStep, []string{"gift cards", "vouchers"}},
		{"pgvector vs pg_search", agent.KindMultiStep, []string{"pgvector", "pg_search"}},
		{"How do I create a trigger and how do I write its function?", agent.KindMultiStep, []string{"How do I create a trigger", "how do I write its function (trigger)"}},
		{"What is a savepoint? How do I roll back to it?", agent.KindMultiStep, []string{"What is a savepoint", "How do I roll back to it"}},
		{"How do I back up a database, then restore it", agent.KindMultiStep, []string{"How do I back up a database", "restore it (database)"}},
		{"Which salt and pepper do I need?", agent.KindLookup, []string{"Which salt and pepper do I need?"}},
	}
	for _, c := range cases {
		src := newCorpus(t, "x")
		g, err := (&agent.Agent{Sources: []agent.Source{{Name: "docs", Searcher: src}}, Budget: agent.Budget{Rounds: 1}}).
			Gather(context.Background(), agent.Request{Question: c.q})
		if err != nil {
			t.Fatal(err)
		}
		if g.Triage.Kind != c.kind {
			t.Errorf("%q: kind %s, want %s", c.q, g.Triage.Kind, c.kind)
		}
		if c.aspects != nil && !slices.Equal(g.Triage.Aspects, c.aspects) {
			t.Errorf("%q: aspects %q, want %q", c.q, g.Triage.Aspects, c.aspects)
		}
	}
}

// TestRulesCoverEachAspect: a question of two parts is searched part by
// part, and the gathered list puts each part's best passage at the top.
func TestRulesCoverEachAspect(t *testing.T) {
	src := newCorpus(t, "pg",
		"VACUUM FULL rewrites the table into a new file, reclaiming space.",
		"CLUSTER reorders a table on disk by an index.",
		"Autovacuum runs VACUUM in the background.",
		"VACUUM reclaims storage of dead tuples; VACUUM FULL locks the table.")
	g, err := (&agent.Agent{Sources: []agent.Source{{Name: "docs", Searcher: src}}, TopK: 2}).
		Gather(context.Background(), agent.Request{Question: "What is the difference between VACUUM FULL and CLUSTER?"})
	if err != nil {
		t.Fatal(err)
	}
	if !g.Sufficient || g.Stopped != "sufficient" || g.Rounds != 1 {
		t.Fatalf("sufficient=%v stopped=%q rounds=%d", g.Sufficient, g.Stopped, g.Rounds)
	}
	if got := src.asked(); !slices.Equal(got, []string{"VACUUM FULL", "CLUSTER"}) && !slices.Equal(got, []string{"CLUSTER", "VACUUM FULL"}) {
		t.Errorf("searched %q", got)
	}
	var top []string
	for _, d := range g.Passages[:2] {
		top = append(top, d.ID)
	}
	if !slices.Contains(top, "pgb") {
		t.Errorf("the top two passages %v leave out CLUSTER's", top)
	}
	kinds := []string{}
	for _, s := range g.Steps {
		kinds = append(kinds, s.Kind)
	}
	want := []string{agent.StepTriage, agent.StepToolCall, agent.StepToolCall, agent.StepToolResult, agent.StepToolResult, agent.StepSufficiency}
	if !slices.Equal(kinds, want) {
		t.Errorf("steps %v, want %v", kinds, want)
	}
	for i, s := range g.Steps {
		if s.N != i+1 {
			t.Errorf("step %d numbered %d", i+1, s.N)
		}
	}
}

// TestRulesFollowUpAndFallback: an aspect no passage covers is searched
// again by its missing words, in every source (the fallback too); a source
// that fails is reported and the run goes on.
func TestRulesFollowUpAndFallback(t *testing.T) {
	docs := newCorpus(t, "kb", "Refunds are paid within fourteen days.", "Shipping takes three days.")
	broken := newCorpus(t, "br")
	broken.fail = errors.New("connection refused")
	web := newCorpus(t, "web", "Gift vouchers expire after one year.")
	g, err := (&agent.Agent{Sources: []agent.Source{
		{Name: "docs", Searcher: docs, Expander: docs},
		{Name: "broken", Searcher: broken},
		{Name: "web", Searcher: web, Fallback: true},
	}}).Gather(context.Background(), agent.Request{Question: "How fast are refunds paid and when do gift vouchers expire?"})
	if err != nil {
		t.Fatal(err)
	}
	if len(web.asked()) == 0 {
		t.Fatal("the fallback source was never searched")
	}
	if !g.Sufficient {
		t.Fatalf("not sufficient: %+v", g.Verdict)
	}
	if len(g.Failures) != 1 || g.Failures[0].Source != "broken" || !strings.Contains(g.Failures[0].Message, "refused") {
		t.Errorf("failures %+v", g.Failures)
	}
	ids := map[string]bool{}
	for _, d := range g.Passages {
		ids[d.ID] = true
	}
	if !ids["kba"] || !ids["weba"] {
		t.Errorf("gathered %v", ids)
	}
	if g.Rounds < 2 {
		t.Errorf("rounds %d: the uncovered aspect needed a second", g.Rounds)
	}
}

// TestRulesAbstainAtBudget: nothing covers the question; the run stops at
// a bound and its verdict stays insufficient, naming what it searched.
func TestRulesAbstainAtBudget(t *testing.T) {
	docs := newCorpus(t, "kb", "Refunds are paid within fourteen days.")
	for _, c := range []struct {
		budget agent.Budget
		stop   string
	}{
		{agent.Budget{Rounds: 1}, "budget: rounds"},
		{agent.Budget{ToolCalls: 1}, "budget: tool calls"},
		{agent.Budget{}, "nothing new"},
	} {
		g, err := (&agent.Agent{Sources: []agent.Source{{Name: "docs", Searcher: docs}}, Budget: c.budget}).
			Gather(context.Background(), agent.Request{Question: "What is the capital of France?"})
		if err != nil {
			t.Fatal(err)
		}
		if g.Sufficient || g.Stopped != c.stop {
			t.Errorf("%+v: sufficient=%v stopped=%q, want %q", c.budget, g.Sufficient, g.Stopped, c.stop)
		}
		if c.budget.ToolCalls > 0 && g.ToolCalls > c.budget.ToolCalls {
			t.Errorf("%d tool calls over a budget of %d", g.ToolCalls, c.budget.ToolCalls)
		}
		if msg := agent.Abstention(g); !strings.Contains(msg, `"What is the capital of France?"`) || !strings.Contains(msg, "Missing") {
			t.Errorf("abstention %q", msg)
		}
	}
}

// TestSlowSourceTimesOut: a source slower than its timeout is reported as
// timed out; the time budget ends the run, not the caller's context.
func TestSlowSourceTimesOut(t *testing.T) {
	slow := newCorpus(t, "s", "Refunds are paid within fourteen days.")
	slow.delay = time.Second
	fast := newCorpus(t, "f", "Refunds are paid within fourteen days.")
	g, err := (&agent.Agent{Sources: []agent.Source{
		{Name: "fast", Searcher: fast},
		{Name: "slow", Searcher: slow, Timeout: 20 * time.Millisecond},
	}}).Gather(context.Background(), agent.Request{Question: "How fast are refunds paid?"})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Failures) != 1 || !g.Failures[0].TimedOut || !g.Sufficient {
		t.Errorf("failures %+v sufficient %v", g.Failures, g.Sufficient)
	}
	g, err = (&agent.Agent{Sources: []agent.Source{{Name: "slow", Searcher: slow}}, Budget: agent.Budget{Time: 30 * time.Millisecond}}).
		Gather(context.Background(), agent.Request{Question: "How fast are refunds paid?"})
	if err != nil {
		t.Fatal(err)
	}
	if g.Stopped != "budget: time" || g.Sufficient {
		t.Errorf("stopped %q sufficient %v", g.Stopped, g.Sufficient)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (&agent.Agent{Sources: []agent.Source{{Name: "fast", Searcher: fast}}}).Gather(ctx, agent.Request{Question: "x y"}); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled caller: %v", err)
	}
}

// script is a chat model that triages, calls the tools it is given in
// order, one round each, then judges by the verdicts given.
func script(triage string, rounds [][]llm.ToolCall, verdicts ...string) *quarrytest.ChatModel {
	var mu sync.Mutex
	round, judged := 0, 0
	return &quarrytest.ChatModel{Respond: func(req llm.Request) (llm.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case req.Schema != nil && req.Schema.Name == "triage":
			return llm.Response{Text: triage}, nil
		case req.Schema != nil && req.Schema.Name == "verdict":
			v := verdicts[min(judged, len(verdicts)-1)]
			judged++
			return llm.Response{Text: v}, nil
		}
		if round < len(rounds) {
			round++
			return llm.Response{ToolCalls: rounds[round-1]}, nil
		}
		return llm.Response{Text: "DONE"}, nil
	}}
}

func call(id, tool, args string) llm.ToolCall {
	return llm.ToolCall{ID: id, Name: tool, Arguments: json.RawMessage(args)}
}

// TestModelLoop: the model triages, its tool calls run (refused when
// invalid, with the reason sent back), the judge's next query fans out to
// every source, and the loop stops when the judge finds it sufficient.
func TestModelLoop(t *testing.T) {
	docs := newCorpus(t, "kb", "Refunds are paid within fourteen days.", "Gift cards cannot be refunded.", "Shipping takes three days.")
	web := newCorpus(t, "web", "Gift cards are sold in shops.")
	m := script(`{"kind":"multi_step","aspects":["refund time","gift cards"],"sources":["docs","nowhere"]}`,
		[][]llm.ToolCall{{
			call("c1", agent.ToolSearch, `{"query":"refunds paid","source":"docs"}`),
			call("c2", agent.ToolSearch, `{"query":"refunds","source":"elsewhere"}`),
			call("c3", agent.ToolSearch, `{"query":"refunds","filter":{"operator":"raw","store":"postgres","fragment":"TRUE"}}`),
			call("c4", "drop_table", `{}`),
			call("c5", agent.ToolNeighbours, `{"id":"nope"}`),
			call("c6", agent.ToolSearch, `{"query":"refunds","bogus":1}`),
		}, {
			call("c7", agent.ToolNeighbours, `{"id":"kba","window":1}`),
			call("c8", agent.ToolDocument, `{"id":"kba","limit":30}`),
			call("c9", agent.ToolDocument, `{"id":"kba"}`),
		}},
		`{"sufficient":false,"missing":"nothing on gift cards","next_query":"gift cards"}`,
		`{"sufficient":true,"missing":"","next_query":""}`)
	a := &agent.Agent{Model: m, Sources: []agent.Source{
		{Name: "docs", Searcher: docs, Expander: docs, Filterable: true},
		{Name: "web", Searcher: web},
	}}
	g, err := a.Gather(context.Background(), agent.Request{Question: "How long do refunds take, and can gift cards be refunded?"})
	if err != nil {
		t.Fatal(err)
	}
	if g.Triage.By != "model" || g.Triage.Kind != agent.KindMultiStep || !slices.Equal(g.Triage.Sources, []string{"docs"}) {
		t.Errorf("triage %+v", g.Triage)
	}
	if !g.Sufficient || g.Stopped != "sufficient" || g.Rounds != 2 {
		t.Errorf("sufficient=%v stopped=%q rounds=%d", g.Sufficient, g.Stopped, g.Rounds)
	}
	refused := map[string]string{}
	for _, s := range g.Steps {
		if s.Result != nil && s.Result.Error != "" {
			refused[s.Result.ID] = s.Result.Error
		}
	}
	for id, want := range map[string]string{"c2": "no source", "c3": "raw filter fragments are not accepted", "c4": "no tool", "c5": "no gathered passage", "c6": "unknown field", "c8": "limit 30 is out of range 1-20"} {
		if !strings.Contains(refused[id], want) {
			t.Errorf("call %s: %q, want it refused for %q", id, refused[id], want)
		}
	}
	if !slices.Contains(web.asked(), "gift cards") || !slices.Contains(docs.asked(), "gift cards") {
		t.Errorf("the judge's next query was not fanned out: docs %q, web %q", docs.asked(), web.asked())
	}
	// Each refusal went back to the model as the call's result.
	var back []string
	for _, r := range m.Requests() {
		for _, msg := range r.Messages {
			if msg.Role == llm.RoleTool {
				back = append(back, msg.ToolCallID+": "+msg.Content)
			}
		}
	}
	if !slices.ContainsFunc(back, func(s string) bool { return strings.HasPrefix(s, "c4: refused") }) {
		t.Errorf("tool results sent back: %q", back)
	}
	if g.Usage.Total() == 0 {
		t.Error("the model's tokens were not counted")
	}
}

// TestModelBudgets: the tool-call and token budgets stop the model's loop
// with what it gathered.
func TestModelBudgets(t *testing.T) {
	docs := newCorpus(t, "kb", "Refunds are paid within fourteen days.")
	many := make([]llm.ToolCall, 5)
	for i := range many {
		many[i] = call("c"+string(rune('0'+i)), agent.ToolSearch, `{"query":"refunds `+string(rune('a'+i))+`"}`)
	}
	insufficient := `{"sufficient":false,"missing":"more","next_query":"refund policy"}`
	g, err := (&agent.Agent{Model: script(`{"kind":"lookup","aspects":["refunds"],"sources":[]}`, [][]llm.ToolCall{many}, insufficient),
		Sources: []agent.Source{{Name: "docs", Searcher: docs}}, Budget: agent.Budget{ToolCalls: 3}}).
		Gather(context.Background(), agent.Request{Question: "How do refunds work?"})
	if err != nil {
		t.Fatal(err)
	}
	if g.ToolCalls != 3 || g.Stopped != "budget: tool calls" || g.Sufficient {
		t.Errorf("tool calls %d stopped %q sufficient %v", g.ToolCalls, g.Stopped, g.Sufficient)
	}
	g, err = (&agent.Agent{Model: script(`{"kind":"lookup","aspects":["refunds"],"sources":[]}`, [][]llm.ToolCall{many[:1], many[1:2], many[2:3]}, insufficient),
		Sources: []agent.Source{{Name: "docs", Searcher: docs}}, Budget: agent.Budget{Tokens: 60}}).
		Gather(context.Background(), agent.Request{Question: "How do refunds work?"})
	if err != nil {
		t.Fatal(err)
	}
	if g.Stopped != "budget: tokens" || g.Sufficient {
		t.Errorf("stopped %q sufficient %v after %d tokens", g.Stopped, g.Sufficient, g.Usage.Total())
	}
}

// TestModelTriageFallsBack: a triage reply that does not parse is replaced
// by the rules', and says so.
func TestModelTriageFallsBack(t *testing.T) {
	docs := newCorpus(t, "kb", "Refunds are paid within fourteen days.")
	g, err := (&agent.Agent{Model: script("not json", nil, `{"sufficient":true,"missing":"","next_query":""}`),
		Sources: []agent.Source{{Name: "docs", Searcher: docs}}}).
		Gather(context.Background(), agent.Request{Question: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if g.Triage.Kind != agent.KindNone || !strings.HasPrefix(g.Triage.By, "rules") || g.ToolCalls != 0 {
		t.Errorf("triage %+v after %d calls", g.Triage, g.ToolCalls)
	}
}

// TestCallIDsUnique: every call of a run has its own id, so each result
// step names the call it answers.
func TestCallIDsUnique(t *testing.T) {
	docs := newCorpus(t, "kb", "Refunds are paid within fourteen days.")
	web := newCorpus(t, "web", "Nothing here.")
	g, err := (&agent.Agent{Sources: []agent.Source{{Name: "docs", Searcher: docs, Expander: docs}, {Name: "web", Searcher: web, Fallback: true}}}).
		Gather(context.Background(), agent.Request{Question: "How fast are refunds paid and what is the capital of France?"})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, s := range g.Steps {
		if s.Call == nil {
			continue
		}
		if seen[s.Call.ID] {
			t.Errorf("call id %s used twice", s.Call.ID)
		}
		seen[s.Call.ID] = true
	}
	if len(seen) != g.ToolCalls || len(seen) < 3 {
		t.Errorf("%d ids for %d calls", len(seen), g.ToolCalls)
	}
}
