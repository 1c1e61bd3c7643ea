package quarry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"
	"strings"

	"github.com/quarry-rag/quarry/agent"
	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/hierarchy"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/llm"
	"github.com/quarry-rag/quarry/rag"
	"github.com/quarry-rag/quarry/rerank/spec"
	"github.com/quarry-rag/quarry/retrieve"
	"github.com/quarry-rag/quarry/store"
)

// Limits every surface shares.
const (
	// MaxTopK bounds a request's top-k: results go into a person's screen
	// or a model's context.
	MaxTopK = 100
	// MaxDocuments bounds one AddDocuments call, so a single call cannot
	// hold the embedder for long.
	MaxDocuments = 256
)

// Scope is what a caller may reach. Operators and the library's own
// callers are trusted (Developer); an API key's or an MCP client's scope
// comes from its credentials. A scope only narrows: its Filter is ANDed
// into every search, answer, count and delete, and documents it adds must
// match it.
type Scope struct {
	// Collections the caller may use; empty means all.
	Collections []string
	// Filter is the mandatory filter; nil means none.
	Filter filter.Expr
	// AllowRawFilters lets the caller's filters carry raw, store-tagged
	// fragments (filter.CheckRequest); they stay under Filter.
	AllowRawFilters bool
	// ReadOnly refuses every operation that changes the knowledge base.
	ReadOnly bool
	// NoServerPaths refuses ingestion from the server's folders (keys
	// below admin).
	NoServerPaths bool
	// Owner namespaces the caller's conversation threads: they are stored
	// as Owner~id, so a key reads only its own. Empty for operators.
	Owner string
	// Profiles limits the caller to these agent profiles (KB.Profiles):
	// it searches and asks only through one of them, narrowed by the
	// profile's collections and view, and may do nothing else with the
	// documents but count them. Empty means no limit.
	Profiles []string
}

// Developer is the scope of the knowledge base's own code and operator:
// everything, raw filter fragments included.
func Developer() Scope { return Scope{AllowRawFilters: true} }

// Allows reports whether the scope may use a collection.
func (sc Scope) Allows(collection string) bool {
	return len(sc.Collections) == 0 || slices.Contains(sc.Collections, collection)
}

// MayReachAll reports whether the scope reaches every document of its
// collections: no mandatory filter. Operations that cannot be filtered
// (dropping a collection, ingestion jobs) need it.
func (sc Scope) MayReachAll() bool { return sc.Filter == nil && len(sc.Profiles) == 0 }

// MayIngestPaths is the one rule for ingesting the server's own files and
// folders (not uploads): a caller that may write, reach every document
// and read server paths. Surfaces ask it before they confine paths or
// create a collection, so a refused caller changes nothing; Ingest and
// StartIngest ask it again.
func (sc Scope) MayIngestPaths() error {
	if sc.ReadOnly || !sc.MayReachAll() || sc.NoServerPaths {
		return fmt.Errorf("%w: ingesting folders is not open to this caller (a read-only key, a scope filter, or a key below admin): upload files or add documents instead", ErrForbidden)
	}
	return nil
}

// thread is the stored id of a caller's thread.
func (sc Scope) thread(id string) (string, error) {
	if id == "" {
		return "", nil
	}
	if sc.Owner != "" {
		id = sc.Owner + "~" + id
	}
	if err := store.CheckThreadID(id); err != nil {
		return "", invalid(err)
	}
	return id, nil
}

// ThreadID is the stored id of the caller's thread id (Owner~id under an
// owner); threads are read and deleted by it.
func (sc Scope) ThreadID(id string) (string, error) {
	if id == "" {
		return "", invalid(errors.New("the thread id is empty"))
	}
	return sc.thread(id)
}

// ScopedCollection opens a collection the scope may use ("" for the
// default) with every check the knowledge base's own operations make: the
// scope's collections and profile limit, its filter against the schema,
// the embedder (with create, a missing one is created). Surfaces that hand
// a collection to a job of their own (uploads, server folders) take it
// from here.
func (kb *KB) ScopedCollection(ctx context.Context, sc Scope, name string, create bool) (*store.Collection, error) {
	return kb.collection(ctx, sc, name, create)
}

// collection opens a collection the scope may use ("" for the default);
// with create, a missing one is created.
func (kb *KB) collection(ctx context.Context, sc Scope, name string, create bool) (*store.Collection, error) {
	name = kb.name(name)
	if len(sc.Profiles) > 0 {
		return nil, fmt.Errorf("%w: this caller may only search and ask through its profiles (%s)", ErrForbidden, strings.Join(sc.Profiles, ", "))
	}
	if !sc.Allows(name) {
		return nil, fmt.Errorf("%w: collection %q is not open to this caller (open: %s)", ErrForbidden, name, strings.Join(sc.Collections, ", "))
	}
	// A caller held to a filter may not make a collection: it would be
	// the whole store's, seen by every caller who may list collections.
	c, err := kb.open(ctx, name, create && sc.Filter == nil)
	if errors.Is(err, store.ErrCollectionNotFound) && create && sc.Filter != nil {
		return nil, fmt.Errorf("%w: collection %q does not exist, and a caller held to a filter may not create one (every caller would see it): an operator or an admin key without a filter creates it", ErrForbidden, name)
	}
	if err != nil {
		return nil, err
	}
	if sc.Filter != nil {
		if err := filter.Validate(sc.Filter, c.Config().Schema); err != nil {
			return nil, fmt.Errorf("%w: this caller's scope cannot apply to collection %q: %v", ErrForbidden, name, err)
		}
	}
	return c, nil
}

