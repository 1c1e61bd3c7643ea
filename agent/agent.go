// Package agent gathers the passages a hard question needs in steps
// rather than in one search: it triages the question (nothing to look up,
// one lookup, or several aspects), retrieves through tools — a search of
// each source, a passage's neighbouring chunks, the knowledge hierarchy's
// links — judges after every round whether what it holds answers the
// question, and either stops, refines the query from what is missing, or
// fans out across every source at once. It stops at its budget (rounds,
// tool calls, tokens, time) and says whether what it gathered suffices;
// the caller then answers from the passages with citations, or abstains.
//
// With a chat model the model triages, chooses the tools and judges
// sufficiency with a short rubric; without one the loop runs by rules:
// aspects split from the question's wording, coverage of each aspect's
// terms by the passages, follow-up queries made of the terms still
// uncovered, then the neighbours of the best passage.
//
// The agent holds no scope of its own. Every Source it is given searches
// under the caller's scopes already, and a filter the model writes goes to
// the source as one more narrowing (retrieve.Request.Filter), never as a
// replacement: the agent can reach nothing its caller could not.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/llm"
	"github.com/quarry-rag/quarry/rag"
	"github.com/quarry-rag/quarry/retrieve"
)

// Query is one search a tool call asks of a source.
type Query struct {
	Text string
	// Mode is a search mode (keyword, vector, hybrid, auto) or "" for the
	// source's own.
	Mode string
	// Filter narrows the search; the source puts it under the caller's
	// scope and checks it against its schema. Nil for none.
	Filter filter.Expr
	TopK   int
}

// Searcher searches one source under the caller's scopes.
type Searcher interface {
	Search(ctx context.Context, q Query) ([]*document.Document, error)
}

// Expander reaches passages near one already found, under the same scopes
// as the source's searches: the chunks around it in its source, the chunks
// of the hierarchy nodes linked to its node, and its whole document (the
// limit chunks nearest it, in reading order).
type Expander interface {
	Neighbours(ctx context.Context, d *document.Document, window int) ([]*document.Document, error)
	Linked(ctx context.Context, d *document.Document, limit int) ([]*document.Document, error)
	Document(ctx context.Context, d *document.Document, limit int) ([]*document.Document, error)
}

// Tool is a tool the model may call besides the searches and expansions
// (a graph's schema, a named query): its answer is text for the model and
// may bring passages, gathered like a search's. Tools run under the
// caller's scopes as sources do; the rule-based loop does not call them.
type Tool interface {
	Definition() llm.Tool
	Call(ctx context.Context, args json.RawMessage) (Found, error)
}

// Found is what a Tool returned.
type Found struct {
	Passages []*document.Document
	// Text is shown to the model before the passages.
	Text string
}

// Source is one place the agent may search.
type Source struct {
	// Name identifies the source to the model and in steps ("docs",
	// "web"); unique.
	Name string
	// Description tells the model what the source holds.
	Description string
	Searcher    Searcher
	// Expander, when set, follows passages of this source to their
	// neighbours and links.
	Expander Expander
	// Filterable says the source takes a filter (a collection does, the
	// web does not).
	Filterable bool
	// Fallback marks a source searched only when the others did not
	// suffice (the web beside the knowledge base), in the rule-based loop.
	Fallback bool
	// Timeout bounds one search; DefaultSourceTimeout when 0.
	Timeout time.Duration
}

// Retrieving makes a Searcher of a retriever that takes no mode: a web
// search, a remote Quarry. A filter is passed on as the request's filter.
func Retrieving(r retrieve.Retriever) Searcher { return retrieving{r} }

type retrieving struct{ r retrieve.Retriever }

func (r retrieving) Search(ctx context.Context, q Query) ([]*document.Document, error) {
	if q.Mode != "" {
		return nil, fmt.Errorf("this source has no search modes (asked for %q)", q.Mode)
	}
	return r.r.Retrieve(ctx, retrieve.Request{Query: q.Text, Filter: q.Filter, TopK: q.TopK})
}

// Defaults of a Budget's zero fields.
const (
	DefaultRounds        = 4
	DefaultToolCalls     = 16
	DefaultTokens        = 24000
	DefaultTime          = 60 * time.Second
	DefaultSourceTimeout = retrieve.DefaultSourceTimeout
	DefaultTopK          = 8
	// MaxTopK bounds the passages one search may ask for.
	MaxTopK = 50
)

