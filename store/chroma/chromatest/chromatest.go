// Package chromatest gives tests a Chroma server: the real one that
// QUARRY_TEST_CHROMA names (a chroma:// URL; .ci/run starts one), behind
// a proxy that validates every request Quarry sends and every answer it
// reads against the OpenAPI document that server publishes at
// /openapi.json. Each test gets a prefix of its own, so its collections
// start empty, and the prefix's collections are dropped when it ends.
package chromatest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/internal/openapicheck"
)

// Env names the variable holding the server's URL.
const Env = "QUARRY_TEST_CHROMA"

// Server is a validating proxy in front of the Chroma server.
type Server struct {
	*httptest.Server
	target string // http://host:port of the real server
	prefix string

	mu      sync.Mutex
	invalid []string
	calls   map[string]int
	short   int // when > 0, query answers keep this many results
}

// ShortQueries makes the proxy cut every query's answer to n results (0
// stops it), as Chroma's answer is while it moves records from its log
// into its index: for tests of what the store does about a short answer.
func (s *Server) ShortQueries(n int) {
	s.mu.Lock()
	s.short = n
	s.mu.Unlock()
}

// cut keeps the first n results of a query's answer.
func cut(answer []byte, n int) []byte {
	var res map[string]any
	if json.Unmarshal(answer, &res) != nil {
		return answer
	}
	for k, v := range res {
		rows, ok := v.([]any)
		if !ok || k == "include" {
			continue
		}
		for i, row := range rows {
			if r, ok := row.([]any); ok && len(r) > n {
				rows[i] = r[:n]
			}
		}
	}
	b, err := json.Marshal(res)
	if err != nil {
		return answer
	}
	return b
}

// New starts a proxy to the server QUARRY_TEST_CHROMA names, or skips the
// test when it is not set. The proxy is closed, and the test fails if any
// exchange was outside the specification, when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	raw := os.Getenv(Env)
	if raw == "" {
		t.Skipf("%s is not set: no Chroma server to test against (.ci/run starts one; see scripts/chroma.sh)", Env)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "chroma" {
		t.Fatalf("%s=%q: want chroma://HOST:PORT", Env, raw)
	}
	s := &Server{target: "http://" + u.Host, calls: map[string]int{}}
	check, err := checker(s.target)
	if err != nil {
		t.Fatal(err)
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	s.prefix = "t" + hex.EncodeToString(rnd[:])
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, check) }))
	t.Cleanup(func() {
		s.drop()
		s.Close()
		for _, msg := range s.TakeInvalid() {
			t.Errorf("chromatest: %s", msg)
		}
	})
	return s
}

// checkers holds the validator of each server, read once per test binary.
var checkers sync.Map // target → *openapicheck.Checker

func checker(target string) (*openapicheck.Checker, error) {
	if c, ok := checkers.Load(target); ok {
		return c.(*openapicheck.Checker), nil
	}
	resp, err := http.Get(target + "/openapi.json")
	if err != nil {
		return nil, fmt.Errorf("chromatest: read the server's OpenAPI document: %w", err)
	}
	defer resp.Body.Close()
	spec, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("chromatest: read the server's OpenAPI document: HTTP %d, %v", resp.StatusCode, err)
	}
	if spec, err = mend(spec); err != nil {
		return nil, err
	}
	c, err := openapicheck.New(spec)
	if err != nil {
		return nil, err
	}
	checkers.Store(target, c)
	return c, nil
}