// checkFilter checks a request's filter (nil passes) against the
// collection's schema and the scope's raw-filter policy.
func checkFilter(sc Scope, f filter.Expr, c *store.Collection) error {
	if f == nil {
		return nil
	}
	if err := filter.CheckRequest(f, c.Config().Schema, filter.RequestPolicy{AllowRaw: sc.AllowRawFilters}); err != nil {
		return fmt.Errorf("invalid filter for collection %q: %w", c.Name(), err)
	}
	return nil
}

// filterFor checks a request's filter, then puts it under the scope's
// filter.
func filterFor(sc Scope, f filter.Expr, c *store.Collection) (filter.Expr, error) {
	if err := checkFilter(sc, f, c); err != nil {
		return nil, err
	}
	return filter.Merge(sc.Filter, f), nil
}

func (kb *KB) topK(k int) (int, error) {
	switch {
	case k < 0:
		return 0, invalid(fmt.Errorf("top-k must be positive, got %d", k))
	case k > MaxTopK:
		return 0, invalid(fmt.Errorf("top-k is at most %d, got %d", MaxTopK, k))
	case k == 0:
		return kb.cfg.Search.TopK, nil
	}
	return k, nil
}

// Passage is one retrieved passage with where it came from: a search
// result or a citation, the same on every surface.
type Passage struct {
	Rank       int      `json:"rank" doc:"1-based rank; in citations, the n of the [n] marker" jsonschema:"1-based rank; in citations, the n of the [n] marker"`
	ID         string   `json:"id"`
	Score      float64  `json:"score"`
	SourceType string   `json:"sourceType" jsonschema:"file, url, object, manual or conversation"`
	Source     string   `json:"source" doc:"The source's name: a path relative to the ingested folder, a URL or an id" jsonschema:"the source's name: a path relative to the ingested folder, a URL or an id"`
	Page       int      `json:"page,omitempty" doc:"1-based page, for paged formats such as PDF" jsonschema:"1-based page, for paged formats such as PDF"`
	Headings   []string `json:"headings,omitempty" doc:"The headings enclosing the passage, outermost first" jsonschema:"the headings enclosing the passage, outermost first"`
	LineStart  int      `json:"lineStart,omitempty"`
	LineEnd    int      `json:"lineEnd,omitempty"`
	// Location is where a person finds it: "guide.md · Setup › Install ·
	// lines 4-9", "report.pdf · page 3".
	Location string             `json:"location" doc:"Where to find the passage, as a person would cite it" jsonschema:"where to find the passage, as a person would cite it"`
	Text     string             `json:"text"`
	Metadata map[string]any     `json:"metadata,omitempty"`
	Explain  *store.Explanation `json:"explain,omitempty" doc:"Each branch's rank and score, when asked for"`
	// Hierarchy places the passage in the knowledge hierarchy, when asked
	// for: its node, the node's neighbours, the results linked to it.
	Hierarchy *hierarchy.ResultContext `json:"hierarchy,omitempty" doc:"The passage's place in the knowledge hierarchy, when asked for"`
}

// PassageOf is a document as a passage of rank rank.
func PassageOf(rank int, d *document.Document) Passage {
	pv := d.Provenance
	return Passage{Rank: rank, ID: d.ID, Score: d.Score, SourceType: d.SourceType, Source: d.SourceName,
		Page: pv.Page, Headings: pv.HeadingPath, LineStart: pv.LineStart, LineEnd: pv.LineEnd,
		Location: document.Locate(d.SourceName, pv), Text: d.Content, Metadata: d.Metadata}
}

// citation is a cited passage.
func citation(ct rag.Citation) Passage {
	p := Passage{Rank: ct.N, ID: ct.ID, SourceType: ct.SourceType, Source: ct.Source, Page: ct.Page,
		Headings: ct.Headings, LineStart: ct.LineStart, LineEnd: ct.LineEnd, Location: ct.Location(), Text: ct.Text}
	if ct.Document != nil {
		p.Score, p.Metadata = ct.Document.Score, ct.Document.Metadata
	}
	return p
}

// SearchRequest is one search.
type SearchRequest struct {
	// Collection is the collection to search; "" for the default.
	Collection string
	Query      string
	// Mode is auto, keyword, vector, hybrid or "" (retrieve.ResolveMode).
	Mode string
	// Filter narrows the results; it is checked against the collection's
	// schema and the scope's raw-filter policy, and put under the scope.
	Filter filter.Expr
	// TopK is the number of results; the knowledge base's when 0.
	TopK int
	// Explain reports each branch's rank and score.
	Explain bool
	// Hierarchy places each result in the knowledge hierarchy.
	Hierarchy bool
	// Profile names the agent profile to search through (KB.Profiles):
	// its collections and view narrow the search, its settings stand for
	// what the request leaves empty.
	Profile string
}

// SearchResult is a search's results.
type SearchResult struct {
	Collection string `json:"collection"`
	// Mode is the mode that ran.
	Mode string `json:"mode"`
	// Calibrated names the configuration the collection's calibration chose
	// ("hybrid-convex-0.2"), when it chose the mode (quarry eval --calibrate).
	Calibrated string `json:"calibrated,omitempty" doc:"The configuration the collection's calibration chose, when it chose the mode"`
	// Trigger is the node whose trigger the query matched, with mode auto.
	Trigger *hierarchy.NodeRef `json:"trigger,omitempty" doc:"The knowledge hierarchy node whose trigger the query matched (mode auto)"`
	Results []Passage          `json:"results"`
}

