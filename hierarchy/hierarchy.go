// Package hierarchy lets people and agents navigate a knowledge base like a
// book (SEMANTICS §6): folders become nodes (a root, top-level
// "fundamental" nodes, deeper "specialization" nodes), each chunk hangs
// under its folder's node, and each node keeps triggers — keywords from its
// chunks' headings and code symbols — so a query naming one jumps straight
// to it. Nodes are linked by trigger overlap and shared sources; an audit
// finds what is broken and repairs what is safe to repair.
//
// The rows live in the store (store.HierarchyStore); this package owns the
// rules.
package hierarchy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/store"
)

// RootName is the root node's name; its path is "/Root".
const RootName = "Root"

// Hierarchy is the knowledge hierarchy of one collection.
type Hierarchy struct {
	coll *store.Collection
	hs   store.HierarchyStore
}

// Open returns the collection's hierarchy; store.ErrUnsupported when its
// store keeps none.
func Open(coll *store.Collection) (*Hierarchy, error) {
	hs, err := coll.Store().Hierarchy()
	if err != nil {
		return nil, err
	}
	return &Hierarchy{coll: coll, hs: hs}, nil
}

// Collection returns the collection the hierarchy belongs to.
func (h *Hierarchy) Collection() *store.Collection { return h.coll }

// state is a snapshot of the hierarchy's rows.
type state struct {
	nodes []store.Node
	byID  map[int64]*store.Node
	// byPath and byName index the nodes (byName's ids in id order), so
	// resolving a reference costs the same in a tree of 50,000 nodes as
	// in one of 50.
	byPath map[string]int64
	byName map[string][]int64
	kids   map[int64][]int64 // parent id → child ids, in id order
	atts   []store.Attachment
	byDoc  map[string]int // doc id → index in atts
	counts map[int64]int  // node id → attached chunks
}

func (h *Hierarchy) load(ctx context.Context, withAtts bool) (*state, error) {
	nodes, err := h.hs.Nodes(ctx, h.coll.Name())
	if err != nil {
		return nil, fmt.Errorf("hierarchy of %q: %w", h.coll.Name(), err)
	}
	st := &state{nodes: nodes, byID: make(map[int64]*store.Node, len(nodes)), kids: map[int64][]int64{}, counts: map[int64]int{},
		byPath: make(map[string]int64, len(nodes)), byName: make(map[string][]int64, len(nodes))}
	for i := range st.nodes {
		st.index(&st.nodes[i])
	}
	if withAtts {
		st.atts, err = h.hs.Attachments(ctx, h.coll.Name())
		if err != nil {
			return nil, fmt.Errorf("hierarchy of %q: %w", h.coll.Name(), err)
		}
		st.byDoc = make(map[string]int, len(st.atts))
		for i, a := range st.atts {
			st.byDoc[a.DocID] = i
			st.counts[a.NodeID]++
		}
	}
	return st, nil
}

// root returns the root node, or nil.
func (st *state) root() *store.Node {
	for i := range st.nodes {
		if st.nodes[i].Kind == store.NodeRoot {
			return &st.nodes[i]
		}
	}
	return nil
}

// subtree returns id and its descendants, deepest first, so removing them
// in order never leaves a child without its parent.
func (st *state) subtree(id int64) []int64 {
	var order []int64
	var walk func(id int64, seen map[int64]bool)
	walk = func(id int64, seen map[int64]bool) {
		if seen[id] { // a cycle made by hand: stop, do not loop
			return
		}
		seen[id] = true
		for _, k := range st.kids[id] {
			walk(k, seen)
		}
		order = append(order, id)
	}
	walk(id, map[int64]bool{})
	return order
}

// depth is the number of ancestors of n below the root (top level = 1).
func (st *state) depth(n *store.Node) int {
	d := 0
	for seen := map[int64]bool{}; n != nil && n.Kind != store.NodeRoot && !seen[n.ID]; d++ {
		seen[n.ID] = true
		n = st.byID[n.ParentID]
	}
	return d
}

// index records n, an element of st.nodes, in the maps.
func (st *state) index(n *store.Node) {
	st.byID[n.ID] = n
	if _, ok := st.byPath[n.Path]; !ok {
		st.byPath[n.Path] = n.ID
	}
	st.byName[n.Name] = append(st.byName[n.Name], n.ID)
	if n.Kind != store.NodeRoot {
		st.kids[n.ParentID] = append(st.kids[n.ParentID], n.ID)
	}
}

