package rag_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/rag"
	"github.com/quarry-rag/quarry/store"
)

func TestRelevance(t *testing.T) {
	an, err := bm25.NewAnalyzer(bm25.AnalyzerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	docs := handbook()
	for _, tc := range []struct {
		question string
		passages []*document.Document
		known    map[string]bool
		lo, hi   float64
	}{
		{"When are refunds paid back to the card?", docs, nil, 0.99, 1},
		// "long" and "take" are in no passage, but they are everyday words.
		{"How long do refunds take to be paid?", docs, nil, 0.5, 0.6},
		// "cheque" is in no passage: it weighs most, unless the knowledge
		// base is known to hold it elsewhere.
		{"Are refunds paid by cheque?", docs, nil, 0.4, 0.5},
		{"Are refunds paid by cheque?", docs, map[string]bool{"chequ": true}, 0.85, 0.95},
		{"What is the capital of France?", docs, nil, 0, 0.01},
		// Three terms of four, and the missing one is in no passage.
		{"Are gift cards refunded on Mars?", docs, nil, 0.5, 0.8},
		// A name the knowledge base lacks weighs twice what a common word
		// it lacks does.
		{"Are refunds paid for Zorblax orders?", docs, map[string]bool{"zorblax": false, "order": false}, 0.18, 0.25},
		{"Are refunds paid for zorblax orders?", docs, map[string]bool{"zorblax": false, "order": false}, 0.27, 0.32},
		{"What is it?", docs, nil, 1, 1},      // no terms: nothing to judge by
		{"Are refunds paid?", nil, nil, 0, 0}, // no passages
		// A heading path vouches for its passage.
		{"What is the shipping policy?", []*document.Document{sourced("It takes two days.", "s.md", "Shipping policy")}, nil, 1, 1},
	} {
		got := rag.Relevance(an, tc.question, tc.passages, tc.known)
		if got < tc.lo || got > tc.hi || math.IsNaN(got) {
			t.Errorf("%q: relevance %.3f, want [%.2f, %.2f]", tc.question, got, tc.lo, tc.hi)
		}
	}
}

func TestMinRelevanceFor(t *testing.T) {
	if got := rag.MinRelevanceFor(embed.ModelInfo{Provider: "hash"}); got != rag.DefaultMinRelevance {
		t.Errorf("hash embedder: floor %v", got)
	}
	if got := rag.MinRelevanceFor(embed.ModelInfo{Provider: "openai"}); got != 0 {
		t.Errorf("semantic embedder: floor %v, want none", got)
	}
}

// TestAbstains holds both answer paths to the floor: under it, no passage
// is used and nothing is cited; over it, or with the floor turned off per
// request, the question is answered.
func TestAbstains(t *testing.T) {
	ctx := context.Background()
	retr := &staticRetriever{docs: handbook()}
	p := &rag.Pipeline{Retriever: retr, MinRelevance: rag.DefaultMinRelevance}
	a, err := p.Ask(ctx, rag.Request{Question: "What is the capital of France?"})
	if err != nil {
		t.Fatal(err)
	}
	if !a.Abstained || a.Text != rag.NotRelevant || len(a.Citations) != 0 || len(a.Passages) != 0 || len(a.Quotes) != 0 {
		t.Errorf("off-topic question: %+v", a)
	}
	a, err = p.Ask(ctx, rag.Request{Question: "When are refunds paid back to the card?"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Abstained || len(a.Citations) == 0 || a.Relevance < rag.DefaultMinRelevance {
		t.Errorf("answerable question: %+v", a)
	}
	a, err = p.Ask(ctx, rag.Request{Question: "What is the capital of France?", MinRelevance: -1})
	if err != nil {
		t.Fatal(err)
	}
	if a.Abstained || len(a.Passages) == 0 {
		t.Errorf("floor turned off: %+v", a)
	}

	model := &fakeModel{reply: "The knowledge base has nothing on that."}
	p.Model = model
	a, err = p.Ask(ctx, rag.Request{Question: "What is the capital of France?"})
	if err != nil {
		t.Fatal(err)
	}
	if u := model.last().Messages[1].Content; strings.Contains(u, "EXTRA-CONTEXT") || !a.Abstained || len(a.Citations) != 0 {
		t.Errorf("model path: user turn %q, answer %+v", u, a)
	}
	var streamed *rag.Answer
	for ev, err := range p.Stream(ctx, rag.Request{Question: "What is the capital of France?"}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Answer != nil {
			streamed = ev.Answer
		}
	}
	if streamed == nil || !streamed.Abstained {
		t.Errorf("streamed: %+v", streamed)
	}
}

// TestRelevanceProbesTheKnowledgeBase: a question word the passages lack
// but the knowledge base holds elsewhere, under the run's scopes, weighs
// little; one the knowledge base lacks weighs most.
func TestRelevanceProbesTheKnowledgeBase(t *testing.T) {
	ctx := context.Background()
	k := newKB(t, nil, handbook()...)
	an, err := bm25.NewAnalyzer(bm25.AnalyzerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	p := &rag.Pipeline{Retriever: &rag.CollectionRetriever{Collection: k.coll, Mode: store.ModeKeyword}, MinRelevance: rag.DefaultMinRelevance}
	// One passage: "Refunds are paid within five days…"; "euros" is only
	// in the shipping policy.
	const q = "Are refunds paid in euros?"
	a, err := p.Ask(ctx, rag.Request{Question: q, TopK: 1})
	if err != nil {
		t.Fatal(err)
	}
	var docs []*document.Document
	for _, c := range a.Passages {
		docs = append(docs, c.Document)
	}
	alone := rag.Relevance(an, q, docs, nil)
	if a.Abstained || a.Relevance <= alone {
		t.Errorf("relevance %.3f with the probe, %.3f without; answer %+v", a.Relevance, alone, a)
	}
	// Under a scope that hides the shipping policy, "euros" reads as absent.
	scoped := *p
	scoped.Scope = filter.Neq("sourceName", "policies/shipping.md")
	b, err := scoped.Ask(ctx, rag.Request{Question: q, TopK: 1})
	if err != nil {
		t.Fatal(err)
	}
	if b.Relevance >= a.Relevance {
		t.Errorf("scoped relevance %.3f, want under %.3f", b.Relevance, a.Relevance)
	}
}