// Search searches a collection the scope may read: the filter is checked
// and put under the scope, the mode resolved by the one rule, the query
// embedded when the mode needs it.
func (kb *KB) Search(ctx context.Context, sc Scope, req SearchRequest) (*SearchResult, error) {
	release, err := kb.hold(ctx, sc)
	if err != nil {
		return nil, err
	}
	defer release()
	if strings.TrimSpace(req.Query) == "" {
		return nil, invalid(errors.New("the query is empty: say what to look for"))
	}
	sc, prof, err := kb.through(sc, req.Profile)
	if err != nil {
		return nil, err
	}
	topK, err := kb.topKFor(prof, req.TopK)
	if err != nil {
		return nil, err
	}
	mode, err := retrieve.ResolveMode(req.Mode, kb.modeFor(prof), kb.emb.Model(), false)
	if err != nil {
		return nil, invalid(err)
	}
	c, err := kb.collection(ctx, sc, kb.collectionFor(prof, req.Collection), false)
	if err != nil {
		return nil, err
	}
	if mode, err = kb.calibrated(ctx, c, mode); err != nil {
		return nil, err
	}
	f, err := filterFor(sc, req.Filter, c)
	if err != nil {
		return nil, err
	}
	sreq := store.SearchRequest{Query: req.Query, Mode: mode.Mode, Fusion: mode.Fusion, Filter: f, TopK: topK, Explain: req.Explain}
	run := func(ctx context.Context, r store.SearchRequest) ([]store.Hit, error) { return kb.search(ctx, c, r) }
	var h *hierarchy.Hierarchy
	if mode.Triggers || req.Hierarchy {
		if h, err = hierarchy.Open(c); errors.Is(err, store.ErrUnsupported) {
			h = nil
		} else if err != nil {
			return nil, err
		}
	}
	var (
		hits []store.Hit
		node *store.Node
	)
	if mode.Triggers && h != nil {
		hits, node, err = h.TriggerSearch(ctx, sreq, run)
	} else {
		hits, err = run(ctx, sreq)
	}
	if err != nil {
		return nil, err
	}
	out := &SearchResult{Collection: c.Name(), Mode: string(mode.Mode), Results: make([]Passage, len(hits))}
	if mode.Calibrated {
		out.Calibrated = mode.Name
	}
	if node != nil {
		out.Trigger = &hierarchy.NodeRef{ID: node.ID, Name: node.Name, Path: node.Path}
	}
	for i, hit := range hits {
		out.Results[i] = PassageOf(i+1, hit.Doc)
		out.Results[i].Explain = hit.Explain
	}
	if req.Hierarchy && h != nil {
		rc, err := h.Context(ctx, hits)
		if err != nil {
			return nil, err
		}
		for i := range rc {
			out.Results[i].Hierarchy = &rc[i]
		}
	}
	return out, nil
}

// search embeds the query when the mode needs a vector and searches, each
// in an observed stage. A collection built with another embedder can still
// be searched by keywords.
// Query defaults: a query returns a few passages, as NeuRAG's did.
const (
	QueryTopK    = 5
	MaxQueryTopK = 10
)

// Query is NeuRAG's search: a node whose trigger the query is first, then
// the knowledge base's default mode (mode auto), QueryTopK passages unless
// topK names up to MaxQueryTopK.
func (kb *KB) Query(ctx context.Context, sc Scope, req SearchRequest) (*SearchResult, error) {
	switch {
	case req.TopK < 0 || req.TopK > MaxQueryTopK:
		return nil, invalid(fmt.Errorf("top_n %d: give 1 to %d (default %d)", req.TopK, MaxQueryTopK, QueryTopK))
	case req.TopK == 0:
		req.TopK = QueryTopK
	}
	req.Mode = "auto"
	return kb.Search(ctx, sc, req)
}

func (kb *KB) search(ctx context.Context, c *store.Collection, req store.SearchRequest) ([]store.Hit, error) {
	if req.Mode != store.ModeKeyword {
		if err := kb.CheckModel(c); err != nil {
			return nil, err
		}
		ectx, end := kb.stage(ctx, "embed")
		vecs, err := embed.EmbedQuery(ectx, kb.emb, []string{req.Query})
		end(err)
		if err != nil {
			return nil, fmt.Errorf("embed the query: %w", err)
		}
		req.Embedding = vecs[0]
	}
	if req.Mode == store.ModeVector {
		req.Query = ""
	}
	sctx, end := kb.stage(ctx, "search")
	hits, err := c.Search(sctx, req)
	end(err)
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", c.Name(), err)
	}
	return hits, nil
}

// AskRequest is one question.
type AskRequest struct {
	// Collection is the collection to ask; "" for the default.
	Collection string
	Question   string
	// Mode is the retrieval mode: auto, keyword, vector, hybrid or ""
	// (retrieve.ResolveMode; answers default to retrieve.AskMode).
	Mode string
	// Filter narrows the passages, as for Search.
	Filter filter.Expr
	// TopK is how many passages are retrieved; the knowledge base's when 0.
	TopK int
	// Thread names the conversation: its earlier turns are read and this
	// one recorded. It lives in the scope's thread space.
	Thread string
	// Memory names threads whose past exchanges are recalled beside the
	// documents (the scope's own threads).
	Memory []string
	// Schema is a JSON Schema: the answer is JSON valid against it. It
	// needs a chat model.
	Schema json.RawMessage
	// Post are post-processors after the knowledge base's own
	// (rerank/spec); a request may not name an address.
	Post []string
	// Transforms are query transforms after the knowledge base's own
	// (retrieve.NewTransform); they need a chat model.
	Transforms []string
	// MinRelevance overrides the relevance floor (search.min_relevance)
	// when positive, at most 1; negative turns it off for this question.
	MinRelevance float64
	// Profile names the agent profile to answer through, as for Search;
	// its model and post-processors apply too.
	Profile string
	// Agent gathers the passages in steps (package agent): triage, searches
	// and expansions as tools under the caller's scope, a sufficiency check
	// after each round, bounded by the knowledge base's [agent] budget; it
	// abstains when what it gathered does not suffice.
	Agent bool
}

