// Package sourcetest is the contract every retrieval source that is not a
// store passes (web searches, remote engines): it answers with passages
// that say where they came from, within top-k; a scope it cannot honour
// on the engine's side matches nothing rather than everything; a failure
// is an error that parallel retrieval isolates; a slow answer runs out of
// time without holding up the others; and the agent can search it.
//
// A source's test gives how to build the source against a fake server and
// how the fake answers, in the engine's wire format, with given results.
package sourcetest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/agent"
	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/retrieve"
)

// Result is one result the fake engine returns.
type Result struct {
	URL, Title, Text string
}

// Source describes the source under test.
type Source struct {
	// New builds the source against the fake engine at baseURL.
	New func(baseURL string) retrieve.Retriever
	// Serve answers one request in the engine's wire format with results,
	// after checking the request as the engine would (t.Errorf on a
	// malformed one).
	Serve func(t *testing.T, w http.ResponseWriter, r *http.Request, results []Result)
	// SourceType is the type its passages carry ("web").
	SourceType string
	// Names gives the id and source name a result's passage carries; its
	// URL for both when nil.
	Names func(Result) (id, source string)
}

func (s Source) names(r Result) (string, string) {
	if s.Names == nil {
		return r.URL, r.URL
	}
	return s.Names(r)
}

// Results are what the fake returns for every query.
var Results = []Result{
	{URL: "https://example.org/refunds", Title: "Refund policy", Text: "Refunds are paid within fourteen days."},
	{URL: "https://example.org/shipping", Title: "Shipping", Text: "Parcels ship from Rotterdam."},
	{URL: "https://example.org/gift-cards", Title: "Gift cards", Text: "Gift cards are not refunded."},
	{URL: "https://example.org/returns", Title: "Returns", Text: "Returns are free for thirty days."},
}

// Run checks the contract.
func Run(t *testing.T, s Source) {
	t.Helper()
	var mode atomic.Value // "", "fail", "slow"
	mode.Store("")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch mode.Load().(string) {
		case "fail":
			http.Error(w, `{"error":"boom"}`, http.StatusBadRequest)
			return
		case "slow":
			// The body read, the server notices the client leaving.
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			select {
			case <-time.After(2 * time.Second):
			case <-r.Context().Done():
				return
			}
		}
		s.Serve(t, w, r, Results)
	}))
	defer srv.Close()
	src := s.New(srv.URL)
	ctx := context.Background()

	t.Run("answers", func(t *testing.T) {
		docs, err := src.Retrieve(ctx, retrieve.Request{Query: "refund policy", TopK: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(docs) != 3 {
			t.Fatalf("%d passages for top-k 3", len(docs))
		}
		for i, d := range docs {
			id, name := s.names(Results[i])
			if d.ID != id || d.SourceName != name || d.SourceType != s.SourceType ||
				!strings.Contains(d.Content, Results[i].Title) || d.Provenance.Source != name {
				t.Errorf("passage %d: %+v", i, d)
			}
		}
	})
	t.Run("scopes only narrow", func(t *testing.T) {
		docs, err := src.Retrieve(ctx, retrieve.Request{Query: "refund policy", TopK: 3, Scope: filter.Eq("tenant", "acme")})
		if err != nil {
			t.Fatal(err)
		}
		if len(docs) != 0 {
			t.Errorf("a tenant scope let %d unscoped passages through", len(docs))
		}
		id0, name0 := s.names(Results[0])
		docs, err = src.Retrieve(ctx, retrieve.Request{Query: "refund policy", TopK: 3, Scope: filter.Eq("sourceType", s.SourceType),
			Filter: filter.Neq("sourceName", name0)})
		if err != nil {
			t.Fatal(err)
		}
		if len(docs) == 0 || docs[0].ID == id0 {
			t.Errorf("scope and filter on built-in fields: %d passages, first %v", len(docs), first(docs))
		}
	})
	t.Run("failures are isolated", func(t *testing.T) {
		mode.Store("fail")
		defer mode.Store("")
		if _, err := src.Retrieve(ctx, retrieve.Request{Query: "refunds", TopK: 3}); err == nil {
			t.Fatal("a refused request returned no error")
		}
		p := &retrieve.Parallel{Sources: []retrieve.Source{{Name: "engine", Retriever: src}, {Name: "other", Retriever: fixed{}}}}
		res, err := p.RetrieveReport(ctx, retrieve.Request{Query: "refunds", TopK: 3})
		if err != nil || len(res.Docs) != 1 || len(res.Failures) != 1 || res.Failures[0].Source != "engine" {
			t.Errorf("parallel retrieval with the source failing: %+v %v", res, err)
		}
	})
	t.Run("timeouts", func(t *testing.T) {
		mode.Store("slow")
		defer mode.Store("")
		t0 := time.Now()
		p := &retrieve.Parallel{Timeout: 100 * time.Millisecond, Sources: []retrieve.Source{{Name: "engine", Retriever: src}, {Name: "other", Retriever: fixed{}}}}
		res, err := p.RetrieveReport(ctx, retrieve.Request{Query: "refunds", TopK: 3})
		if err != nil || len(res.Failures) != 1 || !res.Failures[0].TimedOut || len(res.Docs) != 1 {
			t.Errorf("a slow source: %+v %v", res, err)
		}
		if d := time.Since(t0); d > time.Second {
			t.Errorf("a slow source held parallel retrieval for %v", d)
		}
	})
	t.Run("agent", func(t *testing.T) {
		g, err := (&agent.Agent{Sources: []agent.Source{{Name: "engine", Searcher: agent.Retrieving(src)}}}).
			Gather(ctx, agent.Request{Question: "What is the refund policy?", TopK: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(g.Passages) == 0 || g.Passages[0].SourceType != s.SourceType || g.ToolCalls == 0 {
			t.Errorf("the agent gathered %d passages in %d calls", len(g.Passages), g.ToolCalls)
		}
	})
}

func first(docs []*document.Document) any {
	if len(docs) == 0 {
		return nil
	}
	return docs[0].ID
}

// fixed is another source that always answers.
type fixed struct{}

func (fixed) Retrieve(context.Context, retrieve.Request) ([]*document.Document, error) {
	return []*document.Document{document.New("Refunds take fourteen days.")}, nil
}
