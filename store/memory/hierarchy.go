package memory

import (
	"cmp"
	"context"
	"slices"

	"github.com/quarry-rag/quarry/store"
)

// hierData is a collection's knowledge hierarchy. It lives in the
// collection, so dropping the collection drops it; Backend.mu guards it.
type hierData struct {
	nextID int64
	nodes  map[int64]store.Node
	atts   map[string]store.Attachment // by doc id
	links  map[linkKey]store.Link
}

type linkKey struct {
	from, to int64
	typ      string
}

func (h *hierData) init() {
	if h.nodes == nil {
		h.nodes = map[int64]store.Node{}
		h.atts = map[string]store.Attachment{}
		h.links = map[linkKey]store.Link{}
	}
}

func cloneNode(n store.Node) store.Node {
	n.Triggers = slices.Clone(n.Triggers)
	if n.Triggers == nil {
		n.Triggers = []string{}
	}
	return n
}

// Nodes implements store.HierarchyStore.
func (b *Backend) Nodes(_ context.Context, coll string) ([]store.Node, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	c, err := b.get(coll)
	if err != nil {
		return nil, err
	}
	out := make([]store.Node, 0, len(c.hier.nodes))
	for _, n := range c.hier.nodes {
		out = append(out, cloneNode(n))
	}
	slices.SortFunc(out, func(a, b store.Node) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// PutNodes implements store.HierarchyStore.
func (b *Backend) PutNodes(_ context.Context, coll string, nodes []store.Node) ([]store.Node, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, err := b.get(coll)
	if err != nil {
		return nil, err
	}
	h := &c.hier
	h.init()
	have := make([]store.Node, 0, len(h.nodes))
	for _, n := range h.nodes {
		have = append(have, n)
	}
	if err := store.CheckPutNodes(have, nodes); err != nil {
		return nil, err
	}
	out := make([]store.Node, len(nodes))
	for i, n := range nodes {
		if n.ID == 0 {
			h.nextID++
			n.ID = h.nextID
		}
		n = cloneNode(n)
		h.nodes[n.ID] = n
		out[i] = cloneNode(n)
	}
	return out, nil
}

// DeleteNodes implements store.HierarchyStore.
func (b *Backend) DeleteNodes(_ context.Context, coll string, ids []int64) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, err := b.get(coll)
	if err != nil {
		return 0, err
	}
	h := &c.hier
	gone := map[int64]bool{}
	for _, id := range ids {
		if _, ok := h.nodes[id]; ok {
			gone[id] = true
			delete(h.nodes, id)
		}
	}
	for k, a := range h.atts {
		if gone[a.NodeID] {
			delete(h.atts, k)
		}
	}
	for k := range h.links {
		if gone[k.from] || gone[k.to] {
			delete(h.links, k)
		}
	}
	return len(gone), nil
}

// Attachments implements store.HierarchyStore.
func (b *Backend) Attachments(_ context.Context, coll string) ([]store.Attachment, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	c, err := b.get(coll)
	if err != nil {
		return nil, err
	}
	out := make([]store.Attachment, 0, len(c.hier.atts))
	for _, a := range c.hier.atts {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b store.Attachment) int { return cmp.Compare(a.DocID, b.DocID) })
	return out, nil
}

// Attach implements store.HierarchyStore.
func (b *Backend) Attach(_ context.Context, coll string, atts []store.Attachment, detach []string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, err := b.get(coll)
	if err != nil {
		return err
	}
	h := &c.hier
	h.init()
	for _, id := range detach {
		delete(h.atts, id)
	}
	for _, a := range atts {
		h.atts[a.DocID] = a
	}
	return nil
}

// Links implements store.HierarchyStore.
func (b *Backend) Links(_ context.Context, coll string) ([]store.Link, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	c, err := b.get(coll)
	if err != nil {
		return nil, err
	}
	out := make([]store.Link, 0, len(c.hier.links))
	for _, l := range c.hier.links {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b store.Link) int {
		return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To), cmp.Compare(a.Type, b.Type))
	})
	return out, nil
}

// PutLinks implements store.HierarchyStore.
func (b *Backend) PutLinks(_ context.Context, coll string, links []store.Link, replace []string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, err := b.get(coll)
	if err != nil {
		return err
	}
	h := &c.hier
	h.init()
	for k := range h.links {
		if slices.Contains(replace, k.typ) {
			delete(h.links, k)
		}
	}
	for _, l := range links {
		h.links[linkKey{l.From, l.To, l.Type}] = l
	}
	return nil
}

var _ store.HierarchyStore = (*Backend)(nil)