// AskResult is a cited answer.
type AskResult struct {
	// Answer holds [n] markers naming its citations; for a structured
	// answer, the JSON.
	Answer string `json:"answer" doc:"The answer, with [n] markers naming its citations" jsonschema:"the answer, with [n] markers naming its citations"`
	// JSON is the structured answer, when the request had a schema.
	JSON       json.RawMessage `json:"json,omitempty" doc:"The structured answer, when a schema was given"`
	Extractive bool            `json:"extractive" doc:"True when the answer quotes passages because no chat model is configured" jsonschema:"true when the answer quotes the passages because no chat model is configured"`
	// Abstained reports that nothing retrieved passed the relevance
	// floor: the answer says so and cites nothing.
	Abstained bool `json:"abstained,omitempty" doc:"True when no passage was relevant enough: the answer says the knowledge base has nothing on the question and cites nothing" jsonschema:"true when no passage was relevant enough to answer from; the answer then cites nothing"`
	// Relevance is how much of the question the best passage covers, 0 to 1.
	Relevance float64   `json:"relevance" doc:"How much of the question the best retrieved passage covers, from 0 to 1" jsonschema:"how much of the question the best retrieved passage covers, from 0 to 1"`
	Citations []Passage `json:"citations" doc:"The passages cited; rank is the n of the [n] marker" jsonschema:"the passages the answer cites; rank is the n of its [n] marker"`
	// Mode is the retrieval mode that ran.
	Mode string `json:"mode"`
	// Query is the retrieval query after the transforms; Queries all of
	// them when an expander made several.
	Query   string   `json:"query"`
	Queries []string `json:"queries,omitempty"`
	Thread  string   `json:"thread,omitempty"`
	// SourceErrors lists sources of a multi-source retrieval that failed;
	// the answer comes from the others.
	SourceErrors []retrieve.SourceError `json:"sourceErrors,omitempty"`
	Usage        llm.Usage              `json:"usage"`
	// Agent is the agent's run, when the question was asked with Agent:
	// its triage, steps, queries, verdict and costs.
	Agent *agent.Gathered `json:"agent,omitempty" doc:"The agent's run (triage, steps, queries, verdict, costs), for questions asked with agent"`
	// Raw is the pipeline's answer, with the quotes of an extractive one.
	Raw *rag.Answer `json:"-"`
}

// asking is a question ready to run: its pipeline and request.
type asking struct {
	pipe   *rag.Pipeline
	req    rag.Request
	mode   store.Mode
	thread string // the caller's thread id
	// agent gathers the passages of an agent question; retr is the
	// collection's retriever it probes words with, gathered its run.
	agent    *agent.Agent
	retr     *retrieve.Collection
	gathered *agent.Gathered
}

// prepareAsk makes every check an answer needs before any retrieval, so a
// stream opens only for a question that can be answered.
func (kb *KB) prepareAsk(ctx context.Context, sc Scope, req AskRequest) (*asking, error) {
	if strings.TrimSpace(req.Question) == "" {
		return nil, invalid(errors.New("the question is empty"))
	}
	sc, prof, err := kb.through(sc, req.Profile)
	if err != nil {
		return nil, err
	}
	topK, err := kb.topKFor(prof, req.TopK)
	if err != nil {
		return nil, err
	}
	mode, err := retrieve.ResolveMode(req.Mode, kb.modeFor(prof), kb.emb.Model(), true)
	if err != nil {
		return nil, invalid(err)
	}
	c, err := kb.collection(ctx, sc, kb.collectionFor(prof, req.Collection), false)
	if err != nil {
		return nil, err
	}
	if mode.Mode != store.ModeKeyword {
		if err := kb.CheckModel(c); err != nil {
			return nil, err
		}
	}
	// The pipeline puts the filter under the scope (rag.Pipeline.Scope).
	if err := checkFilter(sc, req.Filter, c); err != nil {
		return nil, err
	}
	chat, err := kb.chatFor(prof)
	if err != nil {
		return nil, err
	}
	retr := &retrieve.Collection{Collection: c, Embedder: observedEmbedder{kb.emb, kb}, Mode: mode.Mode}
	pipe := kb.pipeline(retr, chat)
	pipe.Scope = sc.Filter
	for _, t := range append(slices.Clip(kb.transforms), req.Transforms...) {
		pre, err := retrieve.NewTransform(t, pipe.Model)
		if err != nil {
			return nil, invalid(err)
		}
		pipe.PreProcessors = append(pipe.PreProcessors, pre)
	}
	env := spec.Env{Retriever: retr, Model: pipe.Model, Embedder: kb.emb, AllowEndpoints: true}
	own, err := spec.Post(append(slices.Clip(kb.postFor(c.Name())), prof.post()...), env)
	if err != nil {
		return nil, invalid(err)
	}
	env.AllowEndpoints = false // an address is the operator's to choose
	theirs, err := spec.Post(req.Post, env)
	if err != nil {
		return nil, invalid(err)
	}
	pipe.PostProcessors = append(own, theirs...)
	// The operator's extra sources are searched beside the collection; one
	// that fails is reported, never fatal.
	sources := []retrieve.Source{{Name: "knowledge base", Retriever: retr}}
	if kb.web != nil {
		sources = append(sources, retrieve.Source{Name: "web", Retriever: kb.web})
	}
	if gr := kb.graphRetriever(); gr != nil {
		sources = append(sources, retrieve.Source{Name: "graph", Retriever: gr})
	}
	if kb.azure != nil {
		sources = append(sources, retrieve.Source{Name: "azure search", Retriever: kb.azure})
	}
	if len(sources) > 1 {
		pipe.Retriever = &retrieve.Parallel{Timeout: kb.sourceTimeout, Sources: sources}
	}
	if req.MinRelevance > 1 || math.IsNaN(req.MinRelevance) {
		return nil, invalid(fmt.Errorf("min relevance %g: use a share up to 1, or a negative number for none", req.MinRelevance))
	}
	r := rag.Request{Question: req.Question, Filter: req.Filter, TopK: topK, MinRelevance: req.MinRelevance}
	if len(req.Schema) > 0 {
		if !json.Valid(req.Schema) {
			return nil, invalid(errors.New("the answer schema is not JSON"))
		}
		if pipe.Model == nil {
			return nil, invalid(fmt.Errorf("a structured answer: %w: set llm in config.toml, QUARRY_LLM or --model", rag.ErrNeedsModel))
		}
		r.Schema = &llm.Schema{Schema: req.Schema}
	}
	if req.Thread != "" || len(req.Memory) > 0 {
		ts, err := kb.store.Threads()
		if err != nil {
			return nil, err
		}
		pipe.Threads = ts
		if r.Thread, err = sc.thread(req.Thread); err != nil {
			return nil, err
		}
		for _, m := range req.Memory {
			id, err := sc.ThreadID(m)
			if err != nil {
				return nil, err
			}
			r.Memory = append(r.Memory, id)
		}
		if len(r.Memory) > 0 {
			pipe.Memory = &retrieve.ThreadMemory{Threads: ts, Embedder: kb.emb}
		}
	}
	a := &asking{pipe: pipe, req: r, mode: mode.Mode, thread: req.Thread, retr: retr}
	if req.Agent {
		if len(req.Transforms) > 0 {
			return nil, invalid(errors.New("query transforms do not apply to an agent's question: the agent writes its own queries"))
		}
		pipe.PreProcessors = nil
		a.agent = kb.newAgent(sc, c, retr, pipe.Model, req)
	}
	return a, nil
}

