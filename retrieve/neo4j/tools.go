package neo4j

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/quarry-rag/quarry/agent"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/llm"
)

// Tool names the agent and MCP offer.
const (
	ToolTemplate  = "cypher_template"
	ToolSchema    = "graph_schema"
	ToolPlugins   = "verify_graph_plugins"
	ToolTemplates = "list_cypher_templates"
)

// Tools are the graph's tools for an agent's model: running a template
// (its rows as passages under scope), listing the templates, and, with
// schema, the graph's labels and relationship types and its plugins.
// schema is for callers who may see the whole graph's shape.
func (g *Graph) Tools(scope filter.Expr, schema bool) []agent.Tool {
	out := []agent.Tool{templateTool{g, scope}, infoTool{ToolTemplates, "List the named Cypher templates the graph can run, with their parameters.",
		func(context.Context) (any, error) { return g.Templates, nil }}}
	if schema {
		out = append(out,
			infoTool{ToolSchema, "The knowledge graph's node labels and relationship types.", func(ctx context.Context) (any, error) { return g.Schema(ctx) }},
			infoTool{ToolPlugins, "Whether the graph has the APOC and Graph Data Science plugins: {apoc, gds, ok, detail}.", func(ctx context.Context) (any, error) { return g.VerifyPlugins(ctx) }})
	}
	return out
}

type templateTool struct {
	g     *Graph
	scope filter.Expr
}

func (t templateTool) Definition() llm.Tool {
	names := make([]string, len(t.g.Templates))
	var desc string
	for i, tp := range t.g.Templates {
		names[i] = tp.Name
		desc += fmt.Sprintf("\n- %s(%s): %s", tp.Name, paramList(tp), tp.Description)
	}
	enum, _ := json.Marshal(names)
	return llm.Tool{Name: ToolTemplate, Description: "Run a named Cypher template on the knowledge graph; its rows come back as passages. Templates:" + desc,
		Parameters: json.RawMessage(`{"type":"object","properties":{"template":{"type":"string","enum":` + string(enum) +
			`},"arguments":{"type":"object","description":"the template's parameters by name"}},"required":["template"],"additionalProperties":false}`)}
}

func paramList(t Template) string {
	s := ""
	for i, p := range t.Params {
		if i > 0 {
			s += ", "
		}
		s += p.Name + " " + p.Type
		if !p.Required {
			s += "?"
		}
	}
	return s
}

func (t templateTool) Call(ctx context.Context, args json.RawMessage) (agent.Found, error) {
	var a struct {
		Template  string         `json:"template"`
		Arguments map[string]any `json:"arguments"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return agent.Found{}, fmt.Errorf("arguments: %w", err)
	}
	docs, err := t.g.Run(ctx, a.Template, a.Arguments, t.scope)
	if err != nil {
		return agent.Found{}, err
	}
	return agent.Found{Passages: docs, Text: fmt.Sprintf("%d rows", len(docs))}, nil
}

type infoTool struct {
	name, desc string
	get        func(context.Context) (any, error)
}

func (t infoTool) Definition() llm.Tool {
	return llm.Tool{Name: t.name, Description: t.desc, Parameters: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)}
}

func (t infoTool) Call(ctx context.Context, _ json.RawMessage) (agent.Found, error) {
	v, err := t.get(ctx)
	if err != nil {
		return agent.Found{}, err
	}
	b, err := json.Marshal(v)
	return agent.Found{Text: string(b)}, err
}
