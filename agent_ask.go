package quarry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/quarry-rag/quarry/agent"
	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/hierarchy"
	"github.com/quarry-rag/quarry/llm"
	"github.com/quarry-rag/quarry/rag"
	"github.com/quarry-rag/quarry/retrieve"
	"github.com/quarry-rag/quarry/store"
)

// newAgent is the agent of one question: the asked collection as its
// main source, the web as a fallback and the knowledge graph and Azure AI
// Search index beside it when they are configured, every
// search under the caller's scope and the request's filter, a filter the
// model writes checked as a request's is (no raw fragments) and put under
// both.
func (kb *KB) newAgent(sc Scope, c *store.Collection, retr *retrieve.Collection, chat llm.ChatModel, req AskRequest) *agent.Agent {
	scope := filter.Merge(sc.Filter, req.Filter)
	cs := &collectionSource{kb: kb, c: c, retr: retr, scope: scope}
	sources := []agent.Source{{Name: c.Name(), Description: "the knowledge base's collection " + c.Name(),
		Searcher: cs, Expander: cs, Filterable: true, Timeout: kb.sourceTimeout}}
	if kb.web != nil {
		sources = append(sources, agent.Source{Name: "web", Description: "web search results",
			Searcher: agent.Retrieving(scoped{kb.web, scope}), Fallback: true, Timeout: kb.sourceTimeout})
	}
	if kb.azure != nil {
		// Its filterable fields take the model's filters too, under the
		// caller's scope like every search.
		sources = append(sources, agent.Source{Name: "azure", Description: "the Azure AI Search index " + kb.azure.Name,
			Searcher: agent.Retrieving(scoped{kb.azure, scope}), Filterable: true, Timeout: kb.sourceTimeout})
	}
	var tools []agent.Tool
	if kb.graph != nil && len(sc.Profiles) == 0 {
		if gr := kb.graphRetriever(); gr != nil {
			sources = append(sources, agent.Source{Name: "graph", Description: "the knowledge graph, searched with the " + kb.graphSearch + " template",
				Searcher: agent.Retrieving(scoped{gr, scope}), Timeout: kb.sourceTimeout})
		}
		// The graph's whole shape is for callers that reach every document.
		tools = kb.graph.Tools(scope, sc.MayReachAll())
	}
	b := kb.cfg.Agent
	return &agent.Agent{
		Sources:     sources,
		Tools:       tools,
		Model:       chat,
		Budget:      agent.Budget{Rounds: b.Rounds, ToolCalls: b.ToolCalls, Tokens: b.Tokens, Time: b.TimeLimit()},
		MinCoverage: kb.minRelevance(),
		Language:    c.Config().Language,
		Logger:      kb.log,
		Stage:       kb.stage,
	}
}

// scoped holds a retriever to a scope: every request is searched under
// it, whatever the request's own.
type scoped struct {
	r     retrieve.Retriever
	scope filter.Expr
}

func (s scoped) Retrieve(ctx context.Context, req retrieve.Request) ([]*document.Document, error) {
	req.Scope = filter.Merge(s.scope, req.Scope)
	return s.r.Retrieve(ctx, req)
}

// collectionSource is a collection as an agent's source, held to one
// scope.
type collectionSource struct {
	kb    *KB
	c     *store.Collection
	retr  *retrieve.Collection
	scope filter.Expr
}

// Search implements agent.Searcher.
func (s *collectionSource) Search(ctx context.Context, q agent.Query) ([]*document.Document, error) {
	r := *s.retr
	r.Scope = s.scope
	if q.Mode != "" {
		m, err := retrieve.ResolveMode(q.Mode, "", s.kb.emb.Model(), true)
		if err != nil {
			return nil, err
		}
		r.Mode = m.Mode
	}
	if r.Mode != store.ModeKeyword {
		if err := s.kb.CheckModel(s.c); err != nil {
			return nil, err
		}
	}
	if err := filter.CheckRequest(q.Filter, s.c.Config().Schema, filter.RequestPolicy{}); q.Filter != nil && err != nil {
		return nil, fmt.Errorf("invalid filter for collection %q: %w", s.c.Name(), err)
	}
	return r.Retrieve(ctx, retrieve.Request{Query: q.Text, Filter: q.Filter, TopK: q.TopK})
}

// Neighbours implements agent.Expander.
func (s *collectionSource) Neighbours(ctx context.Context, d *document.Document, window int) ([]*document.Document, error) {
	return s.retr.Neighbours(ctx, retrieve.Request{Scope: s.scope}, d, window)
}

