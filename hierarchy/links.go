package hierarchy

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/quarry-rag/quarry/store"
)

// rebuiltTypes are the link types RebuildLinks derives; other types (such
// as semantic links made by hand) are kept.
var rebuiltTypes = []string{store.LinkTagOverlap, store.LinkCrossRef}

// Tag links are bounded so a rebuild stays linear in the nodes: a tag more
// than commonTag nodes share is, like a stop word, no evidence on its own
// (a pair must share a rarer tag too, though every shared tag counts in
// its weight), and each node keeps its maxTagLinks heaviest tag links (a
// link stays when either end keeps it). Without the bounds the triggers
// of Go's source tree (12,000 nodes) gave 755,000 links, most of them
// pairs that shared "test" or "error".
// pair is two node ids, the lower first.
type pair struct{ a, b int64 }

const (
	commonTag   = 100
	maxTagLinks = 20
)

// BuildLinks derives the links of SEMANTICS §6 from nodes (their triggers
// are their tags) and attachments. Tag links weigh |A∩B| / |A∪B| with the
// shared tags, sorted and comma-joined, as evidence, within the bounds of
// commonTag and maxTagLinks. Source links weigh, summed over the sources
// A and B share, min(A's chunks from it, B's) / max(A's chunks, B's
// chunks), with the shared sources as evidence. Each pair is stored once,
// from the lower id to the higher; the result is ordered by (From, To,
// Type), so a rebuild is idempotent.
func BuildLinks(nodes []store.Node, atts []store.Attachment) []store.Link {
	out := tagLinks(nodes)

	// Shared sources.
	known := make(map[int64]bool, len(nodes))
	for _, n := range nodes {
		known[n.ID] = true
	}
	total := map[int64]int{}
	perSource := map[string]map[int64]int{}
	for _, a := range atts {
		if !known[a.NodeID] || a.Source.Name == "" {
			continue
		}
		total[a.NodeID]++
		key := a.Source.Name
		if perSource[key] == nil {
			perSource[key] = map[int64]int{}
		}
		perSource[key][a.NodeID]++
	}
	type acc struct {
		w    float64
		srcs []string
	}
	cross := map[pair]*acc{}
	for src, byNode := range perSource {
		if len(byNode) < 2 {
			continue
		}
		ids := slices.Sorted(func(yield func(int64) bool) {
			for id := range byNode {
				if !yield(id) {
					return
				}
			}
		})
		for i, a := range ids {
			for _, b := range ids[i+1:] {
				p := pair{a, b}
				if cross[p] == nil {
					cross[p] = &acc{}
				}
				cross[p].w += float64(min(byNode[a], byNode[b])) / float64(max(total[a], total[b]))
				cross[p].srcs = append(cross[p].srcs, src)
			}
		}
	}
	for p, c := range cross {
		slices.Sort(c.srcs)
		out = append(out, store.Link{From: p.a, To: p.b, Type: store.LinkCrossRef, Weight: c.w, Evidence: strings.Join(c.srcs, ",")})
	}
	slices.SortFunc(out, func(a, b store.Link) int {
		return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To), cmp.Compare(a.Type, b.Type))
	})
	return out
}