// Budget bounds one run. A run that reaches any bound stops with what it
// gathered; reaching one is never an error.
type Budget struct {
	// Rounds of retrieval, each followed by a sufficiency check.
	Rounds int
	// ToolCalls counts every search and expansion, the fan-out's included.
	ToolCalls int
	// Tokens the model may spend on triage, tool rounds and judging (the
	// answer's own are the caller's).
	Tokens int
	// Time is the wall time of the whole gathering.
	Time time.Duration
}

func (b Budget) withDefaults() Budget {
	if b.Rounds <= 0 {
		b.Rounds = DefaultRounds
	}
	if b.ToolCalls <= 0 {
		b.ToolCalls = DefaultToolCalls
	}
	if b.Tokens <= 0 {
		b.Tokens = DefaultTokens
	}
	if b.Time <= 0 {
		b.Time = DefaultTime
	}
	return b
}

// Agent gathers passages for questions. Its fields are read, never
// written, by Gather, so one Agent serves concurrent questions.
type Agent struct {
	// Sources are where to search; the first is the main one.
	Sources []Source
	// Model triages, calls the tools and judges; nil runs the rule-based
	// loop.
	Model llm.ChatModel
	// Tools are offered to the model beside the searches; their names must
	// not be search, neighbours, document or linked.
	Tools  []Tool
	Budget Budget
	// TopK is how many passages a search returns unless a call asks for
	// fewer or more (up to MaxTopK), and how many the gathered list keeps
	// per aspect; DefaultTopK when 0.
	TopK int
	// MinCoverage is how much of an aspect's terms the best passage must
	// cover (rag.Relevance) for the rule-based check to count the aspect
	// answered; rag.DefaultMinRelevance when 0.
	MinCoverage float64
	// Language selects the analyzer of the rule-based loop, English when
	// empty.
	Language string
	Logger   *slog.Logger
	// Stage, when set, observes each step as a stage ("agent.triage",
	// "agent.tool", "agent.judge").
	Stage func(ctx context.Context, name string) (context.Context, func(error))
}

// Request is one question to gather for.
type Request struct {
	Question string
	// History is the conversation so far, for the model.
	History []llm.Message
	// TopK overrides the agent's TopK when positive.
	TopK int
	// OnStep, when set, receives each step as it happens, from the
	// goroutine that called Gather.
	OnStep func(Step)
}

// Gathered is what a run found.
type Gathered struct {
	Triage Triage `json:"triage"`
	// Passages are the gathered passages, best first: each aspect's own
	// ranking fused, the aspects taking turns so that every one is
	// represented at the top.
	Passages []*document.Document `json:"-"`
	// ByAspect are, per aspect of the triage, the ids of the passages
	// found for it, best first.
	ByAspect [][]string `json:"-"`
	// Queries are the searches run, in order, each once.
	Queries []string `json:"queries"`
	// Sufficient is the last verdict: the passages answer the question.
	Sufficient bool `json:"sufficient"`
	// Verdict is the last sufficiency check.
	Verdict Verdict `json:"verdict"`
	// Stopped says why the loop ended: "sufficient", "no retrieval
	// needed", "nothing new", or "budget: rounds|tool calls|tokens|time".
	Stopped   string                 `json:"stopped"`
	Rounds    int                    `json:"rounds"`
	ToolCalls int                    `json:"toolCalls"`
	Failures  []retrieve.SourceError `json:"sourceErrors,omitempty"`
	Usage     llm.Usage              `json:"usage"`
	// ElapsedMS is the gathering's wall time in milliseconds.
	ElapsedMS int64  `json:"elapsedMs"`
	Steps     []Step `json:"steps"`
}

// Triage kinds.
const (
	KindNone      = "none"       // nothing to look up: a greeting, thanks
	KindLookup    = "lookup"     // one search should do
	KindMultiStep = "multi_step" // several aspects, each to find
)

// Triage is how the question was classified.
type Triage struct {
	Kind string `json:"kind"`
	// Aspects are the parts of the question to find, each a query; one
	// for a lookup (the question itself).
	Aspects []string `json:"aspects"`
	// Sources are the sources to search first.
	Sources []string `json:"sources"`
	// By is "model" or "rules".
	By string `json:"by"`
}

// Verdict is one sufficiency check.
type Verdict struct {
	Sufficient bool `json:"sufficient"`
	// Coverage is, per aspect, how much of it the best passage covers
	// (the rule-based check), in Triage.Aspects order.
	Coverage []float64 `json:"coverage,omitempty"`
	// Missing says what the passages lack: aspects (rules) or the model's
	// words.
	Missing []string `json:"missing,omitempty"`
	// Next are the follow-up queries the check proposes.
	Next   []string `json:"next,omitempty"`
	Reason string   `json:"reason,omitempty"`
	By     string   `json:"by"`
}

