// Package rag answers questions from a knowledge base with citations a
// person can check (SEMANTICS §5). A Pipeline runs, in order:
//
//	pre-processors   rewrite the retrieval query (never the user's question);
//	                 expanders (decompose, multi-query) make several
//	retrieval        under filter.Merge(rag scope, retriever scope, per-run filter),
//	                 once per query, lists fused by reciprocal rank; semantic
//	                 memory of the authorised threads appended
//	dedupe           by exact content, first occurrence kept in place
//	post-processors  rerank, threshold, pack…
//	prompt           fixed Instructions; the question then an <EXTRA-CONTEXT>
//	                 block of numbered passages, in the user's turn
//	generation       a ChatModel, whole or streamed; without one, an
//	                 extractive answer quoting the passages' best sentences
//	citations        [n] markers resolved to passages with provenance;
//	                 markers naming no passage removed
//
// Threads keep the conversation (questions and answers, never the passages)
// in the store, so a follow-up question is read in context.
package rag

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/llm"
	"github.com/quarry-rag/quarry/retrieve"
	"github.com/quarry-rag/quarry/store"
)

// Defaults of a Pipeline's zero fields.
const (
	DefaultTopK         = 8
	DefaultHistoryTurns = 10
)

// ErrNeedsModel is returned for what only a chat model can do, such as a
// structured answer.
var ErrNeedsModel = errors.New("this needs a chat model")

// PreProcessor rewrites the retrieval query before retrieval: query
// expansion, HyDE, a follow-up rewritten to stand alone. It sees the
// thread's earlier turns; the user's question itself is never changed. A
// pre-processor that is also a retrieve.Expander turns each query into
// several, retrieved separately and fused. Package retrieve has Quarry's.
type PreProcessor interface {
	Rewrite(ctx context.Context, query string, history []llm.Message) (string, error)
}

// PostProcessor reworks the retrieved passages (rerank, threshold, pack):
// each receives the previous one's output and the user's question, and a
// context carrying the retrieval request (retrieve.RequestFrom), so one
// that fetches more text does so under the same scopes. Package rerank has
// Quarry's.
type PostProcessor interface {
	Process(ctx context.Context, question string, docs []*document.Document) ([]*document.Document, error)
}

// Pipeline answers questions. Fields are read, never written, by Ask and
// Stream, so one Pipeline serves concurrent questions.
type Pipeline struct {
	// Retriever finds passages; required.
	Retriever Retriever
	// Scope is the rag scope: a mandatory filter merged into every
	// retrieval before the retriever's own scope and the per-run filter.
	Scope filter.Expr
	// PreProcessors and PostProcessors run in order.
	PreProcessors  []PreProcessor
	PostProcessors []PostProcessor
	// Model writes answers; nil answers extractively.
	Model llm.ChatModel
	// Threads keeps conversations; nil keeps none, and a request naming a
	// thread is then an error.
	Threads store.ThreadStore
	// Memory is semantic memory: a request naming Memory threads recalls
	// their past turns beside the documents. A memory that is also a
	// retrieve.Rememberer (retrieve.Memory with a collection) keeps every
	// answered turn of a thread; retrieve.ThreadMemory reads Threads
	// instead. Nil has none.
	Memory retrieve.Recall
	// TopK is how many passages retrieval returns, DefaultTopK when 0.
	TopK int
	// HistoryTurns is how many earlier turns of a thread the model sees,
	// DefaultHistoryTurns when 0, none when negative.
	HistoryTurns int
	// MaxTokens caps a generated answer; 0 is the provider's default.
	MaxTokens int
	// Extractive configures answers written without a model.
	Extractive Extractive
	// MinRelevance is the relevance floor (see Relevance): when the best
	// passage covers less of the question, no passage is used, an
	// extractive answer says NotRelevant and a model is asked without
	// context, so it says the knowledge base had nothing. 0 has no floor;
	// MinRelevanceFor gives the floor fit for an embedder.
	MinRelevance float64
	// Logger receives debug records; slog.Default() when nil.
	Logger *slog.Logger
	// Stage, when set, observes the pipeline's stages ("retrieve",
	// "generate"): it returns the context to run the stage in and the
	// function that ends it with the stage's error. Observing through a
	// hook rather than a wrapper keeps the retriever's and the model's
	// optional capabilities in view.
	Stage func(ctx context.Context, name string) (context.Context, func(error))
}