// tagLinks are the tag-overlap links of nodes (see BuildLinks).
func tagLinks(nodes []store.Node) []store.Link {
	tags := make(map[int64]map[string]bool, len(nodes))
	byTag := map[string][]int64{}
	for _, n := range nodes {
		set := map[string]bool{}
		for _, t := range n.Triggers {
			t = strings.ToLower(t)
			if !set[t] {
				set[t] = true
				byTag[t] = append(byTag[t], n.ID)
			}
		}
		tags[n.ID] = set
	}
	candidates := map[pair]bool{}
	for _, ids := range byTag {
		if len(ids) > commonTag {
			continue
		}
		slices.Sort(ids)
		for i, a := range ids {
			for _, b := range ids[i+1:] {
				candidates[pair{a, b}] = true
			}
		}
	}
	links := make([]store.Link, 0, len(candidates))
	for p := range candidates {
		var common []string
		for t := range tags[p.a] {
			if tags[p.b][t] {
				common = append(common, t)
			}
		}
		union := len(tags[p.a]) + len(tags[p.b]) - len(common)
		slices.Sort(common)
		links = append(links, store.Link{From: p.a, To: p.b, Type: store.LinkTagOverlap,
			Weight: float64(len(common)) / float64(union), Evidence: strings.Join(common, ",")})
	}
	// Heaviest first (then by ids, so the cut is the same every time);
	// a node's first maxTagLinks are the ones it keeps.
	slices.SortFunc(links, func(a, b store.Link) int {
		return cmp.Or(cmp.Compare(b.Weight, a.Weight), cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To))
	})
	kept := map[int64]int{}
	out := links[:0]
	for _, l := range links {
		if kept[l.From] < maxTagLinks || kept[l.To] < maxTagLinks {
			out = append(out, l)
		}
		kept[l.From]++
		kept[l.To]++
	}
	return out
}

// LinkReport counts the links a rebuild wrote, by type.
type LinkReport struct {
	TagOverlap int `json:"tag_overlap"`
	CrossRef   int `json:"cross_ref"`
	Total      int `json:"total"`
}

// RebuildLinks replaces the tag-overlap and shared-source links with ones
// derived afresh, in one transaction; other links are kept.
func (h *Hierarchy) RebuildLinks(ctx context.Context) (LinkReport, error) {
	var rep LinkReport
	st, err := h.load(ctx, true)
	if err != nil {
		return rep, err
	}
	links := BuildLinks(st.nodes, st.atts)
	if err := h.hs.PutLinks(ctx, h.coll.Name(), links, rebuiltTypes); err != nil {
		return rep, fmt.Errorf("rebuild links of %q: %w", h.coll.Name(), err)
	}
	for _, l := range links {
		switch l.Type {
		case store.LinkTagOverlap:
			rep.TagOverlap++
		case store.LinkCrossRef:
			rep.CrossRef++
		}
	}
	rep.Total = len(links)
	return rep, nil
}

// linkTypes are the link types a link may have.
var linkTypes = []string{store.LinkTagOverlap, store.LinkCrossRef, store.LinkSemantic}

// UpsertLink records a link between two nodes (references as for Node),
// replacing the weight and evidence of an existing link of that type.
func (h *Hierarchy) UpsertLink(ctx context.Context, from, to, typ string, weight float64, evidence string) (store.Link, error) {
	if !slices.Contains(linkTypes, typ) {
		return store.Link{}, fmt.Errorf("%w: link type %q is not one of %s", store.ErrInvalidRequest, typ, strings.Join(linkTypes, ", "))
	}
	st, err := h.load(ctx, false)
	if err != nil {
		return store.Link{}, err
	}
	a, err := st.resolve(from)
	if err != nil {
		return store.Link{}, err
	}
	b, err := st.resolve(to)
	if err != nil {
		return store.Link{}, err
	}
	if a.ID == b.ID {
		return store.Link{}, fmt.Errorf("%w: a node cannot link to itself", store.ErrInvalidRequest)
	}
	l := store.Link{From: a.ID, To: b.ID, Type: typ, Weight: weight, Evidence: evidence}
	if err := h.hs.PutLinks(ctx, h.coll.Name(), []store.Link{l}, nil); err != nil {
		return store.Link{}, fmt.Errorf("link %s and %s: %w", a.Path, b.Path, err)
	}
	return l, nil
}

// NodeLink is a link seen from one of its nodes.
type NodeLink struct {
	Other     int64   `json:"other"`
	OtherName string  `json:"other_name"`
	OtherPath string  `json:"other_path"`
	Direction string  `json:"direction"` // "out" when stored from this node, else "in"
	Type      string  `json:"type"`
	Weight    float64 `json:"weight"`
	Evidence  string  `json:"evidence"`
}

