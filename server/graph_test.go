package server_test

import (
	"testing"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/keys"
	"github.com/quarry-rag/quarry/retrieve/neo4j"
	"github.com/quarry-rag/quarry/retrieve/neo4j/neo4jtest"
	"github.com/quarry-rag/quarry/server"
)

// TestGraphEndpoints: the graph's templates, schema and plugins, and a
// template's rows under the key's scope; the schema only for a key that
// reaches everything.
func TestGraphEndpoints(t *testing.T) {
	neo := neo4jtest.New(t, []string{"Product"}, []string{"RELATED_TO"}, []string{"apoc.path.expand"})
	tpl, err := neo4j.ParseTemplate("products", "// param: query string required words\n// text: text\n// id: id\n// metadata: tenant\nMATCH (p:Product) WHERE p.name CONTAINS $query RETURN p.id AS id, p.name AS text, p.tenant AS tenant")
	if err != nil {
		t.Fatal(err)
	}
	neo.Handle(tpl.Cypher, func(map[string]any) (neo4jtest.Answer, error) {
		return neo4jtest.Answer{Columns: []string{"id", "text", "tenant"}, Rows: [][]any{{"p1", "Acme kettle", "acme"}, {"p2", "Globex kettle", "globex"}}}, nil
	})
	g := &neo4j.Graph{Client: &neo4j.Client{URL: neo.URL, MaxRetries: -1}, Templates: []neo4j.Template{tpl}}
	f := newFixture(t, func(c *config) { c.kb = append(c.kb, quarry.WithGraph(g, "")) })
	admin := mustKey(t, f.keys, keys.Spec{Permission: keys.PermAdmin})
	acme := mustKey(t, f.keys, keys.Spec{Name: "acme", Permission: keys.PermRead, Filter: "tenant = 'acme'"})

	r := f.do(t, "GET", "/v1/graph/templates", acme, nil)
	expect(t, "templates", r, 200, "")
	if ts, _ := r.body["templates"].([]any); len(ts) != 1 {
		t.Errorf("templates %s", r.raw)
	}
	expect(t, "schema", f.do(t, "GET", "/v1/graph/schema", admin, nil), 200, "")
	expect(t, "plugins", f.do(t, "GET", "/v1/graph/plugins", admin, nil), 200, "")
	expect(t, "schema, scoped key", f.do(t, "GET", "/v1/graph/schema", acme, nil), 403, server.CodeForbidden)
	run := f.do(t, "POST", "/v1/graph/templates/products/run", acme, map[string]any{"arguments": map[string]any{"query": "kettle"}})
	expect(t, "run", run, 200, "")
	if rs := results(run); len(rs) != 1 || rs[0]["text"] != "Acme kettle" {
		t.Errorf("scoped rows %s", run.raw)
	}
	expect(t, "run, undeclared parameter", f.do(t, "POST", "/v1/graph/templates/products/run", admin,
		map[string]any{"arguments": map[string]any{"query": "x", "cypher": "MATCH (n) DELETE n"}}), 400, server.CodeInvalidRequest)
}