// stage starts an observed stage.
func (p *Pipeline) stage(ctx context.Context, name string) (context.Context, func(error)) {
	if p.Stage == nil {
		return ctx, func(error) {}
	}
	return p.Stage(ctx, name)
}

// generate asks the model for a whole reply in a "generate" stage.
func (p *Pipeline) generate(ctx context.Context, r *run) (llm.Response, error) {
	ctx, end := p.stage(ctx, "generate")
	resp, err := p.Model.Generate(ctx, p.llmRequest(r))
	end(err)
	return resp, err
}

// Request is one question.
type Request struct {
	Question string
	// Thread names the conversation the question belongs to; empty for a
	// question on its own.
	Thread string
	// Filter is this run's addition to the scopes: it narrows, never widens.
	Filter filter.Expr
	// TopK overrides the pipeline's TopK when positive.
	TopK int
	// Schema asks for a structured answer: JSON valid against the schema,
	// with citation markers inside its text values. Needs a chat model.
	Schema *llm.Schema
	// Memory names the threads whose past turns semantic memory may
	// recall for this question: only threads the asker is authorised to
	// read, for they are memory's whole scope (the rag scope and Filter
	// speak of documents' fields). Needs the pipeline's Memory.
	Memory []string
	// MinRelevance overrides the pipeline's relevance floor when positive;
	// negative turns the floor off.
	MinRelevance float64
	// Aspects are the parts of a question with several (an agent's
	// triage): an extractive answer quotes each part's two best sentences
	// (from different passages) before the best for the whole.
	Aspects []Aspect
	// Reply, when set, is the answer: nothing is retrieved or generated,
	// and the turn is recorded like any other. An agent that gathered too
	// little abstains this way, saying what it searched.
	Reply *Reply
	// Trace is kept with the recorded turn (an agent's steps), as JSON.
	Trace json.RawMessage
}

// Aspect is one part of a question.
type Aspect struct {
	Text string
	// IDs are the passages found for this part, best first; its sentence
	// is taken from them when any was retrieved, else from any passage.
	IDs []string
}

// Reply is an answer decided before retrieval.
type Reply struct {
	Text      string
	Abstained bool
}

// Answer is a cited answer.
type Answer struct {
	// Text is the answer with its citation markers; for a structured
	// answer, the JSON.
	Text string `json:"answer"`
	// JSON is the structured answer, when the request had a schema.
	JSON json.RawMessage `json:"json,omitempty"`
	// Extractive reports an answer quoted from the passages, with no model.
	Extractive bool `json:"extractive"`
	// Abstained reports that retrieval found no passage, or that the
	// passages fell under the relevance floor: none was used, and the
	// answer cites nothing.
	Abstained bool `json:"abstained,omitempty"`
	// Relevance is how much of the question the best retrieved passage
	// covers (see Relevance), whether or not the floor let it through.
	Relevance float64 `json:"relevance"`
	// Citations are the passages the answer cites, by number.
	Citations []Citation `json:"citations"`
	// Quotes are the sentences of an extractive answer, in order, each with
	// the number of the passage it was quoted from.
	Quotes []Quote `json:"quotes,omitempty"`
	// Passages are all the passages sent with the question, numbered from 1.
	Passages []Citation `json:"-"`
	// Query is the retrieval query after the pre-processors; Queries all
	// of them when an expander made several.
	Query   string   `json:"query"`
	Queries []string `json:"queries,omitempty"`
	// SourceErrors lists the sources of a multi-source retrieval that
	// failed or timed out; the answer comes from the others.
	SourceErrors []retrieve.SourceError `json:"sourceErrors,omitempty"`
	Thread       string                 `json:"thread,omitempty"`
	Usage        llm.Usage              `json:"usage"`
}

