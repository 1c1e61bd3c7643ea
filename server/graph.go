package server

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/quarry-rag/quarry/keys"
	"github.com/quarry-rag/quarry/retrieve/neo4j"
)

// GraphTemplates lists the knowledge graph's Cypher templates.
type GraphTemplates struct {
	Templates []neo4j.Template `json:"templates"`
}

// GraphSchema is the graph's labels and relationship types.
type GraphSchema = neo4j.GraphSchema

// GraphPlugins says whether the graph has APOC and GDS.
type GraphPlugins = neo4j.Plugins

// GraphRunBody runs a template.
type GraphRunBody struct {
	Arguments map[string]any `json:"arguments,omitempty" doc:"The template's parameters by name: values only, never Cypher"`
}

// GraphRows are a template's rows as passages.
type GraphRows struct {
	Results []Passage `json:"results"`
}

type graphRunInput struct {
	Template string `path:"template" maxLength:"64"`
	Body     GraphRunBody
}

// registerGraph adds the knowledge graph's endpoints.
func (s *Server) registerGraph(op func(id, method, path, summary string, tags ...string) huma.Operation) {
	huma.Register(s.api, op("list-graph-templates", http.MethodGet, "/v1/graph/templates", "List the knowledge graph's Cypher templates", "graph"), s.graphTemplates)
	huma.Register(s.api, op("graph-schema", http.MethodGet, "/v1/graph/schema", "The knowledge graph's labels and relationship types", "graph"), s.graphSchema)
	huma.Register(s.api, op("graph-plugins", http.MethodGet, "/v1/graph/plugins", "Whether the knowledge graph has APOC and GDS", "graph"), s.graphPlugins)
	huma.Register(s.api, op("run-graph-template", http.MethodPost, "/v1/graph/templates/{template}/run", "Run a Cypher template; its rows as passages", "graph"), s.runGraphTemplate)
}

func (s *Server) graphTemplates(ctx context.Context, _ *struct{}) (*body[GraphTemplates], error) {
	p, err := s.authorize(ctx, keys.PermRead, "")
	if err != nil {
		return nil, err
	}
	ts, err := s.kb.GraphTemplates(s.scope(p))
	if err != nil {
		return nil, s.fromLibrary(err)
	}
	return &body[GraphTemplates]{Body: GraphTemplates{Templates: ts}}, nil
}

func (s *Server) graphSchema(ctx context.Context, _ *struct{}) (*body[GraphSchema], error) {
	p, err := s.authorize(ctx, keys.PermRead, "")
	if err != nil {
		return nil, err
	}
	gs, err := s.kb.GraphSchema(ctx, s.scope(p))
	if err != nil {
		return nil, s.fromLibrary(err)
	}
	return &body[GraphSchema]{Body: gs}, nil
}

func (s *Server) graphPlugins(ctx context.Context, _ *struct{}) (*body[GraphPlugins], error) {
	p, err := s.authorize(ctx, keys.PermRead, "")
	if err != nil {
		return nil, err
	}
	pl, err := s.kb.GraphPlugins(ctx, s.scope(p))
	if err != nil {
		return nil, s.fromLibrary(err)
	}
	return &body[GraphPlugins]{Body: pl}, nil
}

func (s *Server) runGraphTemplate(ctx context.Context, in *graphRunInput) (*body[GraphRows], error) {
	p, err := s.authorize(ctx, keys.PermRead, "")
	if err != nil {
		return nil, err
	}
	ps, err := s.kb.RunGraphTemplate(ctx, s.scope(p), in.Template, in.Body.Arguments)
	if err != nil {
		return nil, s.fromLibrary(err)
	}
	return &body[GraphRows]{Body: GraphRows{Results: ps}}, nil
}
