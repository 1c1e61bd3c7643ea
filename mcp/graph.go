package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quarry-rag/quarry/retrieve/neo4j"
)

// Knowledge graph tool names, offered when the knowledge base has a graph.
const (
	ToolGraphSchema   = neo4j.ToolSchema
	ToolGraphPlugins  = neo4j.ToolPlugins
	ToolGraphList     = neo4j.ToolTemplates
	ToolGraphTemplate = neo4j.ToolTemplate
)

// GraphInput is the input of the graph tools that take none.
type GraphInput struct{}

// GraphTemplatesOutput lists the graph's Cypher templates.
type GraphTemplatesOutput struct {
	Templates []neo4j.Template `json:"templates"`
}

// GraphTemplateInput is the input of cypher_template.
type GraphTemplateInput struct {
	Template  string         `json:"template" jsonschema:"the template's name (see list_cypher_templates)"`
	Arguments map[string]any `json:"arguments,omitempty" jsonschema:"the template's parameters by name; values only, never Cypher"`
}

// GraphTemplateOutput is a template's rows as passages.
type GraphTemplateOutput struct {
	Results []Passage `json:"results"`
}

// addGraphTools registers the graph's tools when there is a graph.
func (s *Server) addGraphTools() {
	if s.kb.Graph() == nil {
		return
	}
	addTool(s, &sdk.Tool{Name: ToolGraphList, Annotations: readOnly("Cypher templates"),
		Description: "List the named Cypher templates the knowledge graph can run, each with its parameters, to plan a graph lookup."}, s.graphTemplates)
	addTool(s, &sdk.Tool{Name: ToolGraphSchema, Annotations: readOnly("Graph schema"),
		Description: "The knowledge graph's node labels and relationship types."}, s.graphSchema)
	addTool(s, &sdk.Tool{Name: ToolGraphPlugins, Annotations: readOnly("Graph plugins"),
		Description: "Whether the knowledge graph has the APOC and Graph Data Science plugins: {apoc, gds, ok, detail}."}, s.graphPlugins)
	addTool(s, &sdk.Tool{Name: ToolGraphTemplate, Annotations: readOnly("Run a Cypher template"),
		Description: "Run one of the knowledge graph's named Cypher templates with parameter values; its rows come back as passages to cite."}, s.graphTemplate)
}

func (s *Server) graphTemplates(ctx context.Context, req *sdk.CallToolRequest, _ GraphInput) (*sdk.CallToolResult, GraphTemplatesOutput, error) {
	sc, err := s.scope(ctx, req)
	if err != nil {
		return nil, GraphTemplatesOutput{}, err
	}
	ts, err := s.kb.GraphTemplates(sc)
	if err != nil {
		return nil, GraphTemplatesOutput{}, err
	}
	var b strings.Builder
	for _, t := range ts {
		b.WriteString(t.Describe())
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: b.String()}}}, GraphTemplatesOutput{Templates: ts}, nil
}

func (s *Server) graphSchema(ctx context.Context, req *sdk.CallToolRequest, _ GraphInput) (*sdk.CallToolResult, neo4j.GraphSchema, error) {
	sc, err := s.scope(ctx, req)
	if err != nil {
		return nil, neo4j.GraphSchema{}, err
	}
	gs, err := s.kb.GraphSchema(ctx, sc)
	if err != nil {
		return nil, gs, err
	}
	return jsonResult(gs), gs, nil
}

func (s *Server) graphPlugins(ctx context.Context, req *sdk.CallToolRequest, _ GraphInput) (*sdk.CallToolResult, neo4j.Plugins, error) {
	sc, err := s.scope(ctx, req)
	if err != nil {
		return nil, neo4j.Plugins{}, err
	}
	p, err := s.kb.GraphPlugins(ctx, sc)
	if err != nil {
		return nil, p, err
	}
	return jsonResult(p), p, nil
}

func (s *Server) graphTemplate(ctx context.Context, req *sdk.CallToolRequest, in GraphTemplateInput) (*sdk.CallToolResult, GraphTemplateOutput, error) {
	sc, err := s.scope(ctx, req)
	if err != nil {
		return nil, GraphTemplateOutput{}, err
	}
	ps, err := s.kb.RunGraphTemplate(ctx, sc, in.Template, in.Arguments)
	if err != nil {
		return nil, GraphTemplateOutput{}, err
	}
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "[%d] %s\n%s\n\n", p.Rank, p.Location, p.Text)
	}
	if len(ps) == 0 {
		b.WriteString("No rows.")
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: b.String()}}}, GraphTemplateOutput{Results: ps}, nil
}

func jsonResult(v any) *sdk.CallToolResult {
	b, _ := json.Marshal(v)
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}
}
