package mcp_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed/hash"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/hierarchy"
	"github.com/quarry-rag/quarry/mcp"
	"github.com/quarry-rag/quarry/store"
)

func TestHierarchyTools(t *testing.T) {
	f := newFixture(t, false)
	cs := connect(t, f.srv)
	tools := toolNames(t, cs)
	for _, name := range []string{mcp.ToolTree, mcp.ToolHealth, mcp.ToolAddNode, mcp.ToolAddChunks, mcp.ToolLinkGraph,
		mcp.ToolRebuildLinks, mcp.ToolNeighbors, mcp.ToolRemoveNode, mcp.ToolRenameNode} {
		if tools[name] == nil || tools[name].InputSchema == nil {
			t.Errorf("tool %s missing or without an input schema", name)
		}
	}
	ingestCorpus(t, cs) // creates the default collection

	// Build a small hierarchy by hand: Java > Spring_Boot, and Kotlin.
	var java, spring, kotlin mcp.NodeOutput
	call(t, cs, mcp.ToolAddNode, map[string]any{"name": "Java", "triggers": []string{"java", "jvm"}}, &java)
	call(t, cs, mcp.ToolAddNode, map[string]any{"name": "Spring_Boot", "parent": "Java", "triggers": []string{"spring boot", "jvm"}}, &spring)
	call(t, cs, mcp.ToolAddNode, map[string]any{"name": "Kotlin", "triggers": []string{"kotlin", "jvm"}}, &kotlin)
	if spring.Node.Path != "/Root/Java/Spring_Boot" || spring.Node.Kind != store.NodeSpecialization || java.Node.Kind != store.NodeFundamental {
		t.Errorf("nodes: %+v %+v", java.Node, spring.Node)
	}
	var added mcp.AddChunksOutput
	call(t, cs, mcp.ToolAddChunks, map[string]any{"node": "/Root/Java/Spring_Boot", "chunks": []map[string]any{
		{"text": "Spring Boot starters pull in the dependencies of a feature.", "source": "spring.md"},
		{"text": "Actuator endpoints report the health of a Spring Boot service.", "source": "spring.md"},
	}}, &added)
	if len(added.IDs) != 2 {
		t.Fatalf("add chunks: %+v", added)
	}
	res := callRaw(t, cs, mcp.ToolAddChunks, map[string]any{"node": "Kotlin", "ids": []string{"no-such-id"}})
	if !res.IsError || !strings.Contains(text(res), "no-such-id") {
		t.Errorf("attaching an unknown chunk: %s", text(res))
	}

	var tree mcp.TreeOutput
	res = call(t, cs, mcp.ToolTree, map[string]any{}, &tree)
	if len(tree.Nodes) != 4 || tree.Nodes[0].Path != "/Root" || tree.Nodes[0].Total != 4 || !strings.Contains(text(res), "Spring_Boot  (2 chunks)") {
		t.Errorf("tree: %+v\n%s", tree, text(res))
	}

	var lr hierarchy.LinkReport
	call(t, cs, mcp.ToolRebuildLinks, map[string]any{}, &lr)
	if lr.TagOverlap != 3 || lr.Total != 3 {
		t.Errorf("rebuild: %+v", lr)
	}
	var graph mcp.LinkGraphOutput
	res = call(t, cs, mcp.ToolLinkGraph, map[string]any{}, &graph)
	if len(graph.Links) != 3 || !strings.Contains(text(res), "--[tag_overlap, w=") || !strings.Contains(text(res), "evidence: jvm") {
		t.Errorf("graph: %+v\n%s", graph, text(res))
	}

	// The seed's neighbours case: an unknown query gives no node.
	var nb mcp.NeighborsOutput
	call(t, cs, mcp.ToolNeighbors, map[string]any{"query": "zzz"}, &nb)
	if nb.Node != nil || len(nb.Neighbors) != 0 {
		t.Errorf("zzz: %+v", nb)
	}
	call(t, cs, mcp.ToolNeighbors, map[string]any{"query": "Spring Boot", "depth": 1}, &nb)
	if nb.Node == nil || nb.Node.Name != "Spring_Boot" || len(nb.Neighbors) != 2 {
		t.Errorf("neighbours of a trigger: %+v", nb)
	}
	call(t, cs, mcp.ToolNeighbors, map[string]any{"query": "tell me about kotlin"}, &nb) // single words
	if nb.Node == nil || nb.Node.Name != "Kotlin" {
		t.Errorf("neighbours by a word: %+v", nb)
	}

	var renamed mcp.NodeOutput
	call(t, cs, mcp.ToolRenameNode, map[string]any{"node": "Java", "name": "JVM"}, &renamed)
	call(t, cs, mcp.ToolTree, map[string]any{}, &tree)
	if renamed.Node.Path != "/Root/JVM" || tree.Nodes[1].Path != "/Root/JVM" || tree.Nodes[2].Path != "/Root/JVM/Spring_Boot" {
		t.Errorf("rename: %+v %+v", renamed, tree.Nodes)
	}

	var health hierarchy.Report
	call(t, cs, mcp.ToolHealth, map[string]any{}, &health)
	if !health.OK || health.Finding(hierarchy.CheckOrphanNodes) == nil {
		t.Errorf("health: %+v", health)
	}

	var removed mcp.RemoveNodeOutput
	call(t, cs, mcp.ToolRemoveNode, map[string]any{"node": "/Root/JVM"}, &removed)
	if removed.Removed != 2 {
		t.Errorf("remove: %+v", removed)
	}
	res = callRaw(t, cs, mcp.ToolRemoveNode, map[string]any{"node": "/Root"})
	if !res.IsError {
		t.Errorf("removing the root was allowed")
	}
}

func TestHierarchyToolsReadOnly(t *testing.T) {
	f := newFixture(t, true)
	cs := connect(t, f.srv)
	tools := toolNames(t, cs)
	for _, name := range []string{mcp.ToolTree, mcp.ToolHealth, mcp.ToolLinkGraph, mcp.ToolNeighbors} {
		if tools[name] == nil {
			t.Errorf("read-only server lacks %s", name)
		}
	}
	for _, name := range []string{mcp.ToolAddNode, mcp.ToolAddChunks, mcp.ToolRebuildLinks, mcp.ToolRemoveNode, mcp.ToolRenameNode} {
		if tools[name] != nil {
			t.Errorf("read-only server offers %s", name)
		}
	}
}

// A client limited by a filter reaches no hierarchy tool: nodes count and
// name documents of every tenant.
func TestHierarchyToolsRefuseFilterScopes(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	emb, _ := hash.New(hash.Config{})
	schema, _ := document.NewSchema(document.Field{Name: "tenant", Type: document.TypeString, Filterable: true})
	if _, err := st.CreateCollection(ctx, store.CollectionConfig{Name: "kb", Schema: schema, Model: emb.Model()}); err != nil {
		t.Fatal(err)
	}
	srv, err := mcp.New(mcp.Config{KB: newKB(t, st, emb, "kb"), ReadOnly: true,
		Scope: mcp.Scope{Filter: filter.Eq("tenant", "acme")}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cs := connect(t, srv)
	for name, args := range map[string]map[string]any{mcp.ToolTree: {}, mcp.ToolHealth: {}, mcp.ToolLinkGraph: {}, mcp.ToolNeighbors: {"query": "x"}} {
		res := callRaw(t, cs, name, args)
		if !res.IsError || !strings.Contains(text(res), "filter") {
			t.Errorf("%s under a filter scope: %s", name, text(res))
		}
	}
}