// mend corrects the document's two slips: it declares the version's
// answer text/plain, while the server answers application/json (a JSON
// string), as Chroma's own clients read it; and a metadata value is the
// oneOf of an integer and a number (and of lists of each), which no
// integer can satisfy, since it is both: the value is their anyOf, as the
// server reads it.
func mend(spec []byte) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(spec, &doc); err != nil {
		return nil, fmt.Errorf("chromatest: OpenAPI document: %w", err)
	}
	op, _ := doc["paths"].(map[string]any)["/api/v2/version"].(map[string]any)["get"].(map[string]any)
	ok, _ := op["responses"].(map[string]any)["200"].(map[string]any)
	if ok == nil {
		return nil, fmt.Errorf("chromatest: OpenAPI document has no GET /api/v2/version answer")
	}
	ok["content"] = map[string]any{"application/json": map[string]any{"schema": map[string]any{"type": "string"}}}
	hm, _ := doc["components"].(map[string]any)["schemas"].(map[string]any)["HashMap"].(map[string]any)
	value, _ := hm["additionalProperties"].(map[string]any)
	if value["oneOf"] == nil {
		return nil, fmt.Errorf("chromatest: OpenAPI document's HashMap has changed")
	}
	value["anyOf"] = value["oneOf"]
	delete(value, "oneOf")
	return json.Marshal(doc)
}

// Token is the token the store URL carries: the specification wants an
// x-chroma-token on every request, which a server without authentication
// ignores.
const Token = "quarry-test"

// StoreURL is the store URL through the proxy, with the test's prefix
// and the query params when given.
func (s *Server) StoreURL(params string) string {
	u := "chroma://:" + Token + "@" + s.Listener.Addr().String() + "?prefix=" + s.prefix
	if params != "" {
		u += "&" + params
	}
	return u
}

// DirectURL is the store URL of the server itself, not through the
// proxy, with the test's prefix: for tests that time the store, which the
// validation would slow.
func (s *Server) DirectURL(params string) string {
	u := "chroma://:" + Token + "@" + strings.TrimPrefix(s.target, "http://") + "?prefix=" + s.prefix
	if params != "" {
		u += "&" + params
	}
	return u
}

// Prefix is the test's collection prefix.
func (s *Server) Prefix() string { return s.prefix }

// TakeInvalid returns the exchanges the specification refused so far and
// forgets them; those left when the test ends fail it.
func (s *Server) TakeInvalid() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.invalid
	s.invalid = nil
	return out
}

// Calls returns how many requests each operation ("POST get") received,
// named by the method and the path's last part.
func (s *Server) Calls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.calls {
		out[k] = v
	}
	return out
}

func (s *Server) note(msg string) {
	s.mu.Lock()
	s.invalid = append(s.invalid, msg)
	s.mu.Unlock()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, check *openapicheck.Checker) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := check.Request(r, body); err != nil {
		s.note("request outside the specification: " + err.Error())
	}
	s.mu.Lock()
	s.calls[r.Method+" "+r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]]++
	s.mu.Unlock()
	req, err := http.NewRequestWithContext(r.Context(), r.Method, s.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	s.mu.Lock()
	short := s.short
	s.mu.Unlock()
	if short > 0 && resp.StatusCode/100 == 2 && strings.HasSuffix(r.URL.Path, "/query") {
		answer = cut(answer, short)
		resp.Header.Del("Content-Length")
	}
	if resp.StatusCode/100 == 2 {
		if err := check.Response(r, resp.StatusCode, resp.Header.Get("Content-Type"), answer); err != nil {
			s.note("answer outside the specification: " + err.Error())
		}
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

// drop deletes the collections of the test's prefix, sidecars included.
func (s *Server) drop() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base := s.target + "/api/v2/tenants/default_tenant/databases/default_database/collections"
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"?limit=1000", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return
		}
		var cs []struct {
			Name string `json:"name"`
		}
		err = json.NewDecoder(resp.Body).Decode(&cs)
		resp.Body.Close()
		if err != nil {
			return
		}
		n := 0
		for _, c := range cs {
			if strings.HasPrefix(c.Name, s.prefix+"_") || strings.HasPrefix(c.Name, s.prefix+"-") {
				req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, base+"/"+url.PathEscape(c.Name), nil)
				if resp, err := http.DefaultClient.Do(req); err == nil {
					resp.Body.Close()
					n++
				}
			}
		}
		if n == 0 || len(cs) < 1000 {
			return
		}
	}
}