// Document implements agent.Expander: the limit chunks of d's document
// nearest d (d among them), in reading order.
func (s *collectionSource) Document(ctx context.Context, d *document.Document, limit int) ([]*document.Document, error) {
	near, err := s.retr.Neighbours(ctx, retrieve.Request{Scope: s.scope}, d, max(d.Provenance.ChunkCount, 1))
	if err != nil {
		return nil, err
	}
	all := append([]*document.Document{d}, near...)
	dist := func(x *document.Document) int {
		return max(x.Provenance.ChunkIndex-d.Provenance.ChunkIndex, d.Provenance.ChunkIndex-x.Provenance.ChunkIndex)
	}
	slices.SortStableFunc(all, func(a, b *document.Document) int { return dist(a) - dist(b) })
	all = all[:min(len(all), limit)]
	slices.SortFunc(all, func(a, b *document.Document) int { return a.Provenance.ChunkIndex - b.Provenance.ChunkIndex })
	return all, nil
}

// Linked implements agent.Expander: nothing where the store keeps no
// hierarchy.
func (s *collectionSource) Linked(ctx context.Context, d *document.Document, limit int) ([]*document.Document, error) {
	h, err := hierarchy.Open(s.c)
	if errors.Is(err, store.ErrUnsupported) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r := *s.retr
	g := &retrieve.Graph{Collection: &r, Hierarchy: h}
	return g.Linked(ctx, retrieve.Request{Scope: s.scope}, d, limit)
}

// gathered is an agent's passages as the answer's retriever: the best
// TopK of them, with the collection's word probe for the relevance floor.
type gathered struct {
	docs  []*document.Document
	probe retrieve.TermProber
}

func (g *gathered) Retrieve(_ context.Context, req retrieve.Request) ([]*document.Document, error) {
	if req.TopK > 0 && len(g.docs) > req.TopK {
		return g.docs[:req.TopK], nil
	}
	return g.docs, nil
}

func (g *gathered) HasTerms(ctx context.Context, req retrieve.Request, words []string) ([]bool, error) {
	return g.probe.HasTerms(ctx, req, words)
}

// gather runs the question's agent and sets up the answer from what it
// found: the gathered passages as the pipeline's retrieval, its aspects
// for an extractive answer, its run kept with the turn — or, when it
// found too little, an abstention that says what it searched.
func (kb *KB) gather(ctx context.Context, a *asking, onStep func(agent.Step)) error {
	var history []llm.Message
	if a.req.Thread != "" && a.pipe.Threads != nil {
		var err error
		if history, err = rag.History(ctx, a.pipe.Threads, a.req.Thread, agentHistory); err != nil {
			return fmt.Errorf("ask: %w", err)
		}
	}
	k := a.req.TopK
	if k <= 0 {
		k = a.pipe.TopK
	}
	g, err := a.agent.Gather(ctx, agent.Request{Question: a.req.Question, History: history, TopK: k, OnStep: onStep})
	if err != nil {
		return fmt.Errorf("ask: %w", err)
	}
	a.gathered = g
	if a.req.Trace, err = json.Marshal(g); err != nil {
		return fmt.Errorf("ask: %w", err)
	}
	switch {
	case g.Triage.Kind == agent.KindNone && a.pipe.Model == nil:
		a.req.Reply = &rag.Reply{Text: agent.NothingToLookUp}
	case g.Triage.Kind == agent.KindNone:
		a.pipe.Retriever = &gathered{probe: a.retr}
	case !g.Sufficient:
		a.req.Reply = &rag.Reply{Text: agent.Abstention(g), Abstained: true}
	default:
		a.pipe.Retriever = &gathered{docs: g.Passages, probe: a.retr}
		if g.Triage.Kind == agent.KindMultiStep {
			for i, t := range g.Triage.Aspects {
				// A part's sentence comes from its best few passages: lower
				// down its list are passages other parts found first.
				ids := g.ByAspect[i]
				a.req.Aspects = append(a.req.Aspects, rag.Aspect{Text: t, IDs: ids[:min(len(ids), aspectPassages)]})
			}
		}
	}
	return nil
}

// aspectPassages is how many of a part's best passages its quoted
// sentence may come from.
const aspectPassages = 3

// agentHistory is how many earlier turns of a thread the agent reads.
const agentHistory = 6
