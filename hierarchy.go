package quarry

import (
	"context"
	"fmt"
	"io"
	"strings"

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

// Links is the collection's link graph, heaviest first (never nil).
func (kb *KB) Links(ctx context.Context, sc Scope, collection string) ([]hierarchy.GraphLink, error) {
	h, err := kb.Hierarchy(ctx, sc, collection)
	if err != nil {
		return nil, err
	}
	g, err := h.Graph(ctx)
	if g == nil {
		g = []hierarchy.GraphLink{}
	}
	return g, err
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

// WriteText writes the report for people: the repairs made, the verdict,
// and each finding with its advice and first items.
func (h *Health) WriteText(w io.Writer) error {
	rep, fixed := h.Report, h.Fixed
	var b strings.Builder
	for _, f := range fixed {
		fmt.Fprintf(&b, "fixed: %s\n", f)
	}
	state := "healthy"
	if !rep.OK {
		state = "NOT healthy"
	}
	fmt.Fprintf(&b, "collection %q: %s — %d nodes, %d chunks, %d links; %d serious, %d warnings\n",
		rep.Collection, state, rep.Nodes, rep.Chunks, rep.Links, rep.Serious, rep.Warnings)
	for _, f := range rep.Findings {
		fix := ""
		if f.Fixable {
			fix = " (fixable)"
		}
		fmt.Fprintf(&b, "%-7s %s: %d%s — %s\n", f.Severity, strings.ReplaceAll(f.Check, "_", " "), f.Count, fix, f.Advice)
		for _, it := range f.Items {
			fmt.Fprintf(&b, "        %s\n", it)
		}
		if f.Count > len(f.Items) {
			fmt.Fprintf(&b, "        … and %d more\n", f.Count-len(f.Items))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
