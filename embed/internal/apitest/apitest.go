// Package apitest is a scripted fake embedding service for the providers'
// tests: it records every request and answers with what the test says.
package apitest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/embed"
)

// Request is one recorded request.
type Request struct {
	Method, Path, Query string
	// EscapedPath is the path as sent.
	EscapedPath string
	Header      http.Header
	// Body is the decoded JSON body.
	Body map[string]any
}

// Reply is a scripted answer: a status (200 when 0), headers and a body
// (JSON-encoded unless a string).
type Reply struct {
	Status int
	Header map[string]string
	Body   any
}

// Server is the fake service.
type Server struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []Request
}

// New starts a server answering request n (from 0) with reply(n, req); it
// stops when the test ends.
func New(t *testing.T, reply func(n int, r Request) Reply) *Server {
	t.Helper()
	s := &Server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		req := Request{Method: r.Method, Path: r.URL.Path, EscapedPath: r.URL.EscapedPath(), Query: r.URL.RawQuery, Header: r.Header.Clone()}
		if err := json.Unmarshal(b, &req.Body); err != nil {
			t.Errorf("request body is not a JSON object: %v: %s", err, b)
		}
		s.mu.Lock()
		n := len(s.reqs)
		s.reqs = append(s.reqs, req)
		s.mu.Unlock()
		rep := reply(n, req)
		for k, v := range rep.Header {
			w.Header().Set(k, v)
		}
		if rep.Status == 0 {
			rep.Status = http.StatusOK
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.Status)
		if str, ok := rep.Body.(string); ok {
			io.WriteString(w, str)
			return
		}
		json.NewEncoder(w).Encode(rep.Body)
	}))
	t.Cleanup(s.Close)
	return s
}

// Requests returns the requests so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Fast retries at once, so tests of retries take milliseconds.
func Fast() embed.HTTPOptions {
	return embed.HTTPOptions{MaxRetries: 3, RetryDelay: time.Millisecond, MaxRetryWait: 5 * time.Millisecond}
}

// Strings converts a JSON array of strings.
func Strings(v any) []string {
	a, _ := v.([]any)
	out := make([]string, len(a))
	for i, x := range a {
		out[i], _ = x.(string)
	}
	return out
}

// Vector is a deterministic vector of length dim for text: the first
// component is the text's length, so tests can tell vectors apart after
// normalisation by their ratio to the second component (always 1).
func Vector(text string, dim int) []float32 {
	v := make([]float32, dim)
	v[0] = float32(len(text) + 1)
	if dim > 1 {
		v[1] = 1
	}
	return v
}

// CheckVectors fails the test unless vecs are Vector(texts[i]) normalised,
// in order.
func CheckVectors(t *testing.T, texts []string, vecs [][]float32, dim int) {
	t.Helper()
	if len(vecs) != len(texts) {
		t.Fatalf("%d vectors for %d texts", len(vecs), len(texts))
	}
	for i, v := range vecs {
		if len(v) != dim {
			t.Fatalf("vector %d has dimension %d, want %d", i, len(v), dim)
		}
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		if n < 0.9999 || n > 1.0001 {
			t.Errorf("vector %d has norm² %v, want 1", i, n)
		}
		if dim > 1 {
			if got, want := v[0]/v[1], float32(len(texts[i])+1); got < want-1e-3 || got > want+1e-3 {
				t.Errorf("vector %d belongs to another text (ratio %v, want %v)", i, got, want)
			}
		}
	}
}
