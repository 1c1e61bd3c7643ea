package retrieve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/hierarchy"
	"github.com/quarry-rag/quarry/store"
)

// Graph retrieves through a collection's knowledge hierarchy. When the
// query is a node's trigger, that node's chunks come first and the
// collection's search fills the rest (hierarchy.TriggerSearch); then come
// up to TopK chunks of the nodes linked to it, up to Depth links away —
// those the search ranks first, then the others in source order. A query
// that hits no trigger is the collection's ordinary search. Every search
// runs under the Collection retriever's scopes and the request's.
type Graph struct {
	// Collection searches the hierarchy's collection; required.
	Collection *Collection
	// Hierarchy is the collection's hierarchy (hierarchy.Open); required.
	Hierarchy *hierarchy.Hierarchy
	// Depth and Limit bound the walk of the links: hierarchy's defaults
	// (2 links, 5 nodes) when 0.
	Depth, Limit int
}

// Retrieve implements Retriever.
func (g *Graph) Retrieve(ctx context.Context, req Request) ([]*document.Document, error) {
	if g.Collection == nil || g.Hierarchy == nil {
		return nil, errors.New("graph retriever: a collection retriever and its hierarchy are required")
	}
	sr, err := g.Collection.searchRequest(ctx, req)
	if err != nil {
		return nil, err
	}
	search := func(ctx context.Context, r store.SearchRequest) ([]store.Hit, error) {
		return g.Collection.Collection.Search(ctx, r)
	}
	hits, node, err := g.Hierarchy.TriggerSearch(ctx, sr, search)
	if err != nil {
		return nil, fmt.Errorf("graph retriever: %w", err)
	}
	out := make([]*document.Document, 0, len(hits))
	have := map[string]bool{}
	for _, h := range hits {
		out = append(out, h.Doc)
		have[h.Doc.ID] = true
	}
	if node == nil {
		return out, nil
	}
	linked, err := g.linked(ctx, sr, node)
	if err != nil {
		return nil, fmt.Errorf("graph retriever: %w", err)
	}
	for _, d := range linked {
		if !have[d.ID] {
			have[d.ID] = true
			out = append(out, d)
		}
	}
	return out, nil
}

// linked searches the chunks attached to the nodes linked to node, under
// sr's filter, keeping the attached ones.
func (g *Graph) linked(ctx context.Context, sr store.SearchRequest, node *store.Node) ([]*document.Document, error) {
	_, nbs, err := g.Hierarchy.Neighbors(ctx, strconv.FormatInt(node.ID, 10), g.Depth, g.Limit)
	if err != nil || len(nbs) == 0 {
		return nil, err
	}
	hs, err := g.Collection.Collection.Store().Hierarchy()
	if err != nil {
		return nil, err
	}
	atts, err := hs.Attachments(ctx, g.Collection.Collection.Name())
	if err != nil {
		return nil, err
	}
	near := map[int64]bool{}
	for _, n := range nbs {
		near[n.Node.ID] = true
	}
	attached := map[string]bool{}
	var sources []any
	seen := map[string]bool{}
	for _, a := range atts {
		if !near[a.NodeID] {
			continue
		}
		attached[a.DocID] = true
		if !seen[a.Source.Name] {
			seen[a.Source.Name] = true
			sources = append(sources, a.Source.Name)
		}
	}
	if len(sources) == 0 {
		return nil, nil
	}
	k := sr.TopK
	if k <= 0 {
		k = store.DefaultTopK
	}
	m, err := filter.NewMatcher(sr.Filter)
	if err != nil {
		return nil, err
	}
	sr.Filter = filter.Merge(sr.Filter, filter.In("sourceName", sources...))
	hits, err := g.Collection.Collection.Search(ctx, sr)
	if err != nil {
		return nil, err
	}
	var out []*document.Document
	taken := map[string]bool{}
	for _, h := range hits {
		if attached[h.Doc.ID] && len(out) < k {
			out = append(out, h.Doc)
			taken[h.Doc.ID] = true
		}
	}
	// Linked chunks that share no word with the query still belong: the
	// rest follow unscored, in source and chunk order, under the scopes.
	if len(out) < k {
		var rest []string
		for id := range attached {
			if !taken[id] {
				rest = append(rest, id)
			}
		}
		docs, err := g.Collection.Collection.Get(ctx, rest)
		if err != nil {
			return nil, err
		}
		docs = slices.DeleteFunc(docs, func(d *document.Document) bool { return !m.MatchDocument(d) })
		slices.SortFunc(docs, func(a, b *document.Document) int {
			return cmp.Or(cmp.Compare(a.SourceName, b.SourceName), cmp.Compare(a.Provenance.ChunkIndex, b.Provenance.ChunkIndex), cmp.Compare(a.ID, b.ID))
		})
		for _, d := range docs {
			if len(out) == k {
				break
			}
			d.ClearScore()
			out = append(out, d)
		}
	}
	return out, nil
}

// Linked returns up to limit chunks of the nodes linked to the node d
// hangs under (Depth links away), those the request's query ranks first,
// under the same scopes as Retrieve: an agent follows a passage to the
// sections linked to it this way. A passage under no node has none.
func (g *Graph) Linked(ctx context.Context, req Request, d *document.Document, limit int) ([]*document.Document, error) {
	if g.Collection == nil || g.Hierarchy == nil {
		return nil, errors.New("graph retriever: a collection retriever and its hierarchy are required")
	}
	rc, err := g.Hierarchy.Context(ctx, []store.Hit{{Doc: d}})
	if err != nil {
		return nil, fmt.Errorf("linked to %s: %w", d.ID, err)
	}
	if len(rc) == 0 || rc[0].Node == nil {
		return nil, nil
	}
	if req.Query == "" {
		req.Query = d.Content
	}
	req.TopK = limit
	sr, err := g.Collection.searchRequest(ctx, req)
	if err != nil {
		return nil, err
	}
	docs, err := g.linked(ctx, sr, &store.Node{ID: rc[0].Node.ID})
	if err != nil {
		return nil, fmt.Errorf("linked to %s: %w", d.ID, err)
	}
	return slices.DeleteFunc(docs, func(x *document.Document) bool { return x.ID == d.ID }), nil
}
