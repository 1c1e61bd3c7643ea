package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/hierarchy"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/store"
)

// Knowledge hierarchy tool names.
const (
	ToolTree         = "knowledge_tree"
	ToolHealth       = "knowledge_health"
	ToolAddNode      = "knowledge_add_node"
	ToolAddChunks    = "knowledge_add_chunks"
	ToolLinkGraph    = "knowledge_link_graph"
	ToolRebuildLinks = "knowledge_rebuild_links"
	ToolNeighbors    = "knowledge_neighbors"
	ToolRemoveNode   = "knowledge_remove_node"
	ToolRenameNode   = "knowledge_rename_node"
)

// TreeInput is the input of knowledge_tree.
type TreeInput struct {
	Depth      int    `json:"depth,omitempty" jsonschema:"levels below the root to return (0 or omitted: all)"`
	Collection string `json:"collection,omitempty" jsonschema:"collection; omit for the default"`
}

// HealthInput is the input of knowledge_health.
type HealthInput struct {
	Collection string `json:"collection,omitempty" jsonschema:"collection; omit for the default"`
}

// AddNodeInput is the input of knowledge_add_node.
type AddNodeInput struct {
	Name       string   `json:"name" jsonschema:"the new node's name (no '/')"`
	Parent     string   `json:"parent,omitempty" jsonschema:"the parent node: id, path or unique name; omit for the root"`
	Triggers   []string `json:"triggers,omitempty" jsonschema:"keywords or phrases that jump to this node when a search is exactly one of them (at most 40)"`
	Collection string   `json:"collection,omitempty" jsonschema:"collection; omit for the default"`
}

// NodeOutput is a node.
type NodeOutput struct {
	Node store.Node `json:"node"`
}

// AddChunksInput is the input of knowledge_add_chunks.
type AddChunksInput struct {
	Node       string        `json:"node" jsonschema:"the node: its id, its path (such as /Root/guides/billing) or its name when unique"`
	Chunks     []NewDocument `json:"chunks,omitempty" jsonschema:"new texts to store and place under the node (at most 256)"`
	IDs        []string      `json:"ids,omitempty" jsonschema:"ids of stored passages to move under the node"`
	Collection string        `json:"collection,omitempty" jsonschema:"collection; omit for the default"`
}

// AddChunksOutput is the structured result of knowledge_add_chunks.
type AddChunksOutput struct {
	Node store.Node `json:"node"`
	IDs  []string   `json:"ids" jsonschema:"the ids of the passages now under the node"`
}

// LinkGraphInput is the input of knowledge_link_graph.
type LinkGraphInput struct {
	Collection string `json:"collection,omitempty" jsonschema:"collection; omit for the default"`
}

// LinkGraphOutput is the structured result of knowledge_link_graph.
type LinkGraphOutput struct {
	Links []hierarchy.GraphLink `json:"links"`
}

// NeighborsInput is the input of knowledge_neighbors.
type NeighborsInput struct {
	Query      string `json:"query" jsonschema:"a trigger, a node name, a path or an id; failing those, each word is tried as a trigger and as a name"`
	Depth      int    `json:"depth,omitempty" jsonschema:"how many links away to walk (1-3, default 2)"`
	Limit      int    `json:"limit,omitempty" jsonschema:"at most this many neighbours (1-20, default 5)"`
	Collection string `json:"collection,omitempty" jsonschema:"collection; omit for the default"`
}

// NeighborsOutput is the structured result of knowledge_neighbors.
type NeighborsOutput struct {
	Node      *store.Node          `json:"node" jsonschema:"the node the query named; null when none"`
	Neighbors []hierarchy.Neighbor `json:"neighbors"`
}

// NodeInput names a node (knowledge_remove_node).
type NodeInput struct {
	Node       string `json:"node" jsonschema:"the node: its id, its path (such as /Root/guides/billing) or its name when unique"`
	Collection string `json:"collection,omitempty" jsonschema:"collection; omit for the default"`
}

// RemoveNodeOutput is the structured result of knowledge_remove_node.
type RemoveNodeOutput struct {
	Removed int `json:"removed" jsonschema:"nodes removed: the node and its subtree"`
}

// RenameNodeInput is the input of knowledge_rename_node.
type RenameNodeInput struct {
	Node       string `json:"node" jsonschema:"the node: its id, its path (such as /Root/guides/billing) or its name when unique"`
	Name       string `json:"name" jsonschema:"the new name (no '/'); the paths below it follow"`
	Collection string `json:"collection,omitempty" jsonschema:"collection; omit for the default"`
}

