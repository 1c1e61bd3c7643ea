package hierarchy_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/hierarchy"
	"github.com/quarry-rag/quarry/store"
)

// placements makes n placements over a small vocabulary of names, so
// homonyms, repeated nodes, references by name, by path and to nodes of
// the same batch all occur.
func placements(rng *rand.Rand, n int) []hierarchy.Placement {
	names := []string{"Billing", "Refunds", "Guides", "API", "Setup", "Cards", "Keys", "Errors"}
	var made []string // paths a later placement may name as parent
	var ps []hierarchy.Placement
	for range n {
		p := hierarchy.Placement{Name: names[rng.IntN(len(names))]}
		switch r := rng.IntN(4); {
		case r == 0 || len(made) == 0:
		case r == 1:
			p.Parent = made[rng.IntN(len(made))]
		default:
			p.Parent = names[rng.IntN(len(names))] // a name, perhaps ambiguous or unknown
		}
		if rng.IntN(3) == 0 {
			p.Triggers = []string{names[rng.IntN(len(names))], fmt.Sprintf("t%d", rng.IntN(20))}
		}
		for j := range rng.IntN(3) {
			d := chunk(fmt.Sprintf("doc%d", rng.IntN(n)), j, fmt.Sprintf("func Handle%s%d() {}", p.Name, j), "Heading "+p.Name)
			p.Chunks = append(p.Chunks, d)
		}
		ps = append(ps, p)
		if p.Parent == "" {
			made = append(made, "/Root/"+p.Name)
		} else {
			made = append(made, p.Parent+"/"+p.Name)
		}
	}
	return ps
}

// sequential is Place's meaning: EnsureNode then AttachChunks for each
// placement, skipping those a reference error refuses.
func sequential(ctx context.Context, t *testing.T, h *hierarchy.Hierarchy, ps []hierarchy.Placement) {
	for _, p := range ps {
		n, err := h.EnsureNode(ctx, p.Parent, p.Name, p.Kind, p.Triggers)
		if err != nil {
			t.Fatalf("EnsureNode(%q, %q): %v", p.Parent, p.Name, err)
		}
		if len(p.Chunks) == 0 {
			continue
		}
		ids := make([]string, len(p.Chunks))
		for i, d := range p.Chunks {
			ids[i] = d.ID
		}
		if _, err := h.AttachChunks(ctx, n.Path, ids); err != nil {
			t.Fatal(err)
		}
	}
}

// valid keeps the placements whose parent reference resolves, one at a
// time, against what sequential would have built, so both runs see the
// same input.
func valid(ctx context.Context, t *testing.T, ps []hierarchy.Placement) []hierarchy.Placement {
	c := newColl(t)
	h := open(t, c)
	var ok []hierarchy.Placement
	for _, p := range ps {
		if _, err := h.EnsureNode(ctx, p.Parent, p.Name, p.Kind, p.Triggers); err != nil {
			continue
		}
		ok = append(ok, p)
	}
	return ok
}

// nodesByPath is the collection's nodes by path, without their ids (the
// store's to give).
func nodesByPath(ctx context.Context, t *testing.T, c *store.Collection) map[string]store.Node {
	t.Helper()
	hs, _ := c.Store().Hierarchy()
	nodes, err := hs.Nodes(ctx, c.Name())
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]store.Node{}
	for _, n := range nodes {
		n.ID, n.ParentID = 0, 0
		m[n.Path] = n
	}
	return m
}

// attPaths is the path of each chunk's node, by chunk id.
func attPaths(ctx context.Context, t *testing.T, c *store.Collection) map[string]string {
	t.Helper()
	hs, _ := c.Store().Hierarchy()
	nodes, err := hs.Nodes(ctx, c.Name())
	if err != nil {
		t.Fatal(err)
	}
	path := map[int64]string{}
	for _, n := range nodes {
		path[n.ID] = n.Path
	}
	atts, err := hs.Attachments(ctx, c.Name())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, a := range atts {
		out[a.DocID] = path[a.NodeID]
	}
	return out
}