// nameTaken reports whether a node other than except already has name.
func (st *state) nameTaken(name string, except int64) bool {
	for _, id := range st.byName[name] {
		if n := st.byID[id]; id != except && n.Kind != store.NodeRoot {
			return true
		}
	}
	return false
}

// childName is the name a new child called name of parent gets: the name
// itself, or "{parent} · {name}" when another node (or one of pending,
// names given but not yet stored) already has it (SEMANTICS §6), numbered
// if even that is taken.
func (st *state) childName(parent *store.Node, name string, pending map[string]bool) string {
	taken := func(n string) bool { return pending[n] || st.nameTaken(n, 0) }
	if !taken(name) {
		return name
	}
	alt := parent.Name + " · " + name
	for i := 2; taken(alt); i++ {
		alt = fmt.Sprintf("%s · %s (%d)", parent.Name, name, i)
	}
	return alt
}

func kindAt(depth int) string {
	if depth <= 1 {
		return store.NodeFundamental
	}
	return store.NodeSpecialization
}

// ensureRoot returns the root, creating it when the hierarchy is empty.
func (h *Hierarchy) ensureRoot(ctx context.Context, st *state) (*store.Node, error) {
	if r := st.root(); r != nil {
		return r, nil
	}
	got, err := h.hs.PutNodes(ctx, h.coll.Name(), []store.Node{{Kind: store.NodeRoot, Name: RootName, Path: "/" + RootName, Triggers: []string{}}})
	if err != nil {
		return nil, fmt.Errorf("create the root node: %w", err)
	}
	st.add(got[0])
	return st.byID[got[0].ID], nil
}

// add records a node created in the store.
func (st *state) add(n store.Node) {
	moved := len(st.nodes) == cap(st.nodes)
	st.nodes = append(st.nodes, n)
	if moved { // the append copied the nodes: point the index at the copies
		for i := range st.nodes[:len(st.nodes)-1] {
			st.byID[st.nodes[i].ID] = &st.nodes[i]
		}
	}
	st.index(&st.nodes[len(st.nodes)-1])
}

// ErrAmbiguous is returned when a reference names several nodes.
var ErrAmbiguous = errors.New("reference names several nodes")

// resolve finds the node ref names: an id, a path ("/Root/…"), or a name.
func (st *state) resolve(ref string) (*store.Node, error) {
	ref = strings.TrimSpace(ref)
	if id, err := strconv.ParseInt(ref, 10, 64); err == nil && id > 0 {
		if n := st.byID[id]; n != nil {
			return n, nil
		}
	}
	if id, ok := st.byPath[ref]; ok {
		return st.byID[id], nil
	}
	if id, ok := st.byPath["/"+RootName+"/"+strings.TrimPrefix(ref, "/")]; ok {
		return st.byID[id], nil
	}
	var byName []*store.Node
	for _, id := range st.byName[ref] {
		byName = append(byName, st.byID[id])
	}
	switch len(byName) {
	case 1:
		return byName[0], nil
	case 0:
		return nil, fmt.Errorf("%w: no node is called %q (give an id, a path such as /Root/guides, or a name)", store.ErrNodeNotFound, ref)
	}
	paths := make([]string, len(byName))
	for i, n := range byName {
		paths[i] = n.Path
	}
	return nil, fmt.Errorf("%w: %q is the name of %s: give a path", ErrAmbiguous, ref, strings.Join(paths, ", "))
}

// Node returns the node ref names: an id, a path or a unique name.
func (h *Hierarchy) Node(ctx context.Context, ref string) (store.Node, error) {
	st, err := h.load(ctx, false)
	if err != nil {
		return store.Node{}, err
	}
	n, err := st.resolve(ref)
	if err != nil {
		return store.Node{}, err
	}
	return *n, nil
}

// Nodes returns every node, ordered by id.
func (h *Hierarchy) Nodes(ctx context.Context) ([]store.Node, error) {
	st, err := h.load(ctx, false)
	if err != nil {
		return nil, err
	}
	return st.nodes, nil
}