// addHierarchyTools registers the knowledge hierarchy's tools: the
// reading ones always, the changing ones unless the server is read-only.
func (s *Server) addHierarchyTools() {
	addTool(s, &sdk.Tool{Name: ToolTree, Annotations: readOnly("Knowledge tree"),
		Description: "Show the knowledge hierarchy: nodes made from the ingested folders (root, top-level, deeper), " +
			"each with its own and its subtree's passage counts and its triggers. Searching exactly for a trigger " +
			"jumps to its node."}, s.tree)
	addTool(s, &sdk.Tool{Name: ToolHealth, Annotations: readOnly("Knowledge base health"),
		Description: "Audit the knowledge base: serious problems (nodes with a missing parent, empty or tiny " +
			"passages, duplicate node names, a wrong embedding model) and warnings (nodes without passages or " +
			"triggers, passages without a source or a node, files gone from disk, stale indexes), each with advice."}, s.health)
	addTool(s, &sdk.Tool{Name: ToolLinkGraph, Annotations: readOnly("Knowledge link graph"),
		Description: "List the links between nodes, heaviest first: tag_overlap (shared triggers), cross_ref " +
			"(passages of one source under both) and semantic (made by hand), each with its weight and evidence."}, s.linkGraph)
	addTool(s, &sdk.Tool{Name: ToolNeighbors, Annotations: readOnly("Neighbouring knowledge nodes"),
		Description: "Find a node by trigger, name or path and return the nodes linked to it, nearest and " +
			"heaviest first: related areas of the knowledge base worth reading next."}, s.neighbors)
	if s.cfg.ReadOnly {
		return
	}
	write := func(title string, destructive bool) *sdk.ToolAnnotations {
		return &sdk.ToolAnnotations{Title: title, DestructiveHint: new(destructive), OpenWorldHint: new(false)}
	}
	addTool(s, &sdk.Tool{Name: ToolAddNode, Annotations: write("Add a knowledge node", false),
		Description: "Add a node under a parent (the root when omitted), with optional triggers. A name " +
			"another node already has elsewhere becomes \"{parent} · {name}\"."}, writes(s, s.addNode))
	addTool(s, &sdk.Tool{Name: ToolAddChunks, Annotations: write("Add passages to a node", false),
		Description: "Place passages under a node: new texts (stored and embedded first) or the ids of stored " +
			"passages (moved from their node). Their headings and code symbols join the node's triggers."}, writes(s, s.addChunks))
	addTool(s, &sdk.Tool{Name: ToolRebuildLinks,
		Annotations: &sdk.ToolAnnotations{Title: "Rebuild knowledge links", IdempotentHint: true, DestructiveHint: new(false), OpenWorldHint: new(false)},
		Description: "Rebuild the tag_overlap and cross_ref links from the nodes' triggers and passages " +
			"(semantic links are kept). Ingestion does this already; call it after editing nodes."}, writes(s, s.rebuildLinks))
	addTool(s, &sdk.Tool{Name: ToolRemoveNode, Annotations: write("Remove a knowledge node", true),
		Description: "Remove a node and its subtree, with their links. The passages stay in the collection; " +
			"the root cannot be removed."}, writes(s, s.removeNode))
	addTool(s, &sdk.Tool{Name: ToolRenameNode, Annotations: write("Rename a knowledge node", false),
		Description: "Rename a node; the paths of its subtree follow. Later ingestions keep the new name."}, writes(s, s.renameNode))
}

// hierarchy opens a collection's hierarchy for a call. Clients under a
// filter scope are refused: nodes span every document of a collection.
func (s *Server) hierarchy(ctx context.Context, req *sdk.CallToolRequest, coll string) (*hierarchy.Hierarchy, Scope, error) {
	sc, err := s.scope(ctx, req)
	if err != nil {
		return nil, sc, err
	}
	h, err := s.kb.Hierarchy(ctx, sc, coll)
	if err != nil {
		return nil, sc, err
	}
	if err := s.kb.CheckModel(h.Collection()); err != nil {
		return nil, sc, err
	}
	return h, sc, nil
}

func textResult(format string, args ...any) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

// TreeOutput is the structured result of knowledge_tree: the nodes in
// depth-first order, children by name.
type TreeOutput struct {
	Nodes []TreeEntry `json:"nodes"`
}

// TreeEntry is one node of the tree.
type TreeEntry struct {
	ID       int64    `json:"id"`
	ParentID int64    `json:"parent_id" jsonschema:"0 for the root"`
	Depth    int      `json:"depth" jsonschema:"0 for the root, 1 for top-level nodes"`
	Name     string   `json:"name"`
	Path     string   `json:"path"`
	Kind     string   `json:"kind" jsonschema:"root, fundamental (a top-level folder) or specialization (deeper)"`
	Chunks   int      `json:"chunks" jsonschema:"passages under the node itself"`
	Total    int      `json:"total" jsonschema:"passages under the node and its subtree"`
	Triggers []string `json:"triggers"`
}

