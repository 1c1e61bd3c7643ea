package hierarchy

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/store"
)

// Placement is one node of a batch Place writes: EnsureNode's arguments,
// and stored chunks to place under the node as AttachChunks would.
type Placement struct {
	Parent, Name, Kind string
	Triggers           []string
	// Chunks are documents of the collection, already stored; Place
	// reads their ids, sources, heading paths and text.
	Chunks []*document.Document
}

// PlaceReport is what Place wrote.
type PlaceReport struct {
	// Nodes holds each placement's node as stored, in placement order.
	Nodes []store.Node
	// Created counts the nodes made (the root too, when the hierarchy was
	// empty); Updated the stored nodes whose triggers grew; Attached the
	// chunks placed.
	Created, Updated, Attached int
}

// placeBatch bounds the attachments one store call writes.
const placeBatch = 5000

// Place does what EnsureNode and then AttachChunks would do for each
// placement in turn, with one read of the tree, one write per depth of new
// nodes, one for the stored nodes whose triggers changed and one per
// placeBatch attachments: an import of 50,000 nodes costs a few store
// calls, not 150,000 reads of the whole tree.
//
// It is not one transaction: a run cut off leaves a prefix of the depths
// written, and a run again over the same placements finds what is stored
// (EnsureNode's rules) and writes the rest, so it ends where one
// uninterrupted run would.
func (h *Hierarchy) Place(ctx context.Context, ps []Placement) (PlaceReport, error) {
	var rep PlaceReport
	pl, err := h.plan(ctx, ps)
	if err != nil {
		return rep, err
	}
	st, next, changed, atts, ids := pl.st, pl.next, pl.changed, pl.atts, pl.ids
	stored, err := h.storeNew(ctx, st, next)
	if err != nil {
		return rep, err
	}
	rep.Created = len(stored)
	real := func(id int64) int64 {
		if id < 0 {
			return stored[id]
		}
		return id
	}
	if len(changed) > 0 {
		up := make([]store.Node, 0, len(changed))
		for id := range changed {
			up = append(up, *st.byID[id])
		}
		slices.SortFunc(up, func(a, b store.Node) int { return cmp.Compare(a.ID, b.ID) })
		if _, err := h.hs.PutNodes(ctx, h.coll.Name(), up); err != nil {
			return rep, fmt.Errorf("update the triggers of %d nodes: %w", len(up), err)
		}
		rep.Updated = len(up)
	}
	for i := range atts {
		atts[i].NodeID = real(atts[i].NodeID)
	}
	for batch := range slices.Chunk(atts, placeBatch) {
		if err := h.hs.Attach(ctx, h.coll.Name(), batch, nil); err != nil {
			return rep, fmt.Errorf("attach %d chunks: %w", len(batch), err)
		}
		rep.Attached += len(batch)
	}
	rep.Nodes = make([]store.Node, len(ids))
	for i, id := range ids {
		n := *st.byID[id]
		n.ID, n.ParentID = real(n.ID), real(n.ParentID)
		rep.Nodes[i] = n
	}
	return rep, nil
}

// Plan returns the path of each placement's node as Place would give it
// now, writing nothing: what an import derives its chunks' ids from
// before it stores them.
func (h *Hierarchy) Plan(ctx context.Context, ps []Placement) ([]string, error) {
	pl, err := h.plan(ctx, ps)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(pl.ids))
	for i, id := range pl.ids {
		out[i] = pl.st.byID[id].Path
	}
	return out, nil
}

// placing is a batch worked out in memory: the tree with the new nodes
// (ids next+1 … -1), the stored nodes whose triggers changed, the
// attachments, and each placement's node.
type placing struct {
	st      *state
	next    int64
	changed map[int64]bool
	atts    []store.Attachment
	ids     []int64
}