func (a *asking) result(ans *rag.Answer) *AskResult {
	out := &AskResult{Answer: ans.Text, JSON: ans.JSON, Extractive: ans.Extractive, Abstained: ans.Abstained, Relevance: ans.Relevance,
		Citations: make([]Passage, len(ans.Citations)),
		Mode:      string(a.mode), Query: ans.Query, Queries: ans.Queries, Thread: a.thread, SourceErrors: ans.SourceErrors, Usage: ans.Usage, Raw: ans}
	if g := a.gathered; g != nil {
		out.Agent = g
		out.Queries = g.Queries
		if len(g.Queries) > 0 {
			out.Query = g.Queries[0]
		}
		out.SourceErrors = append(out.SourceErrors, g.Failures...)
		out.Usage.InputTokens += g.Usage.InputTokens
		out.Usage.OutputTokens += g.Usage.OutputTokens
	}
	for i, ct := range ans.Citations {
		out.Citations[i] = citation(ct)
	}
	return out
}

// CheckAsk makes every check Ask makes before retrieval (collection,
// filter, mode, specs, thread ids) without answering.
func (kb *KB) CheckAsk(ctx context.Context, sc Scope, req AskRequest) error {
	if req.Question == "" {
		req.Question = "?"
	}
	_, err := kb.prepareAsk(ctx, sc, req)
	return err
}

// Ask answers a question from a collection the scope may read, citing its
// passages.
func (kb *KB) Ask(ctx context.Context, sc Scope, req AskRequest) (*AskResult, error) {
	release, err := kb.hold(ctx, sc)
	if err != nil {
		return nil, err
	}
	defer release()
	a, err := kb.prepareAsk(ctx, sc, req)
	if err != nil {
		return nil, err
	}
	if a.agent != nil {
		if err := kb.gather(ctx, a, nil); err != nil {
			return nil, err
		}
	}
	ans, err := a.pipe.Ask(ctx, a.req)
	if err != nil {
		return nil, err
	}
	return a.result(ans), nil
}

// AskEvent is a piece of a streamed answer: an agent's steps as they
// happen, text as the model writes it, then the whole result.
type AskEvent struct {
	Step   *agent.Step
	Text   string
	Result *AskResult
}

// AskStream checks the question as Ask does, then returns the answer as it
// is written. An error before the stream opens is returned; one midway is
// the sequence's last element.
func (kb *KB) AskStream(ctx context.Context, sc Scope, req AskRequest) (iter.Seq2[AskEvent, error], error) {
	a, err := kb.prepareAsk(ctx, sc, req)
	if err != nil {
		return nil, err
	}
	return func(yield func(AskEvent, error) bool) {
		release, err := kb.hold(ctx, sc)
		if err != nil {
			yield(AskEvent{}, err)
			return
		}
		defer release()
		if a.agent != nil {
			// Steps are yielded from the goroutine that gathers (OnStep).
			gctx, cancel := context.WithCancel(ctx)
			defer cancel()
			stopped := false
			err := kb.gather(gctx, a, func(s agent.Step) {
				if !stopped && !yield(AskEvent{Step: &s}, nil) {
					stopped = true
					cancel() // the consumer is gone: stop gathering
				}
			})
			if stopped {
				return
			}
			if err != nil {
				yield(AskEvent{}, err)
				return
			}
		}
		for ev, err := range a.pipe.Stream(ctx, a.req) {
			if err != nil {
				yield(AskEvent{}, err)
				return
			}
			if ev.Text != "" && !yield(AskEvent{Text: ev.Text}, nil) {
				return
			}
			if ev.Answer != nil && !yield(AskEvent{Result: a.result(ev.Answer)}, nil) {
				return
			}
		}
	}, nil
}

