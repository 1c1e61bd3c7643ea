package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/retrieve/neo4j"
	"github.com/quarry-rag/quarry/retrieve/neo4j/neo4jtest"
)

// TestGraph: config.toml's [graph] opens the graph; quarry graph lists its
// templates and runs one, and every answer also searches it with the
// search template.
func TestGraph(t *testing.T) {
	t.Setenv("QUARRY_LLM", "")
	kb := ingestCorpus(t)
	const src = "// description: Product notes by words\n// param: query string required words\n// param: limit integer how many\n// text: text\n// id: id\n" +
		"CALL db.index.fulltext.queryNodes('notes', $query) YIELD node RETURN node.id AS id, node.text AS text LIMIT coalesce($limit, 10)"
	if err := os.MkdirAll(filepath.Join(kb, "cypher"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(kb, "cypher", "notes.cypher"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	tpl, err := neo4j.ParseTemplate("notes", src)
	if err != nil {
		t.Fatal(err)
	}
	neo := neo4jtest.New(t, []string{"Note"}, nil, nil)
	neo.User, neo.Password = "neo4j", "pw"
	t.Setenv("NEO4J_PASSWORD", "pw")
	neo.Handle(tpl.Cypher, func(map[string]any) (neo4jtest.Answer, error) {
		return neo4jtest.Answer{Columns: []string{"id", "text"}, Rows: [][]any{{"n1", "Gift cards bought in the sale are refunded as vouchers."}}}, nil
	})
	cfg, err := os.ReadFile(filepath.Join(kb, "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(cfg), "\nurl = \"\"", "\nurl = \""+neo.URL+"\"", 1)
	s = strings.Replace(s, "\nsearch = \"\"", "\nsearch = \"notes\"", 1)
	if err := os.WriteFile(filepath.Join(kb, "config.toml"), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "", "graph", "templates", "--kb", kb)
	if code != 0 || !strings.Contains(out, "notes: Product notes by words") || !strings.Contains(out, "query string (required)") {
		t.Fatalf("graph templates: %d %q %q", code, out, errOut)
	}
	code, out, errOut = run(t, "", "graph", "run", "notes", "--arg", "query=gift cards", "--arg", "limit=2", "--kb", kb)
	if code != 0 || !strings.Contains(out, "refunded as vouchers") {
		t.Errorf("graph run: %d %q %q", code, out, errOut)
	}
	if code, _, errOut = run(t, "", "graph", "run", "notes", "--arg", "cypher=MATCH (n) DELETE n", "--kb", kb); code != 2 || !strings.Contains(errOut, "no parameter") {
		t.Errorf("an undeclared parameter: %d %q", code, errOut)
	}
	code, out, errOut = run(t, "", "ask", "Are gift cards from the sale refunded?", "--kb", kb, "-k", "10", "--json")
	if code != 0 || strings.Contains(out, "sourceErrors") {
		t.Errorf("ask with the graph beside: %d %q %q", code, out, errOut)
	}
	asked := false
	for _, st := range neo.Received() {
		asked = asked || st.Parameters["query"] == "Are gift cards from the sale refunded?"
	}
	if !asked {
		t.Errorf("the answer did not search the graph: %+v", neo.Received())
	}
}