func (s *Server) tree(ctx context.Context, req *sdk.CallToolRequest, in TreeInput) (*sdk.CallToolResult, TreeOutput, error) {
	out := TreeOutput{Nodes: []TreeEntry{}}
	h, _, err := s.hierarchy(ctx, req, in.Collection)
	if err != nil {
		return nil, out, err
	}
	t, err := h.Tree(ctx)
	if err != nil {
		return nil, out, err
	}
	t = t.Prune(max(in.Depth, 0))
	var b strings.Builder
	if err := t.Write(&b); err != nil {
		return nil, out, err
	}
	var walk func(n *hierarchy.TreeNode, parent int64, depth int)
	walk = func(n *hierarchy.TreeNode, parent int64, depth int) {
		out.Nodes = append(out.Nodes, TreeEntry{ID: n.ID, ParentID: parent, Depth: depth, Name: n.Name, Path: n.Path, Kind: n.Kind,
			Chunks: n.Chunks, Total: n.Total, Triggers: n.Triggers})
		for _, c := range n.Children {
			walk(c, n.ID, depth+1)
		}
	}
	if t != nil {
		walk(t, 0, 0)
	}
	return textResult("%s", b.String()), out, nil
}

func (s *Server) health(ctx context.Context, req *sdk.CallToolRequest, in HealthInput) (*sdk.CallToolResult, *hierarchy.Report, error) {
	h, _, err := s.hierarchy(ctx, req, in.Collection)
	if err != nil {
		return nil, nil, err
	}
	rep, err := h.Audit(ctx, hierarchy.AuditOptions{Model: s.kb.Embedder().Model()})
	if err != nil {
		return nil, nil, err
	}
	if rep.Findings == nil {
		rep.Findings = []hierarchy.Finding{}
	}
	var b strings.Builder
	state := "healthy"
	if !rep.OK {
		state = "NOT healthy"
	}
	fmt.Fprintf(&b, "Collection %q is %s: %d serious, %d warnings.", rep.Collection, state, rep.Serious, rep.Warnings)
	for _, f := range rep.Findings {
		fmt.Fprintf(&b, "\n%s %s: %d (%s)", f.Severity, f.Check, f.Count, f.Advice)
	}
	return textResult("%s", b.String()), rep, nil
}

func (s *Server) linkGraph(ctx context.Context, req *sdk.CallToolRequest, in LinkGraphInput) (*sdk.CallToolResult, LinkGraphOutput, error) {
	out := LinkGraphOutput{Links: []hierarchy.GraphLink{}}
	sc, err := s.scope(ctx, req)
	if err != nil {
		return nil, out, err
	}
	g, err := s.kb.Links(ctx, sc, in.Collection)
	if err != nil {
		return nil, out, err
	}
	out.Links = g
	var b strings.Builder
	if err := hierarchy.WriteGraph(&b, g); err != nil {
		return nil, out, err
	}
	return textResult("%s", strings.TrimSuffix(b.String(), "\n")), out, nil
}