// LinksOf returns a node's links in both directions, of one type ("" for
// all), heaviest first.
func (h *Hierarchy) LinksOf(ctx context.Context, ref, typ string) ([]NodeLink, error) {
	st, err := h.load(ctx, false)
	if err != nil {
		return nil, err
	}
	n, err := st.resolve(ref)
	if err != nil {
		return nil, err
	}
	links, err := h.hs.Links(ctx, h.coll.Name())
	if err != nil {
		return nil, err
	}
	var out []NodeLink
	for _, l := range links {
		if typ != "" && l.Type != typ {
			continue
		}
		other, dir := l.To, "out"
		switch n.ID {
		case l.From:
		case l.To:
			other, dir = l.From, "in"
		default:
			continue
		}
		nl := NodeLink{Other: other, Direction: dir, Type: l.Type, Weight: l.Weight, Evidence: l.Evidence}
		if o := st.byID[other]; o != nil {
			nl.OtherName, nl.OtherPath = o.Name, o.Path
		}
		out = append(out, nl)
	}
	slices.SortStableFunc(out, func(a, b NodeLink) int { return cmp.Compare(b.Weight, a.Weight) })
	return out, nil
}

// GraphLink is a link with its nodes' names and paths, for display.
type GraphLink struct {
	store.Link
	FromName string `json:"from_name"`
	FromPath string `json:"from_path"`
	ToName   string `json:"to_name"`
	ToPath   string `json:"to_path"`
}

// Graph returns every link with its nodes' names, heaviest first.
func (h *Hierarchy) Graph(ctx context.Context) ([]GraphLink, error) {
	st, err := h.load(ctx, false)
	if err != nil {
		return nil, err
	}
	links, err := h.hs.Links(ctx, h.coll.Name())
	if err != nil {
		return nil, err
	}
	out := make([]GraphLink, len(links))
	for i, l := range links {
		out[i] = GraphLink{Link: l}
		if n := st.byID[l.From]; n != nil {
			out[i].FromName, out[i].FromPath = n.Name, n.Path
		}
		if n := st.byID[l.To]; n != nil {
			out[i].ToName, out[i].ToPath = n.Name, n.Path
		}
	}
	slices.SortStableFunc(out, func(a, b GraphLink) int { return cmp.Compare(b.Weight, a.Weight) })
	return out, nil
}

// NoLinks is what WriteGraph prints for a graph without links.
const NoLinks = "No links. Run knowledge_rebuild_links first."