// DeleteRequest selects passages to delete: every passage of Source, or
// every passage matching Filter (both: those matching both).
type DeleteRequest struct {
	Collection string
	Source     string
	Filter     filter.Expr
}

// ErrNothingSelected is returned by Delete for a request with neither a
// source nor a filter: deleting everything is not offered (drop the
// collection instead).
var ErrNothingSelected = invalid(errors.New("give a source or a filter: deleting everything is not offered (delete the collection instead)"))

// Delete deletes the selected passages the scope reaches and returns how
// many went.
func (kb *KB) Delete(ctx context.Context, sc Scope, req DeleteRequest) (int, error) {
	release, err := kb.hold(ctx, sc)
	if err != nil {
		return 0, err
	}
	defer release()
	if sc.ReadOnly {
		return 0, fmt.Errorf("%w: this caller may only read", ErrForbidden)
	}
	c, err := kb.collection(ctx, sc, req.Collection, false)
	if err != nil {
		return 0, err
	}
	if err := checkFilter(sc, req.Filter, c); err != nil {
		return 0, err
	}
	f := req.Filter
	if req.Source != "" {
		f = filter.Merge(f, filter.Eq("sourceName", req.Source))
	}
	// Checked before the scope joins: a scope alone must not delete all it
	// reaches.
	if f == nil {
		return 0, ErrNothingSelected
	}
	n, err := c.Delete(ctx, filter.Merge(sc.Filter, f))
	if err != nil {
		return 0, fmt.Errorf("delete from %q: %w", c.Name(), err)
	}
	return n, nil
}

// NewDocument is a text to store whole, as one passage.
type NewDocument struct {
	// ID is optional; a document with the same id is replaced.
	ID   string `json:"id,omitempty" doc:"Optional id; a document with the same id is replaced" jsonschema:"optional id; a document with the same id is replaced"`
	Text string `json:"text" minLength:"1" jsonschema:"the text, searchable as one passage"`
	// Source names it for citations and deletes (default: manual).
	Source   string         `json:"source,omitempty" doc:"Source name to cite and to delete by (default: manual)" jsonschema:"optional source name to cite and to delete by later (default: manual)"`
	Metadata map[string]any `json:"metadata,omitempty" jsonschema:"optional metadata: strings, numbers, booleans or lists of strings"`
}

// Documents turns texts given whole into documents, one passage each;
// what names the list in errors ("documents[2]: text is empty").
func Documents(what string, docs []NewDocument) ([]*document.Document, error) {
	ds := make([]*document.Document, len(docs))
	for i, nd := range docs {
		if strings.TrimSpace(nd.Text) == "" {
			return nil, invalid(fmt.Errorf("%s[%d]: text is empty", what, i))
		}
		d := document.New(nd.Text)
		if nd.ID != "" {
			d.ID = nd.ID
		}
		if nd.Source != "" {
			d.SourceName = nd.Source
		}
		if err := d.AddMetadata(nd.Metadata); err != nil {
			return nil, invalid(fmt.Errorf("%s[%d]: %w", what, i, err))
		}
		ds[i] = d
	}
	return ds, nil
}

// AddResult is what AddDocuments stored.
type AddResult struct {
	Collection string   `json:"collection"`
	IDs        []string `json:"ids" jsonschema:"the ids of the added documents, in order"`
}

// AddDocuments stores texts whole, each one passage, all or none, in a
// collection the scope may write (created when missing). Under a scope
// filter each must match it, and ids live in the scope's id space
// (ingest.Add).
func (kb *KB) AddDocuments(ctx context.Context, sc Scope, collection string, docs []NewDocument) (*AddResult, error) {
	release, err := kb.hold(ctx, sc)
	if err != nil {
		return nil, err
	}
	defer release()
	if sc.ReadOnly {
		return nil, fmt.Errorf("%w: this caller may only read", ErrForbidden)
	}
	switch {
	case len(docs) == 0:
		return nil, invalid(errors.New("documents is empty"))
	case len(docs) > MaxDocuments:
		return nil, invalid(fmt.Errorf("at most %d documents per call, got %d", MaxDocuments, len(docs)))
	}
	ds, err := Documents("documents", docs)
	if err != nil {
		return nil, err
	}
	c, err := kb.collection(ctx, sc, collection, true)
	if err != nil {
		return nil, err
	}
	if err := ingest.Add(ctx, c, kb.emb, ds, sc.Filter); err != nil {
		return nil, err
	}
	out := &AddResult{Collection: c.Name(), IDs: make([]string, len(ds))}
	for i, d := range ds {
		out.IDs[i] = d.ID
	}
	return out, nil
}

