package hierarchy

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
)

// SearchFunc runs one search (embedding the query when its mode needs it).
type SearchFunc func(ctx context.Context, req store.SearchRequest) ([]store.Hit, error)

// TriggerSearch is the trigger fast path of `--mode auto`: when the query
// is one of a node's triggers, that node's chunks come first — ranked by
// search among them, then, if the search found fewer than TopK, the rest
// of them in source and chunk order, without a score — and the results of
// the ordinary search fill what is left of TopK. Without a matching
// trigger it is the ordinary search. It returns the node that matched, or
// nil.
func (h *Hierarchy) TriggerSearch(ctx context.Context, req store.SearchRequest, search SearchFunc) ([]store.Hit, *store.Node, error) {
	st, err := h.load(ctx, false)
	if err != nil {
		return nil, nil, err
	}
	n := st.byTrigger(req.Query)
	if n == nil {
		hits, err := search(ctx, req)
		return hits, nil, err
	}
	k := req.TopK
	if k <= 0 {
		k = store.DefaultTopK
	}
	atts, err := h.hs.Attachments(ctx, h.coll.Name())
	if err != nil {
		return nil, nil, err
	}
	mine := map[string]bool{}
	var names []any
	seenSrc := map[string]bool{}
	for _, a := range atts {
		if a.NodeID != n.ID {
			continue
		}
		mine[a.DocID] = true
		if !seenSrc[a.Source.Name] {
			seenSrc[a.Source.Name] = true
			names = append(names, a.Source.Name)
		}
	}
	var out []store.Hit
	taken := map[string]bool{}
	if len(names) > 0 {
		inNode := req
		inNode.Filter = filter.Merge(req.Filter, filter.In("sourceName", names...))
		hits, err := search(ctx, inNode)
		if err != nil {
			return nil, nil, fmt.Errorf("search under %s: %w", n.Path, err)
		}
		for _, hit := range hits {
			if mine[hit.Doc.ID] {
				out = append(out, hit)
				taken[hit.Doc.ID] = true
			}
		}
	}
	if len(out) < k {
		var rest []string
		for _, a := range atts {
			if mine[a.DocID] && !taken[a.DocID] {
				rest = append(rest, a.DocID)
			}
		}
		docs, err := h.coll.Get(ctx, rest)
		if err != nil {
			return nil, nil, err
		}
		if req.Filter != nil {
			m, err := filter.NewMatcher(req.Filter)
			if err != nil {
				return nil, nil, err
			}
			docs = slices.DeleteFunc(docs, func(d *document.Document) bool { return !m.MatchDocument(d) })
		}
		slices.SortFunc(docs, func(a, b *document.Document) int {
			return cmp.Or(cmp.Compare(a.SourceName, b.SourceName), cmp.Compare(a.Provenance.ChunkIndex, b.Provenance.ChunkIndex), cmp.Compare(a.ID, b.ID))
		})
		for _, d := range docs {
			if len(out) == k {
				break
			}
			d.ClearScore()
			out = append(out, store.Hit{Doc: d})
			taken[d.ID] = true
		}
	}
	if len(out) < k {
		hits, err := search(ctx, req)
		if err != nil {
			return nil, nil, err
		}
		for _, hit := range hits {
			if len(out) == k {
				break
			}
			if !taken[hit.Doc.ID] {
				out = append(out, hit)
			}
		}
	}
	if len(out) > k {
		out = out[:k]
	}
	node := *n
	return out, &node, nil
}

// NodeRef names a node briefly.
type NodeRef struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	Path string `json:"path"`
}

func ref(n *store.Node) NodeRef { return NodeRef{ID: n.ID, Name: n.Name, Path: n.Path} }

// ResultContext places one search result in the hierarchy.
type ResultContext struct {
	// Node is the node the result's chunk hangs under; nil when none.
	Node *NodeRef `json:"node,omitempty"`
	// Neighbors are the nodes linked to it, heaviest first (at most 5).
	Neighbors []NeighborRef `json:"neighbors,omitempty"`
	// Linked are the 1-based ranks of other results whose nodes are
	// linked to this one's (or share it).
	Linked []int `json:"linked_results,omitempty"`
}

// NeighborRef is a linked node, briefly.
type NeighborRef struct {
	NodeRef
	Type   string  `json:"type"`
	Weight float64 `json:"weight"`
}

// attachmentFinder is a hierarchy store that looks attachments up by
// document (the embedded, PostgreSQL and MariaDB stores); the others are
// read whole.
type attachmentFinder interface {
	AttachmentsOf(ctx context.Context, coll string, docIDs []string) ([]store.Attachment, error)
}

// loadFor loads the nodes and, of the attachments, at least the hits'
// (only theirs where the store can look them up: a search must not read
// every chunk's attachment to place ten results).
func (h *Hierarchy) loadFor(ctx context.Context, hits []store.Hit) (*state, error) {
	af, ok := h.hs.(attachmentFinder)
	if !ok {
		return h.load(ctx, true)
	}
	st, err := h.load(ctx, false)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(hits))
	for i, hit := range hits {
		ids[i] = hit.Doc.ID
	}
	if st.atts, err = af.AttachmentsOf(ctx, h.coll.Name(), ids); err != nil {
		return nil, fmt.Errorf("hierarchy of %q: %w", h.coll.Name(), err)
	}
	st.byDoc = make(map[string]int, len(st.atts))
	for i, a := range st.atts {
		st.byDoc[a.DocID] = i
	}
	return st, nil
}

// Context returns, for each hit in order, its node, that node's direct
// neighbours and the other results linked to it.
func (h *Hierarchy) Context(ctx context.Context, hits []store.Hit) ([]ResultContext, error) {
	out := make([]ResultContext, len(hits))
	if len(hits) == 0 {
		return out, nil
	}
	st, err := h.loadFor(ctx, hits)
	if err != nil {
		return nil, err
	}
	links, err := h.hs.Links(ctx, h.coll.Name())
	if err != nil {
		return nil, err
	}
	linked := map[[2]int64]bool{}
	for _, l := range links {
		linked[[2]int64{l.From, l.To}] = true
		linked[[2]int64{l.To, l.From}] = true
	}
	nodeOf := make([]int64, len(hits))
	for i, hit := range hits {
		j, ok := st.byDoc[hit.Doc.ID]
		if !ok {
			continue
		}
		n := st.byID[st.atts[j].NodeID]
		if n == nil {
			continue
		}
		nodeOf[i] = n.ID
		r := ref(n)
		out[i].Node = &r
		for _, nb := range neighbors(st, links, n.ID, 1, DefaultLimit) {
			out[i].Neighbors = append(out[i].Neighbors, NeighborRef{NodeRef: ref(&nb.Node), Type: nb.Type, Weight: nb.Weight})
		}
	}
	for i := range hits {
		for j := range hits {
			if i == j || nodeOf[i] == 0 || nodeOf[j] == 0 {
				continue
			}
			if nodeOf[i] == nodeOf[j] || linked[[2]int64{nodeOf[i], nodeOf[j]}] {
				out[i].Linked = append(out[i].Linked, j+1)
			}
		}
	}
	return out, nil
}