// Step kinds.
const (
	StepTriage      = "triage"
	StepToolCall    = "tool_call"
	StepToolResult  = "tool_result"
	StepSufficiency = "sufficiency"
)

// Step is one event of a run.
type Step struct {
	// N numbers the steps of a run from 1.
	N     int    `json:"n"`
	Kind  string `json:"kind"`
	Round int    `json:"round"`
	// AtMS is when it happened, in milliseconds since the run started.
	AtMS    int64       `json:"atMs"`
	Triage  *Triage     `json:"triage,omitempty"`
	Call    *Call       `json:"call,omitempty"`
	Result  *CallResult `json:"result,omitempty"`
	Verdict *Verdict    `json:"verdict,omitempty"`
}

// Call is a tool call.
type Call struct {
	ID        string          `json:"id"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

// CallResult is what a tool call returned.
type CallResult struct {
	ID   string `json:"id"`
	Tool string `json:"tool"`
	// IDs are the passages returned, best first; New counts those not
	// gathered before.
	IDs      []string `json:"ids"`
	New      int      `json:"new"`
	Error    string   `json:"error,omitempty"`
	TimedOut bool     `json:"timedOut,omitempty"`
	// ElapsedMS is the call's time in milliseconds.
	ElapsedMS int64 `json:"elapsedMs"`
}

// ErrNoSources is returned by Gather for an agent with nothing to search.
var ErrNoSources = errors.New("agent: no sources to search")

// run is one Gather on its way.
type run struct {
	a      *Agent
	req    Request
	budget Budget
	start  time.Time
	an     *bm25.Analyzer
	topK   int
	out    *Gathered
	// pool holds every passage found, by id, and which source found it;
	// lists holds, per aspect, the ranked lists found for it.
	pool    map[string]*document.Document
	from    map[string]int
	lists   map[int][][]*document.Document
	queried map[string]bool
	// ids numbers the calls the agent makes itself (q1, q2, …), apart from
	// the ids the model gives its own.
	ids int
	mu  sync.Mutex
}

// Gather runs the loop for one question and returns what it found. Only a
// question it cannot start on (empty, no sources, a cancelled context) is
// an error; failing sources and spent budgets are reported in the result.
func (a *Agent) Gather(ctx context.Context, req Request) (*Gathered, error) {
	req.Question = strings.TrimSpace(req.Question)
	if req.Question == "" {
		return nil, errors.New("agent: the question is empty")
	}
	if len(a.Sources) == 0 {
		return nil, ErrNoSources
	}
	names := map[string]bool{}
	for _, s := range a.Sources {
		if s.Name == "" || names[s.Name] || s.Searcher == nil {
			return nil, fmt.Errorf("agent: source %q: each source needs a unique name and a searcher", s.Name)
		}
		names[s.Name] = true
	}
	for _, t := range a.Tools {
		n := t.Definition().Name
		if names[n] || slices.Contains([]string{ToolSearch, ToolNeighbours, ToolDocument, ToolLinked}, n) {
			return nil, fmt.Errorf("agent: tool %q: its name is taken", n)
		}
		names[n] = true
	}
	an, err := bm25.NewAnalyzer(bm25.AnalyzerConfig{Language: a.Language})
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	r := &run{a: a, req: req, budget: a.Budget.withDefaults(), start: time.Now(), an: an,
		out:  &Gathered{Queries: []string{}, Steps: []Step{}},
		pool: map[string]*document.Document{}, from: map[string]int{}, lists: map[int][][]*document.Document{}, queried: map[string]bool{}}
	r.topK = a.TopK
	if req.TopK > 0 {
		r.topK = req.TopK
	}
	if r.topK <= 0 {
		r.topK = DefaultTopK
	}
	r.topK = min(r.topK, MaxTopK)
	lctx, cancel := context.WithTimeout(ctx, r.budget.Time)
	defer cancel()
	if a.Model != nil {
		err = r.withModel(lctx)
	} else {
		err = r.byRules(lctx)
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("agent: %w", ctx.Err())
	}
	if err != nil {
		return nil, err
	}
	if lctx.Err() != nil && r.out.Stopped == "" {
		r.out.Stopped = "budget: time"
	}
	r.out.Passages = r.ranked()
	r.out.ByAspect = make([][]string, len(r.out.Triage.Aspects))
	for i := range r.out.ByAspect {
		r.out.ByAspect[i] = []string{}
		for _, d := range retrieve.FuseRRF(r.lists[i], 0, 0) {
			r.out.ByAspect[i] = append(r.out.ByAspect[i], d.ID)
		}
	}
	r.out.ElapsedMS = time.Since(r.start).Milliseconds()
	r.out.Sufficient = r.out.Verdict.Sufficient
	a.logger().DebugContext(ctx, "agent: gathered", "kind", r.out.Triage.Kind, "rounds", r.out.Rounds,
		"tool_calls", r.out.ToolCalls, "passages", len(r.out.Passages), "sufficient", r.out.Sufficient, "stopped", r.out.Stopped)
	return r.out, nil
}

func (a *Agent) logger() *slog.Logger {
	if a.Logger != nil {
		return a.Logger
	}
	return slog.Default()
}

func (a *Agent) stage(ctx context.Context, name string) (context.Context, func(error)) {
	if a.Stage == nil {
		return ctx, func(error) {}
	}
	return a.Stage(ctx, name)
}

// emit records a step and hands it to the caller.
func (r *run) emit(s Step) {
	s.N = len(r.out.Steps) + 1
	s.Round = r.out.Rounds
	s.AtMS = time.Since(r.start).Milliseconds()
	r.out.Steps = append(r.out.Steps, s)
	if r.req.OnStep != nil {
		r.req.OnStep(s)
	}
}

// spent names the bound the run has reached, "" when none.
func (r *run) spent(ctx context.Context, calls int) string {
	switch {
	case ctx.Err() != nil:
		return "budget: time"
	case r.out.ToolCalls+calls > r.budget.ToolCalls:
		return "budget: tool calls"
	case r.out.Usage.Total() >= r.budget.Tokens:
		return "budget: tokens"
	}
	return ""
}

// source finds a source by name.
func (r *run) source(name string) (int, bool) {
	for i, s := range r.a.Sources {
		if s.Name == name {
			return i, true
		}
	}
	return 0, false
}

// search is one tool call that searches a source for an aspect.
type search struct {
	id     string
	source int
	aspect int
	q      Query
	args   json.RawMessage
}

// expansion is one tool call that follows a gathered passage.
type expansion struct {
	id     string
	tool   string // ToolNeighbours, ToolLinked or ToolDocument
	doc    *document.Document
	aspect int
	n      int // window or limit
	args   json.RawMessage
}

// result of one call, in the order the calls were made.
type result struct {
	docs    []*document.Document
	err     error
	late    bool
	elapsed time.Duration
}

// runCalls runs searches and expansions concurrently, each under its
// source's timeout, records their steps in call order and adds what they
// found to the pool. A failing call is reported, never fatal.
func (r *run) runCalls(ctx context.Context, searches []search, exps []expansion) []result {
	for _, s := range searches {
		r.emit(Step{Kind: StepToolCall, Call: &Call{ID: s.id, Tool: ToolSearch, Arguments: s.args}})
	}
	for _, e := range exps {
		r.emit(Step{Kind: StepToolCall, Call: &Call{ID: e.id, Tool: e.tool, Arguments: e.args}})
	}
	r.out.ToolCalls += len(searches) + len(exps)
	res := make([]result, len(searches)+len(exps))
	var wg sync.WaitGroup
	for i, s := range searches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src := r.a.Sources[s.source]
			res[i] = r.timed(ctx, src.Timeout, "agent.tool", func(ctx context.Context) ([]*document.Document, error) {
				return src.Searcher.Search(ctx, s.q)
			})
		}()
	}
	for j, e := range exps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src := r.a.Sources[r.from[e.doc.ID]] // parseExpansion saw it came from a source
			res[len(searches)+j] = r.timed(ctx, src.Timeout, "agent.tool", func(ctx context.Context) ([]*document.Document, error) {
				if src.Expander == nil {
					return nil, fmt.Errorf("source %q cannot follow passages", src.Name)
				}
				switch e.tool {
				case ToolNeighbours:
					return src.Expander.Neighbours(ctx, e.doc, e.n)
				case ToolDocument:
					return src.Expander.Document(ctx, e.doc, e.n)
				}
				return src.Expander.Linked(ctx, e.doc, e.n)
			})
		}()
	}
	wg.Wait()
	for i, s := range searches {
		res[i].docs = r.add(s.source, s.aspect, res[i].docs)
		r.report(s.id, ToolSearch, r.a.Sources[s.source].Name, res[i])
	}
	for j, e := range exps {
		k := len(searches) + j
		res[k].docs = r.add(r.from[e.doc.ID], e.aspect, res[k].docs)
		r.report(e.id, e.tool, r.a.Sources[r.from[e.doc.ID]].Name, res[k])
	}
	return res
}

// timed runs one call under a timeout in an observed stage.
func (r *run) timed(ctx context.Context, timeout time.Duration, stage string, f func(context.Context) ([]*document.Document, error)) result {
	if timeout <= 0 {
		timeout = DefaultSourceTimeout
	}
	t0 := time.Now()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	sctx, end := r.a.stage(cctx, stage)
	docs, err := f(sctx)
	if err == nil && cctx.Err() != nil {
		err = cctx.Err() // it answered, but too late to count
	}
	end(err)
	late := err != nil && errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	if late {
		err = fmt.Errorf("no answer within %s", timeout)
	}
	return result{docs: docs, err: err, late: late, elapsed: time.Since(t0)}
}

// report records a call's result step and, for a failure, the source's
// error.
func (r *run) report(id, tool, source string, res result) {
	cr := &CallResult{ID: id, Tool: tool, IDs: make([]string, 0, len(res.docs)), ElapsedMS: res.elapsed.Milliseconds(), TimedOut: res.late}
	for _, d := range res.docs {
		cr.IDs = append(cr.IDs, d.ID)
	}
	if res.err != nil {
		cr.Error = res.err.Error()
		se := retrieve.SourceError{Source: source, Message: cr.Error, TimedOut: res.late}
		if !slices.Contains(r.out.Failures, se) {
			r.out.Failures = append(r.out.Failures, se)
		}
	}
	cr.New = r.fresh(res.docs)
	r.emit(Step{Kind: StepToolResult, Result: cr})
}

// add puts what a call found into the pool under an aspect, returning the
// documents as pooled (a passage found twice is one document).
func (r *run) add(source, aspect int, docs []*document.Document) []*document.Document {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*document.Document, 0, len(docs))
	for _, d := range docs {
		if d == nil {
			continue
		}
		if have, ok := r.pool[d.ID]; ok {
			out = append(out, have)
			continue
		}
		r.pool[d.ID], r.from[d.ID] = d, source
		out = append(out, d)
	}
	if len(out) > 0 {
		r.lists[aspect] = append(r.lists[aspect], out)
	}
	return out
}

// fresh counts the documents first found by the latest call: those in
// exactly one list.
func (r *run) fresh(docs []*document.Document) int {
	n := 0
	for _, d := range docs {
		seen := 0
		for _, ls := range r.lists {
			for _, l := range ls {
				if slices.Contains(l, d) {
					seen++
				}
			}
		}
		if seen <= 1 {
			n++
		}
	}
	return n
}

// ranked is the gathered list: each aspect's lists fused by reciprocal
// rank, then the aspects taking turns, duplicates (by id, then by exact
// content) dropped.
func (r *run) ranked() []*document.Document {
	aspects := make([]int, 0, len(r.lists))
	for k := range r.lists {
		aspects = append(aspects, k)
	}
	slices.Sort(aspects)
	fused := make([][]*document.Document, len(aspects))
	for i, k := range aspects {
		fused[i] = retrieve.FuseRRF(r.lists[k], 0, 0)
	}
	var out []*document.Document
	seen := map[string]bool{}
	for depth := 0; ; depth++ {
		more := false
		for _, l := range fused {
			if depth >= len(l) {
				continue
			}
			more = true
			if d := l[depth]; !seen[d.ID] {
				seen[d.ID] = true
				out = append(out, d)
			}
		}
		if !more {
			break
		}
	}
	return rag.Dedupe(out)
}

// NothingToLookUp answers, without a model, a question the triage found
// nothing to look up for.
const NothingToLookUp = "There is nothing to look up in that: ask a question about the documents."

// Abstention is the answer of a run that did not gather enough: what it
// lacked and what it searched, so the asker can rephrase or add sources.
func Abstention(g *Gathered) string {
	var b strings.Builder
	b.WriteString("Not enough was found to answer this.")
	if len(g.Verdict.Missing) > 0 {
		ms := make([]string, len(g.Verdict.Missing))
		for i, m := range g.Verdict.Missing {
			ms[i] = strings.TrimRight(m, "?.!;: ")
		}
		b.WriteString(" Missing: " + strings.Join(ms, "; ") + ".")
	}
	if len(g.Queries) > 0 {
		qs := make([]string, len(g.Queries))
		for i, q := range g.Queries {
			qs[i] = strconv.Quote(q)
		}
		b.WriteString(" Searched: " + strings.Join(qs, ", "))
		fmt.Fprintf(&b, " (%d rounds, %d tool calls", g.Rounds, g.ToolCalls)
		if len(g.Failures) > 0 {
			names := make([]string, len(g.Failures))
			for i, f := range g.Failures {
				names[i] = f.Source
			}
			b.WriteString("; failed: " + strings.Join(slices.Compact(names), ", "))
		}
		b.WriteString(").")
	}
	return b.String()
}
