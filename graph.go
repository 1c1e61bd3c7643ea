package quarry

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/quarry-rag/quarry/config"
	"github.com/quarry-rag/quarry/retrieve"
	"github.com/quarry-rag/quarry/retrieve/neo4j"
)

// ErrNoGraph is returned by the graph operations of a knowledge base with
// no graph configured.
var ErrNoGraph = invalid(errors.New("no knowledge graph is configured: set [graph] url and templates in config.toml"))

// WithGraph searches a Neo4j knowledge graph beside the knowledge base: the
// agent gets its templates as tools, and search names the template every
// answer also searches with the question (empty for none). It replaces the
// [graph] settings.
func WithGraph(g *neo4j.Graph, search string) Option {
	return func(o *options) { o.graph, o.graphSearch = g, &search }
}

// openGraph is the configured graph, nil when none.
func openGraph(dir string, c config.Graph) (*neo4j.Graph, error) {
	if c.URL == "" {
		return nil, nil
	}
	tdir := c.Templates
	if !filepath.IsAbs(tdir) && dir != "" {
		tdir = filepath.Join(dir, tdir)
	}
	ts, err := neo4j.LoadTemplates(tdir)
	if err != nil {
		return nil, fmt.Errorf("graph: %w", err)
	}
	g := &neo4j.Graph{Client: &neo4j.Client{URL: c.URL, Database: c.Database, User: c.User}, Templates: ts}
	if c.Search != "" {
		t, ok := g.Template(c.Search)
		if !ok {
			return nil, fmt.Errorf("graph: search template %q is not among the templates in %s", c.Search, tdir)
		}
		if !hasParam(t, "query") {
			return nil, fmt.Errorf("graph: search template %q declares no query parameter for the question", c.Search)
		}
	}
	return g, nil
}

func hasParam(t neo4j.Template, name string) bool {
	for _, p := range t.Params {
		if p.Name == name {
			return true
		}
	}
	return false
}

// graphRetriever is the graph's search for every answer, nil when the
// graph has no search template.
func (kb *KB) graphRetriever() retrieve.Retriever {
	if kb.graph == nil || kb.graphSearch == "" {
		return nil
	}
	return &neo4j.Retriever{Graph: kb.graph, Template: kb.graphSearch}
}

// Graph is the knowledge graph, nil when none is configured.
func (kb *KB) Graph() *neo4j.Graph { return kb.graph }

// graphFor checks that the caller may use the graph: any caller but one
// limited to profiles; its schema and plugins, which describe the whole
// graph, only callers that reach every document.
func (kb *KB) graphFor(sc Scope, whole bool) (*neo4j.Graph, error) {
	if kb.graph == nil {
		return nil, ErrNoGraph
	}
	if len(sc.Profiles) > 0 {
		return nil, fmt.Errorf("%w: this caller may only search and ask through its profiles", ErrForbidden)
	}
	if whole && !sc.MayReachAll() {
		return nil, fmt.Errorf("%w: the graph's schema describes all of it, which this caller's scope does not reach", ErrForbidden)
	}
	return kb.graph, nil
}

// GraphTemplates lists the graph's Cypher templates.
func (kb *KB) GraphTemplates(sc Scope) ([]neo4j.Template, error) {
	g, err := kb.graphFor(sc, false)
	if err != nil {
		return nil, err
	}
	return g.Templates, nil
}

// GraphSchema is the graph's labels and relationship types, for callers
// that reach every document.
func (kb *KB) GraphSchema(ctx context.Context, sc Scope) (neo4j.GraphSchema, error) {
	g, err := kb.graphFor(sc, true)
	if err != nil {
		return neo4j.GraphSchema{}, err
	}
	return g.Schema(ctx)
}

// GraphPlugins says whether the graph has APOC and GDS, for callers that
// reach every document.
func (kb *KB) GraphPlugins(ctx context.Context, sc Scope) (neo4j.Plugins, error) {
	g, err := kb.graphFor(sc, true)
	if err != nil {
		return neo4j.Plugins{}, err
	}
	return g.VerifyPlugins(ctx)
}

// RunGraphTemplate runs a template with the arguments (checked against its
// parameters) and returns its rows as passages under the caller's scope.
func (kb *KB) RunGraphTemplate(ctx context.Context, sc Scope, name string, args map[string]any) ([]Passage, error) {
	g, err := kb.graphFor(sc, false)
	if err != nil {
		return nil, err
	}
	t, ok := g.Template(name)
	if !ok {
		return nil, invalid(fmt.Errorf("no graph template %q (list them with list_cypher_templates)", name))
	}
	if _, err := t.Args(args); err != nil {
		return nil, invalid(err)
	}
	docs, err := g.Run(ctx, name, args, sc.Filter)
	if err != nil {
		return nil, fmt.Errorf("graph template %s: %w", name, err)
	}
	out := make([]Passage, len(docs))
	for i, d := range docs {
		out[i] = PassageOf(i+1, d)
	}
	return out, nil
}