// CollectionInfo describes a collection as a scope sees it.
type CollectionInfo struct {
	Name      string           `json:"name"`
	Documents int              `json:"documents" doc:"Stored passages (chunks) this caller can reach" jsonschema:"stored passages this caller can reach"`
	Model     embed.ModelInfo  `json:"model" doc:"The embedding model the collection was built with"`
	Fields    *document.Schema `json:"schema,omitempty" doc:"Declared metadata fields"`
	Language  string           `json:"language,omitempty"`
	// Sources counts the collection's sources, in Status for scopes
	// without a filter.
	Sources int `json:"sources,omitempty" doc:"Sources (files, URLs, ids) in the collection, for callers without a filter"`
	// ByType counts the passages by source type (file, object, url,
	// manual, conversation, other), in Status for scopes without a filter.
	ByType map[string]int `json:"by_type,omitempty" doc:"Passages by source type: file, object, url, manual, conversation, other; for callers without a filter"`
	// SearchDefault is the configuration a search that asks for no mode
	// runs: the collection's calibration's choice, else the fixed rule's
	// mode.
	SearchDefault string `json:"search_default" doc:"The configuration a search that asks for no mode runs: the calibration's choice (quarry eval --calibrate), else the rule for the embedder"`
	// Calibration is the collection's calibration with its figures, in
	// Status for scopes without a filter.
	Calibration *retrieve.Calibration `json:"calibration,omitempty" doc:"The collection's calibration and every configuration's figure, for callers without a filter"`
}

// NewCollectionRequest is a collection to create.
type NewCollectionRequest struct {
	Name   string
	Schema *document.Schema
	// Language selects the keyword analyzer ("english" when empty).
	Language string
	// Embedder, when given, must name the knowledge base's embedder
	// (provider/model, or its full identity): a collection built with
	// another could not be searched here.
	Embedder string
}

// CreateCollection creates a collection with the knowledge base's
// embedder, for a caller that may write and use the name; a caller limited
// to profiles may not. The result describes the new, empty collection
// whatever the caller's filter.
func (kb *KB) CreateCollection(ctx context.Context, sc Scope, req NewCollectionRequest) (CollectionInfo, error) {
	if sc.ReadOnly || len(sc.Profiles) > 0 {
		return CollectionInfo{}, fmt.Errorf("%w: creating a collection is not open to this caller", ErrForbidden)
	}
	if sc.Filter != nil {
		// Every caller who may list collections would see it, whatever
		// their scope: a collection is not a tenant's.
		return CollectionInfo{}, fmt.Errorf("%w: a caller held to a filter may not create collections (every caller would see them): an operator or an admin key without a filter creates them", ErrForbidden)
	}
	if !sc.Allows(req.Name) {
		return CollectionInfo{}, fmt.Errorf("%w: collection %q is not open to this caller (open: %s)", ErrForbidden, req.Name, strings.Join(sc.Collections, ", "))
	}
	m := kb.emb.Model()
	if e := req.Embedder; e != "" && e != m.Provider+"/"+m.Model && e != m.String() {
		return CollectionInfo{}, invalid(fmt.Errorf("this knowledge base embeds with %s/%s; a collection of another embedder could not be searched here", m.Provider, m.Model))
	}
	c, err := kb.store.CreateCollection(ctx, store.CollectionConfig{Name: req.Name, Schema: req.Schema, Model: m, Language: req.Language})
	if err != nil {
		return CollectionInfo{}, err
	}
	info, _, err := kb.info(ctx, Scope{}, c.Config())
	return info, err
}

// DropCollection drops a collection with its documents, for a caller
// that may write, use the name and reach every document (a filter or a
// profile limit holds a caller to part of a collection; dropping reaches
// all of it).
func (kb *KB) DropCollection(ctx context.Context, sc Scope, name string) error {
	if sc.ReadOnly || !sc.MayReachAll() {
		return fmt.Errorf("%w: dropping a collection reaches every document, so it is not open to a caller with a filter, a profile limit or read rights only", ErrForbidden)
	}
	if !sc.Allows(name) {
		return fmt.Errorf("%w: collection %q is not open to this caller (open: %s)", ErrForbidden, name, strings.Join(sc.Collections, ", "))
	}
	return kb.store.DropCollection(ctx, name)
}

// Collections lists the collections the scope reaches, counting the
// passages its filter lets it see. A collection its filter cannot apply to
// holds nothing it may reach and is left out.
func (kb *KB) Collections(ctx context.Context, sc Scope) ([]CollectionInfo, error) {
	cfgs, err := kb.store.Collections(ctx)
	if err != nil {
		return nil, fmt.Errorf("list collections: %w", err)
	}
	out := []CollectionInfo{}
	for _, cc := range cfgs {
		if !sc.Allows(cc.Name) {
			continue
		}
		csc := sc
		if len(sc.Profiles) > 0 {
			view, ok := kb.viewOf(sc, cc.Name)
			if !ok {
				continue
			}
			csc.Filter = view
		}
		info, ok, err := kb.info(ctx, csc, cc)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, info)
		}
	}
	return out, nil
}

// CollectionInfo describes one collection as the scope sees it.
func (kb *KB) CollectionInfo(ctx context.Context, sc Scope, name string) (CollectionInfo, error) {
	c, err := kb.collection(ctx, sc, name, false)
	if err != nil {
		return CollectionInfo{}, err
	}
	info, _, err := kb.info(ctx, sc, c.Config())
	return info, err
}

func (kb *KB) info(ctx context.Context, sc Scope, cc store.CollectionConfig) (CollectionInfo, bool, error) {
	if sc.Filter != nil && filter.Validate(sc.Filter, cc.Schema) != nil {
		return CollectionInfo{}, false, nil
	}
	c, err := kb.store.Collection(ctx, cc.Name)
	if err != nil {
		return CollectionInfo{}, false, fmt.Errorf("collection %q: %w", cc.Name, err)
	}
	n, err := c.Count(ctx, sc.Filter)
	if err != nil {
		return CollectionInfo{}, false, fmt.Errorf("count %q: %w", cc.Name, err)
	}
	mode, err := kb.searchDefault(ctx, c)
	if err != nil {
		return CollectionInfo{}, false, err
	}
	return CollectionInfo{Name: cc.Name, Documents: n, Model: cc.Model, Fields: cc.Schema, Language: cc.Language, SearchDefault: mode.Config()}, true, nil
}