// Citation is a numbered passage and where it comes from.
type Citation struct {
	N          int      `json:"n"`
	ID         string   `json:"id"`
	SourceType string   `json:"sourceType"`
	Source     string   `json:"source"`
	Page       int      `json:"page,omitempty"`
	Headings   []string `json:"headings,omitempty"`
	LineStart  int      `json:"lineStart,omitempty"`
	LineEnd    int      `json:"lineEnd,omitempty"`
	Text       string   `json:"text"`
	// Document is the passage as retrieved: metadata, score, provenance.
	Document *document.Document `json:"-"`
}

// Location says where the passage sits: "guide.md · Setup › Install ·
// lines 4-9", "report.pdf · page 3".
func (c Citation) Location() string {
	return document.Locate(c.Source, document.Provenance{Page: c.Page, HeadingPath: c.Headings, LineStart: c.LineStart, LineEnd: c.LineEnd})
}

func citationOf(n int, d *document.Document) Citation {
	p := d.Provenance
	return Citation{N: n, ID: d.ID, SourceType: d.SourceType, Source: d.SourceName, Page: p.Page,
		Headings: p.HeadingPath, LineStart: p.LineStart, LineEnd: p.LineEnd, Text: d.Content, Document: d}
}

// Event is one step of a streamed answer: a piece of text, or, last, the
// whole Answer. The pieces add up to Answer.Text.
type Event struct {
	Text   string
	Answer *Answer
}

// run is one question on its way through the pipeline.
type run struct {
	req      Request
	queries  []string
	history  []llm.Message
	passages []*document.Document
	failures []retrieve.SourceError
	// relevance is Relevance of the retrieved passages; abstained says
	// there were none, or belowFloor that they fell under the floor and
	// were set aside.
	relevance             float64
	abstained, belowFloor bool
	// analyzer analyses the question and passages as keyword search does
	// (the pipeline's Extractive.Language); the extractive answer reuses it.
	analyzer *bm25.Analyzer
}

// Ask answers a question.
func (p *Pipeline) Ask(ctx context.Context, req Request) (*Answer, error) {
	r, err := p.prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	if req.Reply != nil {
		return p.replied(ctx, r)
	}
	if p.Model == nil {
		return p.extractive(ctx, r)
	}
	resp, err := p.generate(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("answer: %w", err)
	}
	return p.finish(ctx, r, resp.Text, resp.Usage)
}

// Stream answers a question as the model writes, yielding text with
// citation markers already checked (a marker is held back until it is
// known to name a passage), then the Answer — the same Answer Ask gives
// for the same reply. Structured and extractive answers arrive whole.
// Breaking out of the loop stops generation.
func (p *Pipeline) Stream(ctx context.Context, req Request) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		r, err := p.prepare(ctx, req)
		if err != nil {
			yield(Event{}, err)
			return
		}
		if p.Model == nil || req.Schema != nil || req.Reply != nil {
			var a *Answer
			if req.Reply != nil {
				a, err = p.replied(ctx, r)
			} else if p.Model == nil {
				a, err = p.extractive(ctx, r)
			} else {
				var resp llm.Response
				if resp, err = p.generate(ctx, r); err == nil {
					a, err = p.finish(ctx, r, resp.Text, resp.Usage)
				}
			}
			if err != nil {
				yield(Event{}, err)
				return
			}
			if yield(Event{Text: a.Text}, nil) {
				yield(Event{Answer: a}, nil)
			}
			return
		}
		cs := &citeStream{valid: validFor(r.passages)}
		var usage llm.Usage
		gctx, end := p.stage(ctx, "generate")
		var genErr error
		defer func() { end(genErr) }()
		for ev, err := range p.Model.Stream(gctx, p.llmRequest(r)) {
			if err != nil {
				genErr = err
				yield(Event{}, fmt.Errorf("answer: %w", err))
				return
			}
			if ev.Done {
				usage = ev.Usage
			}
			if t := cs.add(ev.Text); t != "" && !yield(Event{Text: t}, nil) {
				return
			}
		}
		if t := cs.finish(); t != "" && !yield(Event{Text: t}, nil) {
			return
		}
		a, err := p.finish(ctx, r, cs.raw.String(), usage)
		if err != nil {
			yield(Event{}, err)
			return
		}
		yield(Event{Answer: a}, nil)
	}
}

