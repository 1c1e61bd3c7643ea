// Package neo4j retrieves from a Neo4j knowledge graph through named
// Cypher templates: queries an operator writes as files, each declaring
// its parameters and which columns make a passage. A request supplies
// parameter values only; they travel as Cypher parameters, checked against
// their declared types, and are never put into the query text.
//
// It speaks Neo4j's HTTP transactional API (POST /db/{database}/tx/commit,
// JSON statements with parameters). Besides running templates it reports
// the graph's schema (labels and relationship types) and whether the APOC
// and Graph Data Science plugins are installed, so an agent can plan.
//
// No Neo4j runs in Quarry's tests: they run against neo4jtest, a fake of
// the HTTP API's documented request and result format.
package neo4j

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/internal/httpx"
	"github.com/quarry-rag/quarry/retrieve"
)

// SourceGraph is the source type of graph passages.
const SourceGraph = "graph"

// Param is one declared parameter of a template.
type Param struct {
	Name string `json:"name"`
	// Type is string, integer, float, boolean or string[].
	Type        string `json:"type"`
	Required    bool   `json:"required,omitempty"`
	Description string `json:"description,omitempty"`
}

// Template is a named Cypher query whose rows become passages.
type Template struct {
	Name        string  `json:"name"`
	Description string  `json:"description,omitempty"`
	Params      []Param `json:"params"`
	// Cypher is the query; parameters appear in it as $name.
	Cypher string `json:"-"`
	// Text, ID and Source name the columns of a row that give a passage its
	// content, id and source name; Metadata the columns kept as metadata
	// (a scope on them is honoured).
	Text     string   `json:"-"`
	ID       string   `json:"-"`
	Source   string   `json:"-"`
	Metadata []string `json:"-"`
}

var (
	nameRE  = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
	paramRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)
	types   = []string{"string", "integer", "float", "boolean", "string[]"}
)

// LoadTemplates reads every *.cypher file of dir. A file's leading "//"
// comment lines declare the template: "description: …", "param: NAME TYPE
// [required] DESCRIPTION", "text: COLUMN", "id: COLUMN", "source: COLUMN",
// "metadata: COLUMN[, COLUMN…]"; the rest is the query. The file's name is
// the template's.
func LoadTemplates(dir string) ([]Template, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.cypher"))
	if err != nil {
		return nil, err
	}
	slices.Sort(paths)
	var out []Template
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("neo4j: template: %w", err)
		}
		t, err := ParseTemplate(strings.TrimSuffix(filepath.Base(p), ".cypher"), string(data))
		if err != nil {
			return nil, fmt.Errorf("neo4j: %s: %w", p, err)
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("neo4j: no *.cypher templates in %s", dir)
	}
	return out, nil
}

// ParseTemplate reads one template (see LoadTemplates).
func ParseTemplate(name, src string) (Template, error) {
	t := Template{Name: name}
	if !nameRE.MatchString(name) {
		return t, fmt.Errorf("template name %q: use lower-case letters, digits and _", name)
	}
	var body []string
	header := true
	sc := bufio.NewScanner(strings.NewReader(src))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if header && strings.HasPrefix(line, "//") {
			key, val, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "//")), ":")
			if !ok {
				continue
			}
			val = strings.TrimSpace(val)
			switch strings.TrimSpace(key) {
			case "description":
				t.Description = val
			case "param":
				p, err := parseParam(val)
				if err != nil {
					return t, err
				}
				t.Params = append(t.Params, p)
			case "text":
				t.Text = val
			case "id":
				t.ID = val
			case "source":
				t.Source = val
			case "metadata":
				for _, c := range strings.Split(val, ",") {
					if c = strings.TrimSpace(c); c != "" {
						t.Metadata = append(t.Metadata, c)
					}
				}
			}
			continue
		}
		if line != "" {
			header = false
		}
		body = append(body, sc.Text())
	}
	t.Cypher = strings.TrimSpace(strings.Join(body, "\n"))
	switch {
	case t.Cypher == "":
		return t, errors.New("the template has no query")
	case t.Text == "":
		return t, errors.New(`the template names no text column ("// text: COLUMN")`)
	}
	for _, p := range t.Params {
		if !strings.Contains(t.Cypher, "$"+p.Name) {
			return t, fmt.Errorf("parameter %s is declared but the query never uses $%s", p.Name, p.Name)
		}
	}
	return t, nil
}