func stored(ctx context.Context, t *testing.T, c *store.Collection, ps []hierarchy.Placement) {
	t.Helper()
	var docs []*document.Document
	seen := map[string]bool{}
	for _, p := range ps {
		for _, d := range p.Chunks {
			if !seen[d.ID] {
				seen[d.ID] = true
				docs = append(docs, d)
			}
		}
	}
	if len(docs) > 0 {
		if err := c.Upsert(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPlaceIsEnsureThenAttach: one batch writes exactly the tree, the
// triggers and the attachments that EnsureNode and AttachChunks give one
// node at a time, on an empty hierarchy and on one that already has
// nodes; and a batch cut off after any store call ends, once run again,
// where an uninterrupted one does.
func TestPlaceIsEnsureThenAttach(t *testing.T) {
	ctx := t.Context()
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		ps := valid(ctx, t, placements(rng, 60))
		first, second := ps[:len(ps)/2], ps[len(ps)/2:]

		want, got := newColl(t), newColl(t)
		stored(ctx, t, want, ps)
		stored(ctx, t, got, ps)
		sequential(ctx, t, open(t, want), first)
		sequential(ctx, t, open(t, got), first)

		sequential(ctx, t, open(t, want), second)
		rep, err := open(t, got).Place(ctx, second)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if len(rep.Nodes) != len(second) {
			t.Fatalf("seed %d: %d nodes reported for %d placements", seed, len(rep.Nodes), len(second))
		}
		if w, g := nodesByPath(ctx, t, want), nodesByPath(ctx, t, got); !reflect.DeepEqual(w, g) {
			t.Fatalf("seed %d: nodes differ:\nsequential %v\nbatch      %v", seed, w, g)
		}
		if w, g := attPaths(ctx, t, want), attPaths(ctx, t, got); !reflect.DeepEqual(w, g) {
			t.Fatalf("seed %d: attachments differ:\nsequential %v\nbatch      %v", seed, w, g)
		}
	}
}

// TestPlaceResumes cuts a batch off after each of its store writes and
// runs it again: the result is the uninterrupted one's.
func TestPlaceResumes(t *testing.T) {
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(3, 9))
	ps := valid(ctx, t, placements(rng, 80))
	want := newColl(t)
	stored(ctx, t, want, ps)
	if _, err := open(t, want).Place(ctx, ps); err != nil {
		t.Fatal(err)
	}
	for cut := 1; ; cut++ {
		got := newColl(t)
		stored(ctx, t, got, ps)
		hs, _ := got.Store().Hierarchy()
		lim := &limited{HierarchyStore: hs, left: cut}
		_, err := hierarchy.OpenOn(got, lim).Place(ctx, ps)
		if err == nil {
			break // cut beyond the last write
		}
		if _, err := open(t, got).Place(ctx, ps); err != nil {
			t.Fatalf("cut %d: run again: %v", cut, err)
		}
		if w, g := nodesByPath(ctx, t, want), nodesByPath(ctx, t, got); !reflect.DeepEqual(w, g) {
			t.Fatalf("cut after %d writes: nodes differ from one run", cut)
		}
		if w, g := attPaths(ctx, t, want), attPaths(ctx, t, got); !reflect.DeepEqual(w, g) {
			t.Fatalf("cut after %d writes: attachments differ from one run", cut)
		}
	}
}

// limited fails every write after the first left.
type limited struct {
	store.HierarchyStore
	left int
}

func (l *limited) spend() error {
	if l.left == 0 {
		return context.Canceled
	}
	l.left--
	return nil
}

func (l *limited) PutNodes(ctx context.Context, coll string, nodes []store.Node) ([]store.Node, error) {
	if err := l.spend(); err != nil {
		return nil, err
	}
	return l.HierarchyStore.PutNodes(ctx, coll, nodes)
}

func (l *limited) Attach(ctx context.Context, coll string, atts []store.Attachment, detach []string) error {
	if err := l.spend(); err != nil {
		return err
	}
	return l.HierarchyStore.Attach(ctx, coll, atts, detach)
}

// TestTagLinksStayLinear: a tag every node has makes no link on its own,
// and no node keeps more than its share of heavy links, so links grow with
// the nodes, not with their square.
func TestTagLinksStayLinear(t *testing.T) {
	var nodes []store.Node
	for i := range 1000 {
		// Every node has "test"; nodes of one group of 50 share "gN".
		nodes = append(nodes, store.Node{ID: int64(i + 1), Triggers: []string{"test", fmt.Sprintf("g%d", i/50), fmt.Sprintf("own%d", i)}})
	}
	links := hierarchy.BuildLinks(nodes, nil)
	per := map[int64]int{}
	for _, l := range links {
		if (l.From-1)/50 != (l.To-1)/50 {
			t.Fatalf("%d–%d share only the tag every node has, yet are linked (%s)", l.From, l.To, l.Evidence)
		}
		if l.Evidence != "g"+fmt.Sprint((l.From-1)/50)+",test" {
			t.Fatalf("evidence %q: every shared tag counts, the common one too", l.Evidence)
		}
		per[l.From]++
		per[l.To]++
	}
	// Each node keeps its 20 heaviest (here: equal) links, so it has at
	// least 20, and there are at most 20 per node in all.
	for id := range int64(1000) {
		if n := per[id+1]; n < 20 {
			t.Fatalf("node %d has %d tag links, want at least the 20 it keeps", id+1, n)
		}
	}
	if len(links) > 1000*20 {
		t.Fatalf("%d links for 1,000 nodes, want at most 20 each", len(links))
	}
	if len(links) == 0 {
		t.Fatal("no links at all")
	}
}