// searchDefault is what a search that asks for no mode runs on c.
func (kb *KB) searchDefault(ctx context.Context, c *store.Collection) (retrieve.Resolved, error) {
	mode, err := retrieve.ResolveMode("", kb.cfg.Search.Mode, kb.emb.Model(), false)
	if err != nil {
		return mode, err
	}
	return kb.calibrated(ctx, c, mode)
}

// calibrated lets c's calibration choose when the fixed rule chose a
// search's mode (retrieve.Resolved.Calibrate).
func (kb *KB) calibrated(ctx context.Context, c *store.Collection, mode retrieve.Resolved) (retrieve.Resolved, error) {
	if !mode.Default {
		return mode, nil
	}
	cal, err := retrieve.LoadCalibration(ctx, c)
	if err != nil {
		return mode, err
	}
	return mode.Calibrate(cal, kb.emb.Model()), nil
}

// observedEmbedder reports the embedding calls retrieval makes as "embed"
// stages. It keeps the provider's query input type: EmbedQuery goes to the
// provider's own (embed.EmbedQuery).
type observedEmbedder struct {
	embed.Embedder
	kb *KB
}

func (e observedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	ctx, end := e.kb.stage(ctx, "embed")
	v, err := e.Embedder.Embed(ctx, texts)
	end(err)
	return v, err
}

func (e observedEmbedder) EmbedQuery(ctx context.Context, queries []string) ([][]float32, error) {
	ctx, end := e.kb.stage(ctx, "embed")
	v, err := embed.EmbedQuery(ctx, e.Embedder, queries)
	end(err)
	return v, err
}

// Status is a knowledge base as a scope sees it.
type Status struct {
	DefaultCollection string `json:"default_collection"`
	// Model is the embedding model queries and documents are embedded with.
	Model embed.ModelInfo `json:"model"`
	// Chat reports whether a chat model writes answers (else they are
	// extractive).
	Chat        bool             `json:"chat" doc:"Whether a chat model writes answers (else they are extractive)"`
	Collections []CollectionInfo `json:"collections"`
	// LastJob is the newest ingestion job, for scopes that reach every
	// document (jobs name folders and counts of everything); Jobs counts
	// the recent ones by state.
	LastJob *store.Job `json:"last_job,omitempty"`
	Jobs    JobCounts  `json:"jobs" doc:"Recent ingestion jobs (the last 50) by state, for callers without a filter"`
}

// JobCounts counts recent ingestion jobs by state.
type JobCounts struct {
	Running     int `json:"running"`
	Failed      int `json:"failed"`
	Interrupted int `json:"interrupted"`
}

// Status describes the knowledge base as the scope sees it: its
// collections with the passages it reaches, and for scopes without a
// filter the sources of each and the latest job.
func (kb *KB) Status(ctx context.Context, sc Scope) (*Status, error) {
	cs, err := kb.Collections(ctx, sc)
	if err != nil {
		return nil, err
	}
	st := &Status{DefaultCollection: kb.DefaultCollection(), Model: kb.emb.Model(), Chat: kb.hasChat(), Collections: cs}
	if !sc.MayReachAll() {
		return st, nil
	}
	for i := range st.Collections {
		c, err := kb.store.Collection(ctx, st.Collections[i].Name)
		if err != nil {
			return nil, fmt.Errorf("collection %q: %w", st.Collections[i].Name, err)
		}
		if st.Collections[i].ByType, err = passagesByType(ctx, c, st.Collections[i].Documents); err != nil {
			return nil, err
		}
		if st.Collections[i].Calibration, err = retrieve.LoadCalibration(ctx, c); err != nil {
			return nil, err
		}
		srcs, err := c.Sources(ctx)
		if errors.Is(err, store.ErrUnsupported) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("sources of %q: %w", c.Name(), err)
		}
		st.Collections[i].Sources = len(srcs)
	}
	if js, err := kb.store.Jobs(); err == nil {
		jobs, err := js.ListJobs(ctx, statusJobs)
		if err != nil {
			return nil, fmt.Errorf("list jobs: %w", err)
		}
		if len(jobs) > 0 {
			st.LastJob = &jobs[0]
		}
		for _, j := range jobs {
			switch j.State {
			case store.JobRunning:
				st.Jobs.Running++
			case store.JobFailed:
				st.Jobs.Failed++
			case store.JobInterrupted:
				st.Jobs.Interrupted++
			}
		}
	}
	return st, nil
}

// statusJobs is how many recent jobs Status looks at.
const statusJobs = 50

// passagesByType counts a collection's passages per well-known source
// type; what none of them holds is "other". Types without passages are
// left out.
func passagesByType(ctx context.Context, c *store.Collection, total int) (map[string]int, error) {
	out := map[string]int{}
	rest := total
	for _, t := range []string{document.SourceFile, document.SourceObject, document.SourceURL, document.SourceManual, document.SourceConversation} {
		n, err := c.Count(ctx, filter.Eq("sourceType", t))
		if err != nil {
			return nil, fmt.Errorf("count %q by type: %w", c.Name(), err)
		}
		if n > 0 {
			out[t] = n
			rest -= n
		}
	}
	if rest > 0 {
		out["other"] = rest
	}
	return out, nil
}
