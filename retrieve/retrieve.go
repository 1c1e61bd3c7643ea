// Package retrieve finds passages for a question: the Retriever contract,
// a collection's search (vector, keyword or hybrid), composite and
// parallel multi-source retrieval with per-source timeouts, web searches
// (SearXNG, Brave, Tavily; NewWeb opens one from its spec, and Pages reads
// their top pages), the knowledge hierarchy's triggers and links (Graph),
// semantic memory over past conversation turns, and the pre-processors that rewrite the retrieval query (rewrite, decompose,
// HyDE, multi-query).
//
// Scopes only narrow: every retriever searches under
// filter.Merge(Request.Scope, its own scope, Request.Filter), and nothing a
// pre-processor writes reaches a filter — transforms change the query text
// alone.
package retrieve

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
)

// Request is what a pipeline asks a retriever for.
type Request struct {
	Query string
	// Scope is the mandatory scope from upstream (the pipeline's rag
	// scope) and Filter the run's additions. A retriever searches under
	// filter.Merge(Scope, its own scope, Filter) — SEMANTICS §5's order —
	// and never under anything wider.
	Scope  filter.Expr
	Filter filter.Expr
	// TopK is how many passages to return at most.
	TopK int
}

// Retriever finds passages for a query, best first.
type Retriever interface {
	Retrieve(ctx context.Context, req Request) ([]*document.Document, error)
}

// Collection searches one collection.
type Collection struct {
	Collection *store.Collection
	// Embedder embeds the query; it must be the collection's embedder, and
	// may be nil only for keyword search.
	Embedder embed.Embedder
	// Mode is the search mode; ModeAuto means hybrid with an embedder and
	// keyword without.
	Mode store.Mode
	// Scope is the retriever's own mandatory filter.
	Scope  filter.Expr
	Fusion store.Fusion
}

// Retrieve implements Retriever. The merged filter is validated against the
// collection's schema before the query is embedded.
func (r *Collection) Retrieve(ctx context.Context, req Request) ([]*document.Document, error) {
	sr, err := r.searchRequest(ctx, req)
	if err != nil {
		return nil, err
	}
	return r.search(ctx, sr)
}

// searchRequest is the store search req asks for: scopes merged and
// validated, the query embedded when the mode needs it.
func (r *Collection) searchRequest(ctx context.Context, req Request) (store.SearchRequest, error) {
	if r.Collection == nil {
		return store.SearchRequest{}, errors.New("retriever has no collection")
	}
	f, err := r.filter(req, nil)
	if err != nil {
		return store.SearchRequest{}, err
	}
	mode := r.Mode
	if mode == store.ModeAuto {
		mode = store.ModeKeyword
		if r.Embedder != nil {
			mode = store.ModeHybrid
		}
	}
	// Passages carry their embeddings: post-processors that compare them
	// (MMR) and neighbour expansion use them instead of embedding again.
	sr := store.SearchRequest{Query: req.Query, Mode: mode, Filter: f, TopK: req.TopK, Fusion: r.Fusion, Vectors: true}
	if mode != store.ModeKeyword {
		if r.Embedder == nil {
			return sr, fmt.Errorf("%s search needs the collection's embedder", mode)
		}
		vecs, err := embed.EmbedQuery(ctx, r.Embedder, []string{req.Query})
		if err != nil {
			return sr, fmt.Errorf("embed the query: %w", err)
		}
		sr.Embedding = vecs[0]
		if mode == store.ModeVector {
			sr.Query = ""
		}
	}
	return sr, nil
}

// filter merges the scopes in SEMANTICS §5's order, then extra, and
// validates the result against the collection's schema.
func (r *Collection) filter(req Request, extra filter.Expr) (filter.Expr, error) {
	f := filter.Merge(req.Scope, r.Scope, req.Filter, extra)
	if f != nil {
		if err := filter.Validate(f, r.Collection.Config().Schema); err != nil {
			return nil, fmt.Errorf("collection %q: %w", r.Collection.Name(), err)
		}
	}
	return f, nil
}

func (r *Collection) search(ctx context.Context, sr store.SearchRequest) ([]*document.Document, error) {
	hits, err := r.Collection.Search(ctx, sr)
	if err != nil {
		return nil, err
	}
	docs := make([]*document.Document, len(hits))
	for i, h := range hits {
		docs[i] = h.Doc
	}
	return docs, nil
}

// maxNeighbourScan bounds how many chunks of one source a neighbour lookup
// reads.
const maxNeighbourScan = 1000

