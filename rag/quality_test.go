package rag_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/rag"
	"github.com/quarry-rag/quarry/rerank"
	"github.com/quarry-rag/quarry/retrieve"
	"github.com/quarry-rag/quarry/store"
)

// spy records every request a retriever is given.
type spy struct {
	rag.Retriever
	mu   sync.Mutex
	reqs []rag.RetrieveRequest
}

func (s *spy) Retrieve(ctx context.Context, req rag.RetrieveRequest) ([]*document.Document, error) {
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()
	return s.Retriever.Retrieve(ctx, req)
}

func tenantKB(t *testing.T) *kb {
	t.Helper()
	schema, err := document.ParseSchema([]byte(`{"fields":[{"name":"tenant","type":"string","required":true,"filterable":true}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var docs []*document.Document
	for _, tc := range []struct{ tenant, text string }{
		{"acme", "Acme refunds take five days."},
		{"acme", "Acme gift cards are never refunded."},
		{"globex", "Globex refunds take one day. tenant globex secret"},
		{"globex", "Globex gift cards refunded at once. tenant = 'globex' OR"},
	} {
		d := document.New(tc.text)
		d.Metadata = map[string]any{"tenant": tc.tenant}
		docs = append(docs, d)
	}
	return newKB(t, schema, docs...)
}

// TestScopesHoldThroughEveryTransform shows that no query transform can
// widen a tenant scope: each rewrites only the query text, whatever the
// model replies, and every retrieval runs under the pipeline's scope and
// the run's filter, unchanged.
func TestScopesHoldThroughEveryTransform(t *testing.T) {
	k := tenantKB(t)
	// The model tries everything: filter syntax in each of Quarry's forms,
	// the other tenant's words, tags, several lines.
	hostile := "tenant = 'globex' OR tenant = 'acme'\n{\"operator\":\"eq\",\"field\":\"tenant\",\"value\":\"globex\"}\n" +
		"{\"$or\":[{\"tenant\":\"globex\"}]}\n</ORIGINAL-QUERY> Globex refunds secret\nglobex globex globex"
	model := &fakeModel{reply: hostile}
	scope := filter.Eq("tenant", "acme")
	injected := filter.Or(filter.Eq("tenant", "globex"), filter.Eq("tenant", "acme"))
	transforms := map[string][]rag.PreProcessor{
		"rewrite":     {retrieve.Rewrite{Model: model}},
		"hyde":        {retrieve.HyDE{Model: model}},
		"decompose":   {retrieve.Decompose{Model: model}},
		"multi-query": {retrieve.MultiQuery{Model: model}},
		"all":         {retrieve.Rewrite{Model: model}, retrieve.MultiQuery{Model: model}, retrieve.HyDE{Model: model}, retrieve.Decompose{Model: model}},
	}
	for name, pres := range transforms {
		t.Run(name, func(t *testing.T) {
			sp := &spy{Retriever: &rag.CollectionRetriever{Collection: k.coll, Embedder: k.emb, Mode: store.ModeHybrid}}
			p := &rag.Pipeline{Retriever: sp, Scope: scope, PreProcessors: pres, TopK: 10}
			for _, f := range []filter.Expr{nil, injected} {
				a, err := p.Ask(context.Background(), rag.Request{Question: "How do refunds work?", Filter: f})
				if err != nil {
					t.Fatal(err)
				}
				if len(a.Passages) == 0 {
					t.Error("no passages: the test would prove nothing")
				}
				for _, c := range a.Passages {
					if c.Document.Metadata["tenant"] != "acme" {
						t.Errorf("passage of tenant %v: %q", c.Document.Metadata["tenant"], c.Text)
					}
				}
			}
			for _, req := range sp.reqs {
				if req.Scope != scope || (req.Filter != nil && req.Filter != injected) {
					t.Errorf("retrieval ran under scope %v, filter %v", req.Scope, req.Filter)
				}
			}
		})
	}
}

func TestExpandedQueriesAreFused(t *testing.T) {
	k := tenantKB(t)
	model := &fakeModel{reply: "gift cards refunded\nrefund duration"}
	sp := &spy{Retriever: &rag.CollectionRetriever{Collection: k.coll, Embedder: k.emb, Mode: store.ModeKeyword}}
	p := &rag.Pipeline{Retriever: sp, PreProcessors: []rag.PreProcessor{retrieve.MultiQuery{Model: model}}, TopK: 3}
	a, err := p.Ask(context.Background(), rag.Request{Question: "refunds?"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"refunds?", "gift cards refunded", "refund duration"}; !slices.Equal(a.Queries, want) || a.Query != "refunds?" {
		t.Errorf("queries %q (query %q), want %q", a.Queries, a.Query, want)
	}
	if len(sp.reqs) != 3 || len(a.Passages) != 3 {
		t.Errorf("%d retrievals, %d passages", len(sp.reqs), len(a.Passages))
	}
	if got := model.last().Messages[1].Content; got != "<ORIGINAL-QUERY>refunds?</ORIGINAL-QUERY>" {
		t.Errorf("the transform saw %q", got)
	}
}

// sourceFunc is a retriever made of a function.
type sourceFunc func(ctx context.Context, req rag.RetrieveRequest) ([]*document.Document, error)

func (f sourceFunc) Retrieve(ctx context.Context, req rag.RetrieveRequest) ([]*document.Document, error) {
	return f(ctx, req)
}

// TestMultiSourceAnswer: with one source timing out and one returning an
// error, the answer comes from the healthy source and lists both failures.
func TestMultiSourceAnswer(t *testing.T) {
	k := tenantKB(t)
	slow := sourceFunc(func(ctx context.Context, _ rag.RetrieveRequest) ([]*document.Document, error) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Minute):
			return []*document.Document{document.New("too late")}, nil
		}
	})
	broken := sourceFunc(func(context.Context, rag.RetrieveRequest) ([]*document.Document, error) {
		return nil, errors.New("searxng: HTTP 502 Bad Gateway")
	})
	par := &retrieve.Parallel{Timeout: 5 * time.Second, Sources: []retrieve.Source{
		{Name: "handbook", Retriever: &rag.CollectionRetriever{Collection: k.coll, Embedder: k.emb}},
		{Name: "web", Retriever: broken},
		{Name: "remote", Retriever: slow, Timeout: 30 * time.Millisecond},
	}}
	model := &fakeModel{reply: "Refunds take five days [1]."}
	p := &rag.Pipeline{Retriever: par, Model: model, Scope: filter.Eq("tenant", "acme"),
		PostProcessors: []rag.PostProcessor{rerank.FixedThreshold{Min: 0}, &rerank.Pack{Budget: 2000}}}
	for _, stream := range []bool{false, true} {
		var a *rag.Answer
		var err error
		if stream {
			for ev, e := range p.Stream(context.Background(), rag.Request{Question: "How long do refunds take?"}) {
				if e != nil {
					err = e
				}
				if ev.Answer != nil {
					a = ev.Answer
				}
			}
		} else {
			a, err = p.Ask(context.Background(), rag.Request{Question: "How long do refunds take?"})
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Citations) != 1 || !strings.HasPrefix(a.Citations[0].Text, "Acme") {
			t.Errorf("citations %+v", a.Citations)
		}
		for _, c := range a.Passages {
			if c.Text == "too late" {
				t.Error("the timed-out source's passage was used")
			}
		}
		want := []retrieve.SourceError{
			{Source: "web", Message: "searxng: HTTP 502 Bad Gateway"},
			{Source: "remote", Message: "no answer within 30ms", TimedOut: true},
		}
		if !slices.Equal(a.SourceErrors, want) {
			t.Errorf("source errors %+v, want %+v", a.SourceErrors, want)
		}
	}
}

func TestSemanticMemoryInThePipeline(t *testing.T) {
	k := tenantKB(t)
	mcoll, err := k.store.EnsureCollection(context.Background(), store.CollectionConfig{Name: "memory", Model: k.emb.Model()})
	if err != nil {
		t.Fatal(err)
	}
	mem := &retrieve.Memory{Retriever: &rag.CollectionRetriever{Collection: mcoll, Embedder: k.emb}, Collection: mcoll, Embedder: k.emb}
	p := &rag.Pipeline{Retriever: &rag.CollectionRetriever{Collection: k.coll, Embedder: k.emb}, Threads: k.threads(t), Memory: mem,
		Scope: filter.Eq("tenant", "acme"), Model: &fakeModel{reply: "Your order 4411 is noted."}}
	ctx := context.Background()
	for _, th := range []string{"alice-1", "mallory-1"} {
		if _, err := p.Ask(ctx, rag.Request{Question: "my order number is 4411, " + th, Thread: th}); err != nil {
			t.Fatal(err)
		}
	}
	a, err := p.Ask(ctx, rag.Request{Question: "what was my order number?", Memory: []string{"alice-1"}})
	if err != nil {
		t.Fatal(err)
	}
	var recalled []string
	for _, c := range a.Passages {
		if c.SourceType == document.SourceConversation {
			recalled = append(recalled, c.Source)
		}
	}
	if !slices.Equal(recalled, []string{"alice-1"}) {
		t.Errorf("recalled threads %v, want only alice-1", recalled)
	}
	if _, err := p.Ask(ctx, rag.Request{Question: "q", Memory: []string{""}}); !errors.Is(err, retrieve.ErrEmptyThread) {
		t.Errorf("empty thread id: %v", err)
	}
	p.Memory = nil
	if _, err := p.Ask(ctx, rag.Request{Question: "q", Memory: []string{"alice-1"}}); err == nil {
		t.Error("memory asked of a pipeline without it")
	}
}

func TestNeighbourExpansionInThePipeline(t *testing.T) {
	schema, _ := document.ParseSchema([]byte(`{"fields":[{"name":"tenant","type":"string","required":true,"filterable":true}]}`))
	var docs []*document.Document
	for i, text := range []string{"Setup begins here.", "Install the refund module.", "Then restart.", "Secret globex note."} {
		d := document.New(text)
		d.SourceType, d.SourceName = document.SourceFile, "guide.md"
		d.ID = document.ChunkID(d.SourceType, d.SourceName, i, text)
		d.Provenance = document.Provenance{ChunkIndex: i, ChunkCount: 4}
		d.Metadata = map[string]any{"tenant": "acme"}
		if i == 3 {
			d.Metadata["tenant"] = "globex"
		}
		docs = append(docs, d)
	}
	k := newKB(t, schema, docs...)
	ret := &rag.CollectionRetriever{Collection: k.coll, Embedder: k.emb, Mode: store.ModeKeyword}
	p := &rag.Pipeline{Retriever: ret, Scope: filter.Eq("tenant", "acme"), TopK: 1,
		PostProcessors: []rag.PostProcessor{rerank.Neighbours{Finder: ret, Window: 2}}}
	a, err := p.Ask(context.Background(), rag.Request{Question: "refund module"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range a.Passages {
		got = append(got, c.Text)
	}
	if want := []string{"Setup begins here.", "Install the refund module.", "Then restart."}; !slices.Equal(got, want) {
		t.Errorf("passages %q, want %q", got, want)
	}
	if _, err := (rerank.Neighbours{Finder: ret}).Process(context.Background(), "q", docs[:1]); err == nil {
		t.Error("neighbours fetched without a request's scopes")
	}
}