func (s *Server) neighbors(ctx context.Context, req *sdk.CallToolRequest, in NeighborsInput) (*sdk.CallToolResult, NeighborsOutput, error) {
	out := NeighborsOutput{Neighbors: []hierarchy.Neighbor{}}
	h, _, err := s.hierarchy(ctx, req, in.Collection)
	if err != nil {
		return nil, out, err
	}
	n, nb, err := resolveNeighbors(ctx, h, in)
	if err != nil {
		return nil, out, err
	}
	if n == nil {
		return textResult("No node matches %q.", in.Query), out, nil
	}
	out.Node = n
	if nb != nil {
		out.Neighbors = nb
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", n.Path, count(len(nb), "neighbour"))
	for _, x := range nb {
		fmt.Fprintf(&b, "\n  %s (depth %d, %s, w=%.3g)", x.Node.Path, x.Depth, x.Type, x.Weight)
	}
	return textResult("%s", b.String()), out, nil
}

// resolveNeighbors finds the node a query names — a trigger, then a name,
// path or id, then each of its words as a trigger or a name — and its
// neighbours; a nil node when nothing matches.
func resolveNeighbors(ctx context.Context, h *hierarchy.Hierarchy, in NeighborsInput) (*store.Node, []hierarchy.Neighbor, error) {
	try := func(q string) (*store.Node, error) {
		n, err := h.FindByTrigger(ctx, q)
		if n != nil || err != nil {
			return n, err
		}
		m, err := h.Node(ctx, q)
		if errors.Is(err, store.ErrNodeNotFound) || errors.Is(err, hierarchy.ErrAmbiguous) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return &m, nil
	}
	n, err := try(in.Query)
	for _, w := range strings.Fields(in.Query) {
		if n != nil || err != nil {
			break
		}
		n, err = try(w)
	}
	if n == nil || err != nil {
		return nil, nil, err
	}
	_, nb, err := h.Neighbors(ctx, fmt.Sprint(n.ID), in.Depth, in.Limit)
	return n, nb, err
}

func (s *Server) addNode(ctx context.Context, req *sdk.CallToolRequest, in AddNodeInput) (*sdk.CallToolResult, NodeOutput, error) {
	var out NodeOutput
	h, _, err := s.hierarchy(ctx, req, in.Collection)
	if err != nil {
		return nil, out, err
	}
	if len(in.Triggers) > hierarchy.MaxTriggers {
		return nil, out, fmt.Errorf("%w: at most %d triggers per node, got %d", quarry.ErrInvalid, hierarchy.MaxTriggers, len(in.Triggers))
	}
	n, err := h.AddNode(ctx, in.Parent, in.Name, in.Triggers)
	if err != nil {
		return nil, out, err
	}
	out.Node = n
	return textResult("Added %s (node %d).", n.Path, n.ID), out, nil
}

func (s *Server) addChunks(ctx context.Context, req *sdk.CallToolRequest, in AddChunksInput) (*sdk.CallToolResult, AddChunksOutput, error) {
	var out AddChunksOutput
	h, sc, err := s.hierarchy(ctx, req, in.Collection)
	if err != nil {
		return nil, out, err
	}
	if len(in.Chunks)+len(in.IDs) == 0 {
		return nil, out, fmt.Errorf("%w: give chunks (new texts) or ids (stored passages)", quarry.ErrInvalid)
	}
	if len(in.Chunks) > quarry.MaxDocuments {
		return nil, out, fmt.Errorf("%w: at most %d chunks per call, got %d", quarry.ErrInvalid, quarry.MaxDocuments, len(in.Chunks))
	}
	if _, err := h.Node(ctx, in.Node); err != nil { // before anything is stored
		return nil, out, err
	}
	ids := append([]string(nil), in.IDs...)
	if len(in.Chunks) > 0 {
		docs, err := quarry.Documents("chunks", in.Chunks)
		if err != nil {
			return nil, out, err
		}
		if err := ingest.Add(ctx, h.Collection(), s.kb.Embedder(), docs, sc.Filter); err != nil {
			return nil, out, err
		}
		for _, d := range docs {
			ids = append(ids, d.ID)
		}
	}
	n, err := h.AttachChunks(ctx, in.Node, ids)
	if err != nil {
		return nil, out, err
	}
	out.Node, out.IDs = n, ids
	return textResult("Placed %s under %s.", count(len(ids), "passage"), n.Path), out, nil
}

func (s *Server) rebuildLinks(ctx context.Context, req *sdk.CallToolRequest, in LinkGraphInput) (*sdk.CallToolResult, hierarchy.LinkReport, error) {
	h, _, err := s.hierarchy(ctx, req, in.Collection)
	if err != nil {
		return nil, hierarchy.LinkReport{}, err
	}
	rep, err := h.RebuildLinks(ctx)
	if err != nil {
		return nil, rep, err
	}
	return textResult("Rebuilt %s: %d tag_overlap, %d cross_ref.", count(rep.Total, "link"), rep.TagOverlap, rep.CrossRef), rep, nil
}

func (s *Server) removeNode(ctx context.Context, req *sdk.CallToolRequest, in NodeInput) (*sdk.CallToolResult, RemoveNodeOutput, error) {
	var out RemoveNodeOutput
	h, _, err := s.hierarchy(ctx, req, in.Collection)
	if err != nil {
		return nil, out, err
	}
	n, err := h.RemoveNode(ctx, in.Node)
	if err != nil {
		return nil, out, err
	}
	out.Removed = n
	return textResult("Removed %s.", count(n, "node")), out, nil
}

func (s *Server) renameNode(ctx context.Context, req *sdk.CallToolRequest, in RenameNodeInput) (*sdk.CallToolResult, NodeOutput, error) {
	var out NodeOutput
	h, _, err := s.hierarchy(ctx, req, in.Collection)
	if err != nil {
		return nil, out, err
	}
	n, err := h.RenameNode(ctx, in.Node, in.Name)
	if err != nil {
		return nil, out, err
	}
	out.Node = n
	return textResult("Renamed to %s.", n.Path), out, nil
}