// prepare checks the request and runs everything before generation.
func (p *Pipeline) prepare(ctx context.Context, req Request) (*run, error) {
	req.Question = strings.TrimSpace(req.Question)
	if req.Question == "" {
		return nil, errors.New("ask: the question is empty")
	}
	if p.Retriever == nil {
		return nil, errors.New("ask: the pipeline has no retriever")
	}
	if req.Schema != nil && p.Model == nil {
		return nil, fmt.Errorf("ask: a structured answer: %w (set llm)", ErrNeedsModel)
	}
	if req.Thread != "" {
		if p.Threads == nil {
			return nil, fmt.Errorf("ask: thread %q: %w: this store keeps no threads", req.Thread, store.ErrUnsupported)
		}
		if err := store.CheckThreadID(req.Thread); err != nil {
			return nil, fmt.Errorf("ask: %w", err)
		}
	}
	r := &run{req: req, queries: []string{req.Question}}
	if req.Reply != nil {
		return r, nil
	}
	if err := p.loadHistory(ctx, r); err != nil {
		return nil, err
	}
	if err := p.transform(ctx, r); err != nil {
		return nil, err
	}
	k := p.TopK
	if req.TopK > 0 {
		k = req.TopK
	}
	if k <= 0 {
		k = DefaultTopK
	}
	var memory Retriever
	if len(req.Memory) > 0 {
		if p.Memory == nil {
			return nil, errors.New("ask: semantic memory was asked for, but the pipeline has none")
		}
		var err error
		if memory, err = p.Memory.For(req.Memory); err != nil {
			return nil, fmt.Errorf("ask: %w", err)
		}
	}
	// Expanded queries are retrieved concurrently; lists keep query order.
	lists := make([][]*document.Document, len(r.queries))
	fails := make([][]retrieve.SourceError, len(r.queries))
	errs := make([]error, len(r.queries))
	var wg sync.WaitGroup
	for i, q := range r.queries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lists[i], fails[i], errs[i] = p.retrieveOne(ctx, RetrieveRequest{Query: q, Scope: p.Scope, Filter: req.Filter, TopK: k}, memory)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, fs := range fails {
		for _, f := range fs {
			if !slices.Contains(r.failures, f) {
				r.failures = append(r.failures, f)
				p.logger().WarnContext(ctx, "rag: a source failed", "source", f.Source, "error", f.Message, "timed_out", f.TimedOut)
			}
		}
	}
	topK := 0 // one list stays whole, as the retriever returned it
	if len(lists) > 1 {
		topK = k
	}
	docs := Dedupe(retrieve.FuseRRF(lists, 0, topK))
	ctx = retrieve.WithRequest(ctx, RetrieveRequest{Query: r.queries[0], Scope: p.Scope, Filter: req.Filter, TopK: k})
	var err error
	for i, post := range p.PostProcessors {
		if docs, err = post.Process(ctx, req.Question, docs); err != nil {
			return nil, fmt.Errorf("ask: post-processor %d: %w", i+1, err)
		}
	}
	r.passages = docs
	if err := p.judgeRelevance(ctx, r); err != nil {
		return nil, err
	}
	p.logger().DebugContext(ctx, "rag: retrieved", "queries", len(r.queries), "query", r.queries[0],
		"passages", len(docs), "failed_sources", len(r.failures), "thread", req.Thread,
		"relevance", r.relevance, "abstained", r.abstained)
	return r, nil
}

// judgeRelevance measures the passages' relevance to the question and,
// under the floor, sets them aside.
func (p *Pipeline) judgeRelevance(ctx context.Context, r *run) error {
	floor := p.MinRelevance
	if r.req.MinRelevance != 0 {
		floor = r.req.MinRelevance
	}
	an, err := bm25.NewAnalyzer(bm25.AnalyzerConfig{Language: p.Extractive.Language})
	if err != nil {
		return fmt.Errorf("ask: relevance: %w", err)
	}
	r.analyzer = an
	st := questionStats(an, r.req.Question, r.passages)
	var known map[string]bool
	if len(st.sets) > 0 && len(st.query) > 0 {
		if known, err = p.probeAbsent(ctx, r, an, st); err != nil {
			return err
		}
	}
	r.relevance = relevanceOf(st, known)
	switch {
	case len(r.passages) == 0:
		r.abstained = true
	case floor > 0 && r.relevance < floor:
		r.passages, r.abstained, r.belowFloor = nil, true, true
	}
	return nil
}