func parseParam(s string) (Param, error) {
	f := strings.Fields(s)
	if len(f) < 2 {
		return Param{}, fmt.Errorf("param %q: give NAME TYPE [required] DESCRIPTION", s)
	}
	p := Param{Name: f[0], Type: f[1]}
	if !paramRE.MatchString(p.Name) {
		return p, fmt.Errorf("param name %q", p.Name)
	}
	if !slices.Contains(types, p.Type) {
		return p, fmt.Errorf("param %s: type %q: use %s", p.Name, p.Type, strings.Join(types, ", "))
	}
	rest := f[2:]
	if len(rest) > 0 && rest[0] == "required" {
		p.Required, rest = true, rest[1:]
	}
	p.Description = strings.Join(rest, " ")
	return p, nil
}

// Describe is the template for a person: its name and description, then
// a line per parameter ("  name type (required)  description").
func (t Template) Describe() string {
	var b strings.Builder
	b.WriteString(t.Name + ": " + t.Description + "\n")
	for _, p := range t.Params {
		req := ""
		if p.Required {
			req = " (required)"
		}
		fmt.Fprintf(&b, "  %s %s%s  %s\n", p.Name, p.Type, req, p.Description)
	}
	return b.String()
}

// Schema is the JSON schema of the template's arguments, for a model.
func (t Template) Schema() json.RawMessage {
	props := map[string]any{}
	var req []string
	for _, p := range t.Params {
		s := map[string]any{"description": p.Description}
		switch p.Type {
		case "string[]":
			s["type"], s["items"] = "array", map[string]any{"type": "string"}
		case "float":
			s["type"] = "number"
		default:
			s["type"] = p.Type
		}
		props[p.Name] = s
		if p.Required {
			req = append(req, p.Name)
		}
	}
	out := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(req) > 0 {
		out["required"] = req
	}
	b, _ := json.Marshal(out)
	return b
}

// Args checks arguments against the template's parameters: only declared
// names, each of its type, every required one present. The result is the
// statement's parameters, a declared but absent one as null.
func (t Template) Args(args map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(t.Params))
	for k := range args {
		if !slices.ContainsFunc(t.Params, func(p Param) bool { return p.Name == k }) {
			return nil, fmt.Errorf("template %s has no parameter %q", t.Name, k)
		}
	}
	for _, p := range t.Params {
		v, ok := args[p.Name]
		if !ok || v == nil {
			if p.Required {
				return nil, fmt.Errorf("template %s: parameter %s is required", t.Name, p.Name)
			}
			out[p.Name] = nil
			continue
		}
		cv, err := convert(p, v)
		if err != nil {
			return nil, fmt.Errorf("template %s: parameter %s: %w", t.Name, p.Name, err)
		}
		out[p.Name] = cv
	}
	return out, nil
}

// maxString bounds a string argument.
const maxString = 1000

func convert(p Param, v any) (any, error) {
	switch p.Type {
	case "string":
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("want a string, got %T", v)
		}
		if len(s) > maxString {
			return nil, fmt.Errorf("longer than %d bytes", maxString)
		}
		return s, nil
	case "integer":
		switch n := v.(type) {
		case float64:
			if n != math.Trunc(n) || math.Abs(n) > 1<<53 {
				return nil, fmt.Errorf("want an integer, got %v", n)
			}
			return int64(n), nil
		case int:
			return int64(n), nil
		case int64:
			return n, nil
		case json.Number:
			return n.Int64()
		}
		return nil, fmt.Errorf("want an integer, got %T", v)
	case "float":
		switch n := v.(type) {
		case float64:
			return n, nil
		case int:
			return float64(n), nil
		case json.Number:
			return n.Float64()
		}
		return nil, fmt.Errorf("want a number, got %T", v)
	case "boolean":
		b, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("want true or false, got %T", v)
		}
		return b, nil
	case "string[]":
		list, ok := v.([]any)
		if !ok {
			if ss, ok := v.([]string); ok {
				return ss, nil
			}
			return nil, fmt.Errorf("want a list of strings, got %T", v)
		}
		out := make([]string, len(list))
		for i, x := range list {
			s, ok := x.(string)
			if !ok || len(s) > maxString {
				return nil, fmt.Errorf("item %d: want a string", i)
			}
			out[i] = s
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown type %s", p.Type)
}