// AddNode creates a node called name under parent (a reference as for
// Node; "" for the root) with the given triggers. A name its siblings
// already use is an error; a name used elsewhere becomes "{parent} ·
// {name}".
func (h *Hierarchy) AddNode(ctx context.Context, parent, name string, triggers []string) (store.Node, error) {
	name = strings.TrimSpace(name)
	if name == "" || strings.Contains(name, "/") {
		return store.Node{}, fmt.Errorf("%w: a node name is non-empty and has no '/', got %q", store.ErrInvalidRequest, name)
	}
	st, p, err := h.parentNode(ctx, parent)
	if err != nil {
		return store.Node{}, err
	}
	for _, k := range st.kids[p.ID] {
		if st.byID[k].Name == name {
			return store.Node{}, fmt.Errorf("%w: %s already has a node called %q", store.ErrInvalidRequest, p.Path, name)
		}
	}
	name = st.childName(p, name, nil)
	n := store.Node{ParentID: p.ID, Kind: kindAt(st.depth(p) + 1), Name: name, Path: p.Path + "/" + name, Triggers: MergeTriggers(nil, triggers)}
	got, err := h.hs.PutNodes(ctx, h.coll.Name(), []store.Node{n})
	if err != nil {
		return store.Node{}, fmt.Errorf("add node %q: %w", name, err)
	}
	return got[0], nil
}

// parentNode loads the hierarchy and resolves parent, a reference as for
// Node; "" is the root, made when the hierarchy is empty.
func (h *Hierarchy) parentNode(ctx context.Context, parent string) (*state, *store.Node, error) {
	st, err := h.load(ctx, false)
	if err != nil {
		return nil, nil, err
	}
	p, err := h.ensureRoot(ctx, st)
	if err != nil {
		return nil, nil, err
	}
	if parent != "" {
		if p, err = st.resolve(parent); err != nil {
			return nil, nil, err
		}
	}
	return st, p, nil
}

// EnsureNode is the node called name under parent (a reference as for
// Node; "" for the root), with triggers merged into its own: made when
// missing, so an import run twice makes each node once. kind, when not
// "", must be the kind the node's depth gives (fundamental under the
// root, specialization deeper).
func (h *Hierarchy) EnsureNode(ctx context.Context, parent, name, kind string, triggers []string) (store.Node, error) {
	name = strings.TrimSpace(name)
	st, p, err := h.parentNode(ctx, parent)
	if err != nil {
		return store.Node{}, err
	}
	if want := kindAt(st.depth(p) + 1); kind != "" && kind != want {
		return store.Node{}, fmt.Errorf("%w: node %q under %s is %s by its depth, not %s", store.ErrInvalidRequest, name, p.Path, want, kind)
	}
	// A name used elsewhere in the tree was made "{parent} · {name}" when
	// the node was added: that child is this node too.
	alt := p.Name + " · " + name
	for _, k := range st.kids[p.ID] {
		if n := st.byID[k]; n.Name == name || n.Name == alt {
			merged := MergeTriggers(n.Triggers, triggers)
			if slices.Equal(merged, n.Triggers) {
				return *n, nil
			}
			up := *n
			up.Triggers = merged
			got, err := h.hs.PutNodes(ctx, h.coll.Name(), []store.Node{up})
			if err != nil {
				return store.Node{}, fmt.Errorf("update node %q: %w", name, err)
			}
			return got[0], nil
		}
	}
	return h.AddNode(ctx, p.Path, name, triggers)
}

// RenameNode renames a node and rewrites the paths of its subtree. The
// root keeps its name.
func (h *Hierarchy) RenameNode(ctx context.Context, ref, name string) (store.Node, error) {
	name = strings.TrimSpace(name)
	if name == "" || strings.Contains(name, "/") {
		return store.Node{}, fmt.Errorf("%w: a node name is non-empty and has no '/', got %q", store.ErrInvalidRequest, name)
	}
	st, err := h.load(ctx, false)
	if err != nil {
		return store.Node{}, err
	}
	n, err := st.resolve(ref)
	if err != nil {
		return store.Node{}, err
	}
	if n.Kind == store.NodeRoot {
		return store.Node{}, fmt.Errorf("%w: the root node cannot be renamed", store.ErrInvalidRequest)
	}
	if st.nameTaken(name, n.ID) {
		return store.Node{}, fmt.Errorf("%w: another node is already called %q", store.ErrInvalidRequest, name)
	}
	parentPath := n.Path[:strings.LastIndex(n.Path, "/")]
	if p := st.byID[n.ParentID]; p != nil {
		parentPath = p.Path
	}
	oldPath, newPath := n.Path, parentPath+"/"+name
	var changed []store.Node
	for _, id := range st.subtree(n.ID) {
		m := *st.byID[id]
		if id == n.ID {
			m.Name, m.Path = name, newPath
		} else if rest, ok := strings.CutPrefix(m.Path, oldPath+"/"); ok {
			m.Path = newPath + "/" + rest
		}
		changed = append(changed, m)
	}
	if _, err := h.hs.PutNodes(ctx, h.coll.Name(), changed); err != nil {
		return store.Node{}, fmt.Errorf("rename %s: %w", oldPath, err)
	}
	return changed[len(changed)-1], nil
}