// maxQueries bounds how many retrieval queries expanders may make.
const maxQueries = 8

// transform runs the pre-processors over the retrieval queries: rewriters
// replace each query, expanders turn each into several.
func (p *Pipeline) transform(ctx context.Context, r *run) error {
	for i, pre := range p.PreProcessors {
		var next []string
		for _, q := range r.queries {
			if ex, ok := pre.(retrieve.Expander); ok {
				qs, err := ex.Expand(ctx, q, r.history)
				if err != nil {
					return fmt.Errorf("ask: pre-processor %d: %w", i+1, err)
				}
				next = append(next, qs...)
				continue
			}
			nq, err := pre.Rewrite(ctx, q, r.history)
			if err != nil {
				return fmt.Errorf("ask: pre-processor %d: %w", i+1, err)
			}
			next = append(next, nq)
		}
		seen := map[string]bool{}
		next = slices.DeleteFunc(next, func(q string) bool {
			drop := strings.TrimSpace(q) == "" || seen[q]
			seen[q] = true
			return drop
		})
		if len(next) == 0 {
			next = []string{r.req.Question}
		}
		r.queries = next[:min(len(next), maxQueries)]
	}
	return nil
}

// retrieveOne runs the retrieval of one query, reporting the failed
// sources of a multi-source retriever, and appends what semantic memory
// recalls for it.
func (p *Pipeline) retrieveOne(ctx context.Context, rr RetrieveRequest, memory Retriever) ([]*document.Document, []retrieve.SourceError, error) {
	var (
		docs  []*document.Document
		fails []retrieve.SourceError
		err   error
	)
	ctx, end := p.stage(ctx, "retrieve")
	defer func() { end(err) }()
	if rep, ok := p.Retriever.(retrieve.Reporter); ok {
		var res retrieve.Result
		res, err = rep.RetrieveReport(ctx, rr)
		docs, fails = res.Docs, res.Failures
	} else {
		docs, err = p.Retriever.Retrieve(ctx, rr)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("ask: retrieve: %w", err)
	}
	if memory != nil {
		// The authorised threads are memory's scope: the rag scope and the
		// run's filter speak of documents' fields, which turns lack.
		past, err := memory.Retrieve(ctx, RetrieveRequest{Query: rr.Query, TopK: rr.TopK})
		if err != nil {
			return nil, nil, fmt.Errorf("ask: semantic memory: %w", err)
		}
		docs = append(docs, past...)
	}
	return docs, fails, nil
}

// Dedupe drops documents whose content equals an earlier one's, exactly
// (case and spaces count), keeping the first in its place.
func Dedupe(docs []*document.Document) []*document.Document {
	seen := make(map[string]bool, len(docs))
	out := docs[:0:0]
	for _, d := range docs {
		if d == nil || seen[d.Content] {
			continue
		}
		seen[d.Content] = true
		out = append(out, d)
	}
	return out
}

// llmRequest lays out the conversation: the fixed instructions, the
// thread's earlier turns, and the question with its passages.
func (p *Pipeline) llmRequest(r *run) llm.Request {
	msgs := make([]llm.Message, 0, len(r.history)+2)
	msgs = append(msgs, llm.System(Instructions))
	msgs = append(msgs, r.history...)
	msgs = append(msgs, llm.User(Prompt(r.req.Question, r.passages)))
	return llm.Request{Messages: msgs, Schema: r.req.Schema, MaxTokens: p.MaxTokens}
}

func validFor(passages []*document.Document) func(int) bool {
	return func(n int) bool { return n >= 1 && n <= len(passages) }
}

// finish cleans the reply's markers, resolves its citations and records
// the turn.
func (p *Pipeline) finish(ctx context.Context, r *run, reply string, usage llm.Usage) (*Answer, error) {
	a := r.answer()
	a.Usage = usage
	var cited []int
	if r.req.Schema != nil {
		raw, nums, err := cleanJSON(reply, validFor(r.passages))
		if err != nil {
			return nil, fmt.Errorf("ask: the structured answer: %w", err)
		}
		a.JSON, a.Text, cited = raw, string(raw), nums
	} else {
		a.Text, cited = cleanMarkers(reply, validFor(r.passages))
	}
	for _, n := range cited {
		a.Citations = append(a.Citations, a.Passages[n-1])
	}
	if a.Citations == nil {
		a.Citations = []Citation{}
	}
	if err := p.record(ctx, r, a); err != nil {
		return nil, err
	}
	return a, nil
}