func (h *Hierarchy) plan(ctx context.Context, ps []Placement) (*placing, error) {
	st, err := h.load(ctx, false)
	if err != nil {
		return nil, err
	}
	// New nodes get negative ids until they are stored, so references
	// to them resolve like references to stored nodes.
	next := int64(-1)
	add := func(n store.Node) int64 {
		n.ID = next
		next--
		st.add(n)
		return n.ID
	}
	root := st.root()
	rootID := int64(0)
	if root == nil {
		rootID = add(store.Node{Kind: store.NodeRoot, Name: RootName, Path: "/" + RootName, Triggers: []string{}})
	} else {
		rootID = root.ID
	}
	changed := map[int64]bool{} // stored nodes whose triggers changed
	retrigger := func(id int64, add []string) {
		n := st.byID[id]
		if merged := MergeTriggers(n.Triggers, add); !slices.Equal(merged, n.Triggers) {
			n.Triggers = merged
			if id > 0 {
				changed[id] = true
			}
		}
	}
	ids := make([]int64, len(ps))
	var atts []store.Attachment
	placed := map[string]int{} // doc id → index in atts: a later placement moves the chunk
	for i, p := range ps {
		name := strings.TrimSpace(p.Name)
		if name == "" || strings.Contains(name, "/") {
			return nil, fmt.Errorf("%w: a node name is non-empty and has no '/', got %q", store.ErrInvalidRequest, p.Name)
		}
		parent := st.byID[rootID]
		if p.Parent != "" {
			if parent, err = st.resolve(p.Parent); err != nil {
				return nil, fmt.Errorf("node %q: %w", name, err)
			}
		}
		if want := kindAt(st.depth(parent) + 1); p.Kind != "" && p.Kind != want {
			return nil, fmt.Errorf("%w: node %q under %s is %s by its depth, not %s", store.ErrInvalidRequest, name, parent.Path, want, p.Kind)
		}
		// A name used elsewhere in the tree was made "{parent} · {name}"
		// when the node was added: that child is this node too.
		id := int64(0)
		alt := parent.Name + " · " + name
		for _, k := range st.kids[parent.ID] {
			if c := st.byID[k]; c.Name == name || c.Name == alt {
				id = k
				break
			}
		}
		if id != 0 {
			retrigger(id, p.Triggers)
		} else {
			nm := st.childName(parent, name, nil)
			id = add(store.Node{ParentID: parent.ID, Kind: kindAt(st.depth(parent) + 1), Name: nm,
				Path: parent.Path + "/" + nm, Triggers: MergeTriggers(nil, p.Triggers)})
		}
		var kw []string
		for _, d := range p.Chunks {
			a := store.Attachment{DocID: d.ID, NodeID: id, Source: document.Source{Type: d.SourceType, Name: d.SourceName}}
			if j, ok := placed[d.ID]; ok {
				atts[j] = a
			} else {
				placed[d.ID] = len(atts)
				atts = append(atts, a)
			}
			kw = append(kw, chunkKeywords(d)...)
		}
		if len(p.Chunks) > 0 {
			retrigger(id, kw)
		}
		ids[i] = id
	}

	return &placing{st: st, next: next, changed: changed, atts: atts, ids: ids}, nil
}

// storeNew writes the nodes Place made (ids next+1 … -1), one write per
// depth so each node's parent is stored before it, and returns their
// stored ids by temporary id.
func (h *Hierarchy) storeNew(ctx context.Context, st *state, next int64) (map[int64]int64, error) {
	stored := map[int64]int64{}
	var levels [][]int64
	for id := int64(-1); id > next; id-- {
		d := st.depth(st.byID[id])
		for len(levels) <= d {
			levels = append(levels, nil)
		}
		levels[d] = append(levels[d], id)
	}
	for _, level := range levels {
		if len(level) == 0 {
			continue
		}
		batch := make([]store.Node, len(level))
		for i, id := range level {
			n := *st.byID[id]
			n.ID = 0
			if n.ParentID < 0 {
				n.ParentID = stored[n.ParentID]
			}
			batch[i] = n
		}
		got, err := h.hs.PutNodes(ctx, h.coll.Name(), batch)
		if err != nil {
			return nil, fmt.Errorf("create %d nodes: %w", len(batch), err)
		}
		for i, id := range level {
			stored[id] = got[i].ID
		}
	}
	return stored, nil
}
