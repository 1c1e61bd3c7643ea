package neo4j_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/agent"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/llm"
	"github.com/quarry-rag/quarry/quarrytest"
	"github.com/quarry-rag/quarry/retrieve"
	"github.com/quarry-rag/quarry/retrieve/neo4j"
	"github.com/quarry-rag/quarry/retrieve/neo4j/neo4jtest"
	"github.com/quarry-rag/quarry/retrieve/sourcetest"
)

// products is the fake's graph: what the two shipped templates return.
var products = []struct{ id, name, desc, category string }{
	{"p1", "Kettle", "boils water in two minutes", "kitchen"},
	{"p2", "Teapot", "brews loose tea", "kitchen"},
	{"p3", "Drill", "drills holes in walls", "tools"},
}

func fakeGraph(t *testing.T) (*neo4jtest.Server, *neo4j.Graph) {
	t.Helper()
	srv := neo4jtest.New(t, []string{"Category", "Product"}, []string{"IN_CATEGORY", "RELATED_TO"}, []string{"apoc.meta.schema", "apoc.path.expand"})
	srv.User, srv.Password = "neo4j", "secret"
	ts, err := neo4j.LoadTemplates("testdata/templates")
	if err != nil {
		t.Fatal(err)
	}
	g := &neo4j.Graph{Client: &neo4j.Client{URL: srv.URL, User: "neo4j", Password: "secret", MaxRetries: -1}, Templates: ts}
	search, _ := g.Template("search_products")
	srv.Handle(search.Cypher, func(p map[string]any) (neo4jtest.Answer, error) {
		q, _ := p["query"].(string)
		a := neo4jtest.Answer{Columns: []string{"id", "name", "text", "category", "score"}}
		for _, x := range products {
			if strings.Contains(strings.ToLower(x.name+" "+x.desc), strings.ToLower(q)) {
				a.Rows = append(a.Rows, []any{x.id, x.name, x.name + ": " + x.desc, x.category, 1.0})
			}
		}
		return a, nil
	})
	related, _ := g.Template("related_products")
	srv.Handle(related.Cypher, func(p map[string]any) (neo4jtest.Answer, error) {
		if p["name"] != "Kettle" {
			return neo4jtest.Answer{Columns: []string{"id", "name", "description", "category"}}, nil
		}
		return neo4jtest.Answer{Columns: []string{"id", "name", "description", "category"},
			Rows: [][]any{{"p2", "Teapot", "Teapot: brews loose tea (bought together)", "kitchen"}}}, nil
	})
	return srv, g
}

