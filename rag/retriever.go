package rag

import (
	"context"
	"errors"
	"fmt"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
)

// RetrieveRequest is what a pipeline asks a retriever for.
type RetrieveRequest struct {
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
	Retrieve(ctx context.Context, req RetrieveRequest) ([]*document.Document, error)
}

// CollectionRetriever searches one collection.
type CollectionRetriever struct {
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
func (r *CollectionRetriever) Retrieve(ctx context.Context, req RetrieveRequest) ([]*document.Document, error) {
	if r.Collection == nil {
		return nil, errors.New("retriever has no collection")
	}
	f := filter.Merge(req.Scope, r.Scope, req.Filter)
	if f != nil {
		if err := filter.Validate(f, r.Collection.Config().Schema); err != nil {
			return nil, fmt.Errorf("collection %q: %w", r.Collection.Name(), err)
		}
	}
	mode := r.Mode
	if mode == store.ModeAuto {
		mode = store.ModeKeyword
		if r.Embedder != nil {
			mode = store.ModeHybrid
		}
	}
	sr := store.SearchRequest{Query: req.Query, Mode: mode, Filter: f, TopK: req.TopK, Fusion: r.Fusion}
	if mode != store.ModeKeyword {
		if r.Embedder == nil {
			return nil, fmt.Errorf("%s search needs the collection's embedder", mode)
		}
		vecs, err := embed.EmbedQuery(ctx, r.Embedder, []string{req.Query})
		if err != nil {
			return nil, fmt.Errorf("embed the query: %w", err)
		}
		sr.Embedding = vecs[0]
		if mode == store.ModeVector {
			sr.Query = ""
		}
	}
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