// Neighbours returns the chunks of d's source whose position lies within
// window of d's, d excluded, in source order — under the same scopes and
// filter as req, so expanding a passage never reaches text the request
// could not retrieve. Unsplit documents have no neighbours.
func (r *Collection) Neighbours(ctx context.Context, req Request, d *document.Document, window int) ([]*document.Document, error) {
	if r.Collection == nil {
		return nil, errors.New("retriever has no collection")
	}
	p := d.Provenance
	if window <= 0 || p.ChunkCount <= 1 {
		return nil, nil
	}
	f, err := r.filter(req, filter.And(filter.Eq("sourceType", d.SourceType), filter.Eq("sourceName", d.SourceName)))
	if err != nil {
		return nil, err
	}
	sr := store.SearchRequest{Mode: store.ModeKeyword, Query: d.Content, Filter: f, TopK: min(p.ChunkCount, maxNeighbourScan)}
	switch {
	case len(d.Embedding) > 0:
		sr.Mode, sr.Query, sr.Embedding = store.ModeVector, "", d.Embedding
	case r.Embedder != nil:
		vecs, err := r.Embedder.Embed(ctx, []string{d.Content})
		if err != nil {
			return nil, fmt.Errorf("neighbours: embed the passage: %w", err)
		}
		sr.Mode, sr.Query, sr.Embedding = store.ModeVector, "", vecs[0]
	}
	docs, err := r.search(ctx, sr)
	if err != nil {
		return nil, fmt.Errorf("neighbours of %s: %w", d.ID, err)
	}
	out := docs[:0:0]
	for _, n := range docs {
		i := n.Provenance.ChunkIndex
		if n.ID != d.ID && i != p.ChunkIndex && i >= p.ChunkIndex-window && i <= p.ChunkIndex+window {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b *document.Document) int { return a.Provenance.ChunkIndex - b.Provenance.ChunkIndex })
	return out, nil
}

// NeighbourFinder finds the chunks next to a passage in its source, under
// a request's scopes. *Collection implements it.
type NeighbourFinder interface {
	Neighbours(ctx context.Context, req Request, d *document.Document, window int) ([]*document.Document, error)
}

// Composite runs its retrievers in order and concatenates their results
// (SEMANTICS §5; duplicates are the pipeline's to drop). The first error
// ends it: for sources that may fail on their own, use Parallel.
type Composite []Retriever

// Retrieve implements Retriever.
func (c Composite) Retrieve(ctx context.Context, req Request) ([]*document.Document, error) {
	var out []*document.Document
	for i, r := range c {
		docs, err := r.Retrieve(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("retriever %d: %w", i+1, err)
		}
		out = append(out, docs...)
	}
	return out, nil
}

// requestKey carries the retrieval request through a context.
type requestKey struct{}

// WithRequest returns ctx carrying req: the pipeline hands it to its
// post-processors so those that fetch more text (neighbour expansion)
// fetch it under the same scopes.
func WithRequest(ctx context.Context, req Request) context.Context {
	return context.WithValue(ctx, requestKey{}, req)
}

// RequestFrom returns the request WithRequest put in ctx.
func RequestFrom(ctx context.Context) (Request, bool) {
	req, ok := ctx.Value(requestKey{}).(Request)
	return req, ok
}

// TermProber is implemented by retrievers that can tell whether any
// document under a request's scopes holds a word, by keyword search. The
// answer pipeline's relevance floor asks it about the question's words its
// best passages lack: a word the knowledge base never uses ("France" in a
// Go manual) says the question is off its topic, while a common word the
// passages happen not to use ("long" in "how long") does not.
type TermProber interface {
	HasTerms(ctx context.Context, req Request, words []string) ([]bool, error)
}

// HasTerms implements TermProber: one keyword search per word, under the
// same merged scopes as Retrieve, so a word only other tenants' documents
// hold reads as absent.
func (r *Collection) HasTerms(ctx context.Context, req Request, words []string) ([]bool, error) {
	if r.Collection == nil {
		return nil, errors.New("retriever has no collection")
	}
	f, err := r.filter(req, nil)
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(words))
	for i, w := range words {
		hits, err := r.Collection.Search(ctx, store.SearchRequest{Query: w, Mode: store.ModeKeyword, Filter: f, TopK: 1})
		if err != nil {
			return nil, fmt.Errorf("probe %q: %w", w, err)
		}
		out[i] = len(hits) > 0
	}
	return out, nil
}
