package quarry

import (
	"context"
	"fmt"

	"github.com/quarry-rag/quarry/hierarchy"
)

// Hierarchy opens the knowledge hierarchy of a collection the scope may
// use ("" for the default). A scope with a filter is refused: nodes,
// triggers and links span every document of a collection.
func (kb *KB) Hierarchy(ctx context.Context, sc Scope, collection string) (*hierarchy.Hierarchy, error) {
	if !sc.MayReachAll() {
		return nil, fmt.Errorf("%w: the knowledge hierarchy spans every document of a collection, so it is not open to a caller limited by a filter", ErrForbidden)
	}
	c, err := kb.collection(ctx, sc, collection, false)
	if err != nil {
		return nil, err
	}
	return hierarchy.Open(c)
}

// Tree is a collection's knowledge hierarchy as a tree; nil when it has
// none yet.
func (kb *KB) Tree(ctx context.Context, sc Scope, collection string) (*hierarchy.TreeNode, error) {
	h, err := kb.Hierarchy(ctx, sc, collection)
	if err != nil {
		return nil, err
	}
	return h.Tree(ctx)
}

// Health is an audit, with the repairs made before it.
type Health struct {
	*hierarchy.Report
	// Fixed lists the repairs made, one line each, when asked for.
	Fixed []string `json:"fixed,omitempty"`
}

// Health audits a collection's hierarchy, chunks and indexes against the
// knowledge base's embedder; with fix it first applies the safe repairs
// (hierarchy.Fix), which a read-only scope may not, and audits again.
func (kb *KB) Health(ctx context.Context, sc Scope, collection string, fix bool) (*Health, error) {
	if fix && sc.ReadOnly {
		return nil, fmt.Errorf("%w: repairs change the knowledge base; this caller may only read", ErrForbidden)
	}
	h, err := kb.Hierarchy(ctx, sc, collection)
	if err != nil {
		return nil, err
	}
	opt := hierarchy.AuditOptions{Model: kb.emb.Model()}
	rep, err := h.Audit(ctx, opt)
	if err != nil {
		return nil, err
	}
	out := &Health{Report: rep}
	if fix {
		if out.Fixed, err = h.Fix(ctx, rep); err != nil {
			return nil, err
		}
		if out.Report, err = h.Audit(ctx, opt); err != nil {
			return nil, err
		}
	}
	if out.Findings == nil {
		out.Findings = []hierarchy.Finding{}
	}
	return out, nil
}
