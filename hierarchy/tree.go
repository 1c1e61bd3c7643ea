package hierarchy

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/quarry-rag/quarry/store"
)

// TreeNode is a node with its chunk counts and children.
type TreeNode struct {
	ID       int64    `json:"id"`
	Name     string   `json:"name"`
	Path     string   `json:"path"`
	Kind     string   `json:"kind"`
	Triggers []string `json:"triggers"`
	// Chunks counts the chunks under the node itself, Total those of its
	// whole subtree.
	Chunks   int         `json:"chunks"`
	Total    int         `json:"total"`
	Children []*TreeNode `json:"children,omitempty"`
}

// Tree returns the hierarchy from the root, children in name order; nil
// when there are no nodes. Nodes whose parent is missing are left out (the
// audit reports them).
func (h *Hierarchy) Tree(ctx context.Context) (*TreeNode, error) {
	st, err := h.load(ctx, true)
	if err != nil {
		return nil, err
	}
	root := st.root()
	if root == nil {
		return nil, nil
	}
	var build func(n *store.Node, seen map[int64]bool) *TreeNode
	build = func(n *store.Node, seen map[int64]bool) *TreeNode {
		seen[n.ID] = true
		t := &TreeNode{ID: n.ID, Name: n.Name, Path: n.Path, Kind: n.Kind, Triggers: n.Triggers, Chunks: st.counts[n.ID]}
		t.Total = t.Chunks
		for _, k := range st.kids[n.ID] {
			if seen[k] {
				continue
			}
			c := build(st.byID[k], seen)
			t.Total += c.Total
			t.Children = append(t.Children, c)
		}
		sortTree(t.Children)
		return t
	}
	return build(root, map[int64]bool{}), nil
}

func sortTree(ts []*TreeNode) {
	slices.SortStableFunc(ts, func(a, b *TreeNode) int {
		return cmp.Or(cmp.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)), cmp.Compare(a.ID, b.ID))
	})
}

// Prune cuts the tree below depth levels under the root (0 keeps all) and
// returns it.
func (t *TreeNode) Prune(depth int) *TreeNode {
	if t == nil || depth <= 0 {
		return t
	}
	var cut func(n *TreeNode, d int)
	cut = func(n *TreeNode, d int) {
		if d >= depth {
			n.Children = nil
			return
		}
		for _, c := range n.Children {
			cut(c, d+1)
		}
	}
	cut(t, 0)
	return t
}

// Write prints the tree with box-drawing branches, each node with its
// chunk counts and first triggers.
func (t *TreeNode) Write(w io.Writer) error {
	if t == nil {
		_, err := fmt.Fprintln(w, "no nodes yet: ingest a folder to build the hierarchy")
		return err
	}
	var b strings.Builder
	var walk func(n *TreeNode, prefix, branch string)
	walk = func(n *TreeNode, prefix, branch string) {
		fmt.Fprintf(&b, "%s%s%s  (%d chunks", prefix, branch, n.Name, n.Chunks)
		if n.Total != n.Chunks {
			fmt.Fprintf(&b, ", %d in all", n.Total)
		}
		b.WriteString(")")
		if len(n.Triggers) > 0 {
			tr := n.Triggers[:min(5, len(n.Triggers))]
			fmt.Fprintf(&b, "  [%s]", strings.Join(tr, ", "))
		}
		b.WriteByte('\n')
		next := prefix
		switch branch {
		case "├── ":
			next += "│   "
		case "└── ":
			next += "    "
		}
		for i, c := range n.Children {
			br := "├── "
			if i == len(n.Children)-1 {
				br = "└── "
			}
			walk(c, next, br)
		}
	}
	walk(t, "", "")
	_, err := io.WriteString(w, b.String())
	return err
}