// replied is the answer a request decided (Request.Reply).
func (p *Pipeline) replied(ctx context.Context, r *run) (*Answer, error) {
	a := r.answer()
	a.Text, a.Abstained, a.Citations = r.req.Reply.Text, r.req.Reply.Abstained, []Citation{}
	return a, p.record(ctx, r, a)
}

// answer starts the run's Answer: its queries, thread, passages and the
// sources that failed.
func (r *run) answer() *Answer {
	a := &Answer{Query: r.queries[0], Thread: r.req.Thread, Passages: passagesOf(r.passages), SourceErrors: r.failures,
		Abstained: r.abstained, Relevance: r.relevance}
	if len(r.queries) > 1 {
		a.Queries = r.queries
	}
	return a
}

func passagesOf(docs []*document.Document) []Citation {
	out := make([]Citation, len(docs))
	for i, d := range docs {
		out[i] = citationOf(i+1, d)
	}
	return out
}

func (p *Pipeline) logger() *slog.Logger {
	if p.Logger != nil {
		return p.Logger
	}
	return slog.Default()
}

// loadHistory reads the thread's last turns as messages.
func (p *Pipeline) loadHistory(ctx context.Context, r *run) error {
	if r.req.Thread == "" || p.HistoryTurns < 0 {
		return nil
	}
	n := p.HistoryTurns
	if n == 0 {
		n = DefaultHistoryTurns
	}
	h, err := History(ctx, p.Threads, r.req.Thread, n)
	if err != nil {
		return fmt.Errorf("ask: %w", err)
	}
	r.history = h
	return nil
}

// History is a thread's last n turns as the messages a model reads: the
// questions and answers, none when the thread does not exist yet.
func History(ctx context.Context, ts store.ThreadStore, thread string, n int) ([]llm.Message, error) {
	turns, err := ts.Turns(ctx, thread, n)
	if errors.Is(err, store.ErrThreadNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []llm.Message
	for _, t := range turns {
		switch llm.Role(t.Role) {
		case llm.RoleUser, llm.RoleAssistant:
			out = append(out, llm.Message{Role: llm.Role(t.Role), Content: t.Content})
		}
	}
	return out, nil
}

// turnData is what a thread keeps beside an answer: its citations without
// the passages' text, which is never stored in history.
type turnData struct {
	Extractive bool       `json:"extractive,omitempty"`
	Citations  []Citation `json:"citations"`
	// Agent is the agent's run, when one gathered the passages.
	Agent json.RawMessage `json:"agent,omitempty"`
}

// record appends the question and the answer to the thread.
func (p *Pipeline) record(ctx context.Context, r *run, a *Answer) error {
	if r.req.Thread == "" {
		return nil
	}
	cites := make([]Citation, len(a.Citations))
	for i, c := range a.Citations {
		c.Text = ""
		cites[i] = c
	}
	data, err := json.Marshal(turnData{Extractive: a.Extractive, Citations: cites, Agent: r.req.Trace})
	if err != nil {
		return fmt.Errorf("ask: thread %s: %w", r.req.Thread, err)
	}
	now := time.Now().UTC()
	err = p.Threads.AppendTurns(ctx, r.req.Thread, []store.Turn{
		{Role: string(llm.RoleUser), Content: r.req.Question, Created: now},
		{Role: string(llm.RoleAssistant), Content: a.Text, Data: data, Created: now},
	})
	if err != nil {
		return fmt.Errorf("ask: record the turn: %w", err)
	}
	if m, ok := p.Memory.(retrieve.Rememberer); ok {
		// The answer stands without its memory: a failed write is logged.
		if err := m.Remember(ctx, r.req.Thread, r.req.Question, a.Text, now); err != nil {
			p.logger().WarnContext(ctx, "rag: semantic memory", "thread", r.req.Thread, "error", err)
		}
	}
	return nil
}