// Client speaks Neo4j's HTTP transactional API.
type Client struct {
	// URL is the server's HTTP address ("http://localhost:7474").
	URL string
	// Database is the database, "neo4j" when empty.
	Database string
	// User and Password authenticate (Basic); the password from
	// NEO4J_PASSWORD when empty.
	User, Password string
	HTTPClient     *http.Client
	MaxRetries     int
}

// Rows is one statement's result.
type Rows struct {
	Columns []string
	Data    [][]any
}

// Error is a statement Neo4j refused: its status code ("Neo.ClientError…")
// and message.
type Error struct {
	Code, Message string
}

func (e *Error) Error() string { return "neo4j: " + e.Code + ": " + e.Message }

// Run runs one statement with its parameters in an implicit transaction.
func (c *Client) Run(ctx context.Context, statement string, params map[string]any) (Rows, error) {
	if c.URL == "" {
		return Rows{}, errors.New("neo4j: no server URL")
	}
	db := c.Database
	if db == "" {
		db = "neo4j"
	}
	if params == nil {
		params = map[string]any{}
	}
	body := map[string]any{"statements": []any{map[string]any{"statement": statement, "parameters": params, "resultDataContents": []string{"row"}}}}
	header := map[string]string{"Accept": "application/json;charset=UTF-8"}
	if c.User != "" {
		pw := c.Password
		if pw == "" {
			pw = os.Getenv("NEO4J_PASSWORD")
		}
		header["Authorization"] = "Basic " + base64.StdEncoding.EncodeToString([]byte(c.User+":"+pw))
	}
	var resp struct {
		Results []struct {
			Columns []string `json:"columns"`
			Data    []struct {
				Row []any `json:"row"`
			} `json:"data"`
		} `json:"results"`
		Errors []struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	retries := c.MaxRetries
	if retries == 0 {
		retries = 1
	}
	u := strings.TrimRight(c.URL, "/") + "/db/" + db + "/tx/commit"
	if err := httpx.New(httpx.Options{Client: hc, MaxRetries: retries}).PostJSON(ctx, u, header, body, &resp); err != nil {
		return Rows{}, fmt.Errorf("neo4j: %w", err)
	}
	// Neo4j answers 200 whatever happened; errors come in the body.
	if len(resp.Errors) > 0 {
		return Rows{}, &Error{Code: resp.Errors[0].Code, Message: resp.Errors[0].Message}
	}
	if len(resp.Results) == 0 {
		return Rows{}, errors.New("neo4j: no result for the statement")
	}
	r := resp.Results[0]
	out := Rows{Columns: r.Columns, Data: make([][]any, len(r.Data))}
	for i, d := range r.Data {
		out.Data[i] = d.Row
	}
	return out, nil
}

// Graph is a knowledge graph with its templates.
type Graph struct {
	Client    *Client
	Templates []Template
}

// Template finds a template by name.
func (g *Graph) Template(name string) (Template, bool) {
	i := slices.IndexFunc(g.Templates, func(t Template) bool { return t.Name == name })
	if i < 0 {
		return Template{}, false
	}
	return g.Templates[i], true
}

// Run runs a template with arguments (checked first) and turns its rows
// into passages under the filter (nil for none): sourceType "graph",
// the source name the row's Source column or the template's name.
func (g *Graph) Run(ctx context.Context, name string, args map[string]any, f filter.Expr) ([]*document.Document, error) {
	t, ok := g.Template(name)
	if !ok {
		return nil, fmt.Errorf("neo4j: no template %q", name)
	}
	params, err := t.Args(args)
	if err != nil {
		return nil, err
	}
	m, err := filter.NewMatcher(f)
	if err != nil {
		return nil, fmt.Errorf("neo4j: %w", err)
	}
	rows, err := g.Client.Run(ctx, t.Cypher, params)
	if err != nil {
		return nil, err
	}
	col := func(name string) int { return slices.Index(rows.Columns, name) }
	ti := col(t.Text)
	if ti < 0 {
		return nil, fmt.Errorf("neo4j: template %s returned no %q column (got %v)", t.Name, t.Text, rows.Columns)
	}
	var out []*document.Document
	for i, row := range rows.Data {
		text := cell(row, ti)
		if strings.TrimSpace(text) == "" {
			continue
		}
		d := document.New(text)
		d.SourceType, d.SourceName = SourceGraph, t.Name
		if j := col(t.Source); t.Source != "" && j >= 0 && cell(row, j) != "" {
			d.SourceName = t.Name + "/" + cell(row, j)
		}
		if j := col(t.ID); t.ID != "" && j >= 0 && cell(row, j) != "" {
			d.ID = "neo4j:" + t.Name + ":" + cell(row, j)
		} else {
			d.ID = "neo4j:" + t.Name + ":" + strconv.Itoa(i)
		}
		d.Provenance.Source = d.SourceName
		for _, mc := range t.Metadata {
			if j := col(mc); j >= 0 && j < len(row) && row[j] != nil {
				switch v := row[j].(type) {
				case string, float64, bool:
					d.Metadata[mc] = v
				}
			}
		}
		d.SetScore(1 / float64(i+1))
		if m.MatchDocument(d) {
			out = append(out, d)
		}
	}
	return out, nil
}

func cell(row []any, i int) string {
	if i < 0 || i >= len(row) || row[i] == nil {
		return ""
	}
	switch v := row[i].(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	b, _ := json.Marshal(row[i])
	return string(b)
}

// GraphSchema is the graph's labels and relationship types.
type GraphSchema struct {
	Labels            []string `json:"labels"`
	RelationshipTypes []string `json:"relationshipTypes"`
}

// Schema reads the graph's labels and relationship types.
func (g *Graph) Schema(ctx context.Context) (GraphSchema, error) {
	var s GraphSchema
	for _, q := range []struct {
		stmt string
		into *[]string
	}{
		{"CALL db.labels() YIELD label RETURN label ORDER BY label", &s.Labels},
		{"CALL db.relationshipTypes() YIELD relationshipType RETURN relationshipType ORDER BY relationshipType", &s.RelationshipTypes},
	} {
		rows, err := g.Client.Run(ctx, q.stmt, nil)
		if err != nil {
			return s, err
		}
		*q.into = []string{}
		for _, r := range rows.Data {
			*q.into = append(*q.into, cell(r, 0))
		}
	}
	return s, nil
}

// Plugins says whether APOC and Graph Data Science are installed.
type Plugins struct {
	APOC   bool   `json:"apoc"`
	GDS    bool   `json:"gds"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// VerifyPlugins asks the server which procedures it has; OK means both
// plugins are there.
func (g *Graph) VerifyPlugins(ctx context.Context) (Plugins, error) {
	rows, err := g.Client.Run(ctx, "SHOW PROCEDURES YIELD name WHERE name STARTS WITH 'apoc.' OR name STARTS WITH 'gds.' RETURN name", nil)
	if err != nil {
		return Plugins{}, err
	}
	var p Plugins
	apoc, gds := 0, 0
	for _, r := range rows.Data {
		switch n := cell(r, 0); {
		case strings.HasPrefix(n, "apoc."):
			apoc++
		case strings.HasPrefix(n, "gds."):
			gds++
		}
	}
	p.APOC, p.GDS = apoc > 0, gds > 0
	p.OK = p.APOC && p.GDS
	p.Detail = fmt.Sprintf("%d APOC and %d GDS procedures", apoc, gds)
	return p, nil
}

// Retriever searches the graph with one template whose Query parameter
// takes the search text (and a "limit" parameter, when it declares one,
// the top-k), for parallel retrieval and the agent's rule-based loop.
type Retriever struct {
	Graph    *Graph
	Template string
	// Query is the parameter the search text goes to, "query" when empty.
	Query string
}

// Retrieve implements retrieve.Retriever.
func (r *Retriever) Retrieve(ctx context.Context, req retrieve.Request) ([]*document.Document, error) {
	t, ok := r.Graph.Template(r.Template)
	if !ok {
		return nil, fmt.Errorf("neo4j: no template %q", r.Template)
	}
	q := r.Query
	if q == "" {
		q = "query"
	}
	args := map[string]any{q: req.Query}
	if req.TopK > 0 && slices.ContainsFunc(t.Params, func(p Param) bool { return p.Name == "limit" && p.Type == "integer" }) {
		args["limit"] = int64(req.TopK)
	}
	docs, err := r.Graph.Run(ctx, t.Name, args, filter.Merge(req.Scope, req.Filter))
	if err != nil {
		return nil, err
	}
	if req.TopK > 0 && len(docs) > req.TopK {
		docs = docs[:req.TopK]
	}
	return docs, nil
}