func TestTemplates(t *testing.T) {
	ts, err := neo4j.LoadTemplates("testdata/templates")
	if err != nil || len(ts) != 2 || ts[0].Name != "related_products" {
		t.Fatalf("%+v %v", ts, err)
	}
	r := ts[0]
	if len(r.Params) != 2 || !r.Params[0].Required || r.Params[1].Type != "integer" || r.Text != "description" || r.Metadata[0] != "category" {
		t.Errorf("related_products: %+v", r)
	}
	var schema map[string]any
	if err := json.Unmarshal(r.Schema(), &schema); err != nil || schema["additionalProperties"] != false || fmt.Sprint(schema["required"]) != "[name]" {
		t.Errorf("schema %s", r.Schema())
	}
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{}, "required"},
		{map[string]any{"name": 3.0}, "want a string"},
		{map[string]any{"name": "Kettle", "limit": 2.5}, "want an integer"},
		{map[string]any{"name": "Kettle", "cypher": "MATCH (n) DETACH DELETE n"}, "no parameter"},
		{map[string]any{"name": strings.Repeat("x", 2000)}, "longer than"},
	} {
		if _, err := r.Args(c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
	args, err := r.Args(map[string]any{"name": "Kettle"})
	if err != nil || args["limit"] != nil || args["name"] != "Kettle" {
		t.Errorf("args %v %v", args, err)
	}
	for name, src := range map[string]string{
		"no text":        "// param: q string required x\nMATCH (n) WHERE n.name = $q RETURN n.name AS name",
		"unused param":   "// text: t\n// param: q string x\nMATCH (n) RETURN n.name AS t",
		"bad type":       "// text: t\n// param: q map x\nMATCH (n) WHERE n = $q RETURN n.name AS t",
		"no query":       "// text: t\n",
		"Bad-Name.upper": "// text: t\nRETURN 1 AS t",
	} {
		n := "ok"
		if strings.Contains(name, "-") {
			n = name
		}
		if _, err := neo4j.ParseTemplate(n, src); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

// TestRun: a template's rows become passages with the declared columns,
// its arguments go as parameters (the query text the server receives is
// the template's, whatever a value holds), and a scope on a metadata
// column it keeps is honoured.
func TestRun(t *testing.T) {
	srv, g := fakeGraph(t)
	ctx := context.Background()
	docs, err := g.Run(ctx, "related_products", map[string]any{"name": "Kettle"}, nil)
	if err != nil || len(docs) != 1 {
		t.Fatalf("%v %v", docs, err)
	}
	d := docs[0]
	if d.ID != "neo4j:related_products:p2" || d.SourceType != neo4j.SourceGraph || d.SourceName != "related_products/Teapot" ||
		!strings.Contains(d.Content, "bought together") || d.Metadata["category"] != "kitchen" {
		t.Errorf("passage %+v", d)
	}
	evil := "Kettle'}) DETACH DELETE p //"
	if _, err := g.Run(ctx, "related_products", map[string]any{"name": evil}, nil); err != nil {
		t.Fatal(err)
	}
	rel, _ := g.Template("related_products")
	last := srv.Received()[len(srv.Received())-1]
	if last.Statement != rel.Cypher || last.Parameters["name"] != evil {
		t.Errorf("the server received %+v", last)
	}
	docs, err = g.Run(ctx, "search_products", map[string]any{"query": "e"}, filter.Eq("category", "tools"))
	if err != nil || len(docs) != 1 || docs[0].Metadata["category"] != "tools" {
		t.Errorf("scoped: %v %v", docs, err)
	}
	if _, err := g.Run(ctx, "nope", nil, nil); err == nil {
		t.Error("an unknown template ran")
	}
	bad := &neo4j.Graph{Client: &neo4j.Client{URL: srv.URL, User: "neo4j", Password: "wrong", MaxRetries: -1}, Templates: g.Templates}
	if _, err := bad.Run(ctx, "related_products", map[string]any{"name": "Kettle"}, nil); err == nil {
		t.Error("a wrong password was accepted")
	}
	var ne *neo4j.Error
	if _, err := g.Client.Run(ctx, "MATCH (n) RETURN n", nil); !errors.As(err, &ne) || ne.Code != "Neo.ClientError.Statement.SyntaxError" {
		t.Errorf("an error in the body of a 200: %v", err)
	}
}

func TestSchemaAndPlugins(t *testing.T) {
	_, g := fakeGraph(t)
	ctx := context.Background()
	s, err := g.Schema(ctx)
	if err != nil || fmt.Sprint(s.Labels) != "[Category Product]" || fmt.Sprint(s.RelationshipTypes) != "[IN_CATEGORY RELATED_TO]" {
		t.Errorf("schema %+v %v", s, err)
	}
	p, err := g.VerifyPlugins(ctx)
	if err != nil || !p.APOC || p.GDS || p.OK || !strings.Contains(p.Detail, "2 APOC and 0 GDS") {
		t.Errorf("plugins %+v %v", p, err)
	}
}

// TestSourceContract: the search template as a retrieval source.
func TestSourceContract(t *testing.T) {
	ts, err := neo4j.LoadTemplates("testdata/templates")
	if err != nil {
		t.Fatal(err)
	}
	search := ts[1]
	sourcetest.Run(t, sourcetest.Source{
		SourceType: neo4j.SourceGraph,
		New: func(u string) retrieve.Retriever {
			return &neo4j.Retriever{Graph: &neo4j.Graph{Client: &neo4j.Client{URL: u, MaxRetries: -1}, Templates: ts}, Template: "search_products"}
		},
		Names: func(r sourcetest.Result) (string, string) {
			return "neo4j:search_products:" + r.URL, "search_products/" + r.Title
		},
		Serve: func(t *testing.T, w http.ResponseWriter, r *http.Request, rs []sourcetest.Result) {
			var body struct {
				Statements []struct {
					Statement  string         `json:"statement"`
					Parameters map[string]any `json:"parameters"`
				} `json:"statements"`
			}
			if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body.Statements) != 1 || body.Statements[0].Statement != search.Cypher ||
				r.URL.Path != "/db/neo4j/tx/commit" {
				t.Errorf("request %s %+v %v", r.URL.Path, body, err)
			}
			limit := int(body.Statements[0].Parameters["limit"].(float64))
			var data []any
			for _, x := range rs[:min(limit, len(rs))] {
				data = append(data, map[string]any{"row": []any{x.URL, x.Title, x.Title + ": " + x.Text, nil, 1.0}, "meta": []any{nil, nil, nil, nil, nil}})
			}
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"results": []any{map[string]any{"columns": []string{"id", "name", "text", "category", "score"}, "data": data}}, "errors": []any{}})
		},
	})
}

