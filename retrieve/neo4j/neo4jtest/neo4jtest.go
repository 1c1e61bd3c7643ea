// Package neo4jtest is a fake Neo4j server speaking the HTTP transactional
// API's documented format (POST /db/{database}/tx/commit): Basic
// authentication, JSON statements with parameters, results as columns and
// rows, and errors in the body of a 200 answer as Neo4j sends them. It
// runs no Cypher: each statement it knows is answered by a function the
// test registers, and one it does not know is refused as a syntax error.
// A statement's $parameters must all be sent, as Neo4j requires.
package neo4jtest

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// Answer is a statement's result: its columns and rows.
type Answer struct {
	Columns []string
	Rows    [][]any
}

// Server is the fake.
type Server struct {
	*httptest.Server
	// User and Password are the credentials it accepts; empty accepts
	// any request.
	User, Password string
	Database       string

	mu         sync.Mutex
	statements map[string]func(params map[string]any) (Answer, error)
	received   []Statement
}

// Statement is a statement the server received.
type Statement struct {
	Statement  string         `json:"statement"`
	Parameters map[string]any `json:"parameters"`
}

// New starts a fake for database "neo4j" that knows db.labels(),
// db.relationshipTypes() and SHOW PROCEDURES (answered from labels, types
// and procs); it is closed when the test ends.
func New(t testing.TB, labels, relTypes, procs []string) *Server {
	s := &Server{Database: "neo4j", statements: map[string]func(map[string]any) (Answer, error){}}
	column := func(name string, vals []string) func(map[string]any) (Answer, error) {
		return func(map[string]any) (Answer, error) {
			a := Answer{Columns: []string{name}}
			for _, v := range vals {
				a.Rows = append(a.Rows, []any{v})
			}
			return a, nil
		}
	}
	s.Handle("CALL db.labels() YIELD label RETURN label ORDER BY label", column("label", labels))
	s.Handle("CALL db.relationshipTypes() YIELD relationshipType RETURN relationshipType ORDER BY relationshipType", column("relationshipType", relTypes))
	s.Handle("SHOW PROCEDURES YIELD name WHERE name STARTS WITH 'apoc.' OR name STARTS WITH 'gds.' RETURN name", column("name", procs))
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Handle answers a statement, matched by its exact text.
func (s *Server) Handle(statement string, f func(params map[string]any) (Answer, error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statements[strings.TrimSpace(statement)] = f
}

// Received are the statements run so far.
func (s *Server) Received() []Statement {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Statement(nil), s.received...)
}

var paramRE = regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*)`)

type neoError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json;charset=utf-8")
	reply := func(code int, results []any, errs ...neoError) {
		w.WriteHeader(code)
		if results == nil {
			results = []any{}
		}
		if errs == nil {
			errs = []neoError{}
		}
		json.NewEncoder(w).Encode(map[string]any{"results": results, "errors": errs})
	}
	if r.Method != http.MethodPost || r.URL.Path != "/db/"+s.Database+"/tx/commit" {
		reply(http.StatusNotFound, nil, neoError{"Neo.ClientError.Request.Invalid", "no such endpoint: " + r.Method + " " + r.URL.Path})
		return
	}
	if s.User != "" {
		want := "Basic " + base64.StdEncoding.EncodeToString([]byte(s.User+":"+s.Password))
		if r.Header.Get("Authorization") != want {
			reply(http.StatusUnauthorized, nil, neoError{"Neo.ClientError.Security.Unauthorized", "The client is unauthorized due to authentication failure."})
			return
		}
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") || !strings.Contains(r.Header.Get("Accept"), "application/json") {
		reply(http.StatusNotAcceptable, nil, neoError{"Neo.ClientError.Request.Invalid", "send and accept application/json"})
		return
	}
	var body struct {
		Statements []struct {
			Statement          string          `json:"statement"`
			Parameters         json.RawMessage `json:"parameters"`
			ResultDataContents []string        `json:"resultDataContents"`
			IncludeStats       bool            `json:"includeStats"`
		} `json:"statements"`
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(&body); err != nil {
		reply(http.StatusOK, nil, neoError{"Neo.ClientError.Request.InvalidFormat", "Unable to deserialize request: " + err.Error()})
		return
	}
	var results []any
	for _, st := range body.Statements {
		var params map[string]any
		if len(st.Parameters) > 0 {
			d := json.NewDecoder(strings.NewReader(string(st.Parameters)))
			d.UseNumber()
			if err := d.Decode(&params); err != nil || params == nil {
				reply(http.StatusOK, results, neoError{"Neo.ClientError.Request.InvalidFormat", "parameters must be a JSON object"})
				return
			}
		}
		for _, c := range st.ResultDataContents {
			if c != "row" && c != "graph" && c != "REST" {
				reply(http.StatusOK, results, neoError{"Neo.ClientError.Request.InvalidFormat", "unknown result data content " + c})
				return
			}
		}
		text := strings.TrimSpace(st.Statement)
		s.mu.Lock()
		s.received = append(s.received, Statement{Statement: text, Parameters: params})
		f := s.statements[text]
		s.mu.Unlock()
		for _, m := range paramRE.FindAllStringSubmatch(text, -1) {
			if _, ok := params[m[1]]; !ok {
				reply(http.StatusOK, results, neoError{"Neo.ClientError.Statement.ParameterMissing", "Expected parameter(s): " + m[1]})
				return
			}
		}
		if f == nil {
			reply(http.StatusOK, results, neoError{"Neo.ClientError.Statement.SyntaxError", "Invalid input (the fake knows no such statement): " + text})
			return
		}
		a, err := f(params)
		if err != nil {
			reply(http.StatusOK, results, neoError{"Neo.ClientError.Statement.ArgumentError", err.Error()})
			return
		}
		data := make([]any, len(a.Rows))
		for i, row := range a.Rows {
			data[i] = map[string]any{"row": row, "meta": make([]any, len(row))}
		}
		results = append(results, map[string]any{"columns": a.Columns, "data": data})
	}
	reply(http.StatusOK, results)
}