// WriteGraph prints links as "A --[type, w=0.75]--> B" lines, each
// followed by its evidence.
func WriteGraph(w io.Writer, links []GraphLink) error {
	if len(links) == 0 {
		_, err := fmt.Fprintln(w, NoLinks)
		return err
	}
	var b strings.Builder
	for i, l := range links {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s --[%s, w=%s]--> %s\n  evidence: %s", l.FromName, l.Type, formatWeight(l.Weight), l.ToName, l.Evidence)
	}
	b.WriteByte('\n')
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteDOT writes the links as a Graphviz graph (`dot -Tsvg`): a node per
// knowledge node, named by its path and labelled with its name, and an
// edge per link, labelled with its type and weight, as thick as it is
// heavy, its evidence as the tooltip. Links are undirected.
func WriteDOT(w io.Writer, links []GraphLink) error {
	q := func(s string) string { return strconv.Quote(s) }
	var b strings.Builder
	b.WriteString("graph knowledge {\n  node [shape=box, style=rounded];\n")
	seen := map[string]bool{}
	for _, l := range links {
		for _, n := range [][2]string{{l.FromPath, l.FromName}, {l.ToPath, l.ToName}} {
			if !seen[n[0]] {
				seen[n[0]] = true
				fmt.Fprintf(&b, "  %s [label=%s];\n", q(n[0]), q(n[1]))
			}
		}
	}
	for _, l := range links {
		fmt.Fprintf(&b, "  %s -- %s [label=%s, penwidth=%s, tooltip=%s];\n", q(l.FromPath), q(l.ToPath),
			q(fmt.Sprintf("%s %s", l.Type, formatWeight(l.Weight))), formatWeight(1+4*l.Weight), q(l.Evidence))
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// formatWeight prints a weight with at most three decimals, without
// trailing zeros: 0.75, 0.333, 1.
func formatWeight(w float64) string {
	s := strings.TrimRight(fmt.Sprintf("%.3f", w), "0")
	return strings.TrimSuffix(s, ".")
}

// Neighbor is a node reached from another over links.
type Neighbor struct {
	Node store.Node `json:"node"`
	// Depth is the number of links walked (1 for a direct neighbour).
	Depth int `json:"depth"`
	// Type, Weight and Evidence are those of the link that reached it.
	Type     string  `json:"type"`
	Weight   float64 `json:"weight"`
	Evidence string  `json:"evidence"`
}

// Neighbor bounds (the seed's knowledge_neighbors): depth 1–3, default 2;
// limit 1–20, default 5.
const (
	DefaultDepth = 2
	MaxDepth     = 3
	DefaultLimit = 5
	MaxLimit     = 20
)

// Neighbors walks the links from a node, breadth first, up to depth links
// away, and returns at most limit nodes: nearer first, then by the weight
// of the link that reached them. Depth and limit are clamped to their
// bounds; 0 means the default.
func (h *Hierarchy) Neighbors(ctx context.Context, ref string, depth, limit int) (store.Node, []Neighbor, error) {
	st, err := h.load(ctx, false)
	if err != nil {
		return store.Node{}, nil, err
	}
	n, err := st.resolve(ref)
	if err != nil {
		return store.Node{}, nil, err
	}
	links, err := h.hs.Links(ctx, h.coll.Name())
	if err != nil {
		return store.Node{}, nil, err
	}
	return *n, neighbors(st, links, n.ID, depth, limit), nil
}

func clamp(v, def, lo, hi int) int {
	if v == 0 {
		return def
	}
	return max(lo, min(hi, v))
}

func neighbors(st *state, links []store.Link, from int64, depth, limit int) []Neighbor {
	depth = clamp(depth, DefaultDepth, 1, MaxDepth)
	limit = clamp(limit, DefaultLimit, 1, MaxLimit)
	adj := map[int64][]store.Link{}
	for _, l := range links {
		if l.From == l.To {
			continue
		}
		adj[l.From] = append(adj[l.From], l)
		adj[l.To] = append(adj[l.To], l)
	}
	seen := map[int64]bool{from: true}
	frontier := []int64{from}
	var out []Neighbor
	for d := 1; d <= depth && len(frontier) > 0 && len(out) < limit; d++ {
		best := map[int64]store.Link{}
		for _, id := range frontier {
			for _, l := range adj[id] {
				other := l.To
				if other == id {
					other = l.From
				}
				if seen[other] || st.byID[other] == nil {
					continue
				}
				if b, ok := best[other]; !ok || l.Weight > b.Weight {
					best[other] = l
				}
			}
		}
		var level []Neighbor
		for id, l := range best {
			seen[id] = true
			level = append(level, Neighbor{Node: *st.byID[id], Depth: d, Type: l.Type, Weight: l.Weight, Evidence: l.Evidence})
		}
		slices.SortFunc(level, func(a, b Neighbor) int {
			return cmp.Or(cmp.Compare(b.Weight, a.Weight), cmp.Compare(a.Node.ID, b.Node.ID))
		})
		frontier = frontier[:0]
		for _, nb := range level {
			frontier = append(frontier, nb.Node.ID)
		}
		out = append(out, level...)
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}