// RemoveNode removes a node and its subtree, deepest nodes first, with
// their chunk attachments and links (the chunks stay in the collection),
// and returns how many nodes it removed. The root cannot be removed.
func (h *Hierarchy) RemoveNode(ctx context.Context, ref string) (int, error) {
	st, err := h.load(ctx, false)
	if err != nil {
		return 0, err
	}
	n, err := st.resolve(ref)
	if err != nil {
		return 0, err
	}
	if n.Kind == store.NodeRoot {
		return 0, fmt.Errorf("%w: the root node cannot be removed", store.ErrInvalidRequest)
	}
	ids := st.subtree(n.ID)
	removed, err := h.hs.DeleteNodes(ctx, h.coll.Name(), ids)
	if err != nil {
		return 0, fmt.Errorf("remove %s: %w", n.Path, err)
	}
	return removed, nil
}

// AttachChunks places stored chunks under a node (moving them from
// another) and merges their heading and symbol keywords into its triggers.
// Ids that are not stored are an error naming them.
func (h *Hierarchy) AttachChunks(ctx context.Context, ref string, ids []string) (store.Node, error) {
	st, err := h.load(ctx, false)
	if err != nil {
		return store.Node{}, err
	}
	n, err := st.resolve(ref)
	if err != nil {
		return store.Node{}, err
	}
	docs, err := h.coll.Get(ctx, ids)
	if err != nil {
		return store.Node{}, err
	}
	if len(docs) != len(slices.Compact(slices.Sorted(slices.Values(ids)))) {
		found := map[string]bool{}
		for _, d := range docs {
			found[d.ID] = true
		}
		var missing []string
		for _, id := range ids {
			if !found[id] {
				missing = append(missing, id)
			}
		}
		return store.Node{}, fmt.Errorf("%w: no chunk with id %s", store.ErrInvalidRequest, strings.Join(missing, ", "))
	}
	atts := make([]store.Attachment, len(docs))
	var kw []string
	for i, d := range docs {
		atts[i] = store.Attachment{DocID: d.ID, NodeID: n.ID, Source: document.Source{Type: d.SourceType, Name: d.SourceName}}
		kw = append(kw, chunkKeywords(d)...)
	}
	if err := h.hs.Attach(ctx, h.coll.Name(), atts, nil); err != nil {
		return store.Node{}, fmt.Errorf("attach chunks to %s: %w", n.Path, err)
	}
	m := *n
	m.Triggers = MergeTriggers(m.Triggers, kw)
	if !slices.Equal(m.Triggers, n.Triggers) {
		if _, err := h.hs.PutNodes(ctx, h.coll.Name(), []store.Node{m}); err != nil {
			return store.Node{}, fmt.Errorf("triggers of %s: %w", n.Path, err)
		}
	}
	return m, nil
}

// FindByTrigger returns the node whose triggers hold query exactly,
// case-insensitively (SEMANTICS §6); when several do, the deepest, then
// the first created. It returns nil when none does.
func (h *Hierarchy) FindByTrigger(ctx context.Context, query string) (*store.Node, error) {
	st, err := h.load(ctx, false)
	if err != nil {
		return nil, err
	}
	return st.byTrigger(query), nil
}

func (st *state) byTrigger(query string) *store.Node {
	q := strings.ToLower(strings.TrimSpace(query))
	if q == "" {
		return nil
	}
	var best *store.Node
	bestDepth := -1
	for i := range st.nodes {
		n := &st.nodes[i]
		if !slices.ContainsFunc(n.Triggers, func(t string) bool { return strings.EqualFold(t, q) }) {
			continue
		}
		if d := strings.Count(n.Path, "/"); d > bestDepth {
			best, bestDepth = n, d
		}
	}
	return best
}