// TestAgentTools: the model plans with the templates and the schema,
// runs a template, and its rows are gathered as passages under the scope.
func TestAgentTools(t *testing.T) {
	_, g := fakeGraph(t)
	calls := [][]llm.ToolCall{
		{{ID: "a", Name: neo4j.ToolTemplates, Arguments: json.RawMessage(`{}`)}, {ID: "b", Name: neo4j.ToolSchema, Arguments: json.RawMessage(`{}`)}},
		{{ID: "c", Name: neo4j.ToolTemplate, Arguments: json.RawMessage(`{"template":"related_products","arguments":{"name":"Kettle"}}`)},
			{ID: "d", Name: neo4j.ToolTemplate, Arguments: json.RawMessage(`{"template":"related_products","arguments":{"name":"Kettle","cypher":"MATCH (n) DELETE n"}}`)}},
	}
	round := 0
	m := &quarrytest.ChatModel{Respond: func(req llm.Request) (llm.Response, error) {
		switch {
		case req.Schema != nil && req.Schema.Name == "triage":
			return llm.Response{Text: `{"kind":"lookup","aspects":["products related to the kettle"],"sources":[]}`}, nil
		case req.Schema != nil:
			return llm.Response{Text: `{"sufficient":true,"missing":"","next_query":""}`}, nil
		case round < len(calls):
			round++
			return llm.Response{ToolCalls: calls[round-1]}, nil
		}
		return llm.Response{Text: "DONE"}, nil
	}}
	web := &neo4j.Retriever{Graph: g, Template: "search_products"}
	a := &agent.Agent{Model: m, Sources: []agent.Source{{Name: "graph", Searcher: agent.Retrieving(web)}}, Tools: g.Tools(filter.Eq("category", "kitchen"), true), Budget: agent.Budget{Rounds: 3}}
	got, err := a.Gather(context.Background(), agent.Request{Question: "What goes with the kettle?"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Passages) != 1 || got.Passages[0].ID != "neo4j:related_products:p2" {
		t.Errorf("gathered %v", got.Passages)
	}
	var sawSchema, refused bool
	for _, r := range m.Requests() {
		for _, msg := range r.Messages {
			if msg.Role == llm.RoleTool && msg.ToolCallID == "b" && strings.Contains(msg.Content, "RELATED_TO") {
				sawSchema = true
			}
		}
	}
	for _, st := range got.Steps {
		if st.Result != nil && st.Result.ID == "d" && strings.Contains(st.Result.Error, "no parameter") {
			refused = true
		}
	}
	if !sawSchema || !refused {
		t.Errorf("schema shown %v, extra argument refused %v", sawSchema, refused)
	}
	// Under a scope the rows do not match, the template brings nothing.
	a.Tools = g.Tools(filter.Eq("category", "tools"), false)
	round = 1
	got, err = a.Gather(context.Background(), agent.Request{Question: "What goes with the kettle?"})
	if err != nil || len(got.Passages) != 0 {
		t.Errorf("scoped: %v %v", got.Passages, err)
	}
	for _, tl := range a.Tools {
		if tl.Definition().Name == neo4j.ToolSchema {
			t.Error("the schema tool offered without schema")
		}
	}
}
