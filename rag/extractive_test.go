package rag_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed/hash"
	"github.com/quarry-rag/quarry/rag"
	"github.com/quarry-rag/quarry/store"
)

func handbook() []*document.Document {
	return []*document.Document{
		sourced("Our shop sells books and games. Refunds are paid within five days of the return. "+
			"A refund goes back to the card that paid. Opening hours are nine to five.", "policies/refunds.md", "Refunds"),
		sourced("Gift cards are never refunded. Gift cards never expire. "+
			"A gift card can be used online and in shops.", "policies/gift-cards.md", "Refunds", "Gift cards"),
		sourced("Shipping takes two days. Express shipping takes one day and costs five euros.", "policies/shipping.md", "Shipping"),
		sourced("Refunds are paid within five days of the return, as our policy says. Returns need the receipt.", "faq.md", "FAQ"),
	}
}

// checkQuotes holds an extractive answer to its promise: each quote occurs
// in its passage (markup and spacing aside), is followed by its citation, and the
// citations are exactly the quoted passages.
func checkQuotes(t *testing.T, a *rag.Answer) {
	t.Helper()
	if !a.Extractive || len(a.Quotes) == 0 {
		t.Fatalf("not an extractive answer: %+v", a)
	}
	var parts []string
	cited := map[int]bool{}
	for _, q := range a.Quotes {
		// A chunk may begin inside a code span, so the checker sets code
		// and emphasis markers aside on both sides.
		bare := strings.NewReplacer("*", "", "`", "")
		content := bare.Replace(rag.Plain(a.Passages[q.N-1].Text))
		if !strings.Contains(content, bare.Replace(q.Text)) {
			t.Errorf("quote %q is not in passage %d: %q", q.Text, q.N, content)
		}
		parts = append(parts, q.Text+" ["+strconv.Itoa(q.N)+"]")
		cited[q.N] = true
	}
	if a.Text != strings.Join(parts, " ") {
		t.Errorf("text %q is not its quotes", a.Text)
	}
	if len(a.Citations) != len(cited) {
		t.Errorf("citations %+v for quotes %+v", a.Citations, a.Quotes)
	}
	for _, c := range a.Citations {
		if !cited[c.N] {
			t.Errorf("citation %d quotes nothing", c.N)
		}
	}
}

func TestExtractiveAnswer(t *testing.T) {
	k := newKB(t, nil, handbook()...)
	emb, _ := hash.New(hash.Config{})
	for _, tc := range []struct {
		question, wantSource, wantQuote string
		embedder                        bool
	}{
		{"How long until refunds are paid?", "policies/refunds.md", "Refunds are paid within five days of the return.", false},
		{"Are gift cards refunded?", "policies/gift-cards.md", "Gift cards are never refunded.", false},
		{"How much does express shipping cost?", "policies/shipping.md", "Express shipping takes one day and costs five euros.", true},
	} {
		p := &rag.Pipeline{
			Retriever:  &rag.CollectionRetriever{Collection: k.coll, Mode: store.ModeKeyword},
			Extractive: rag.Extractive{MaxSentences: 3},
		}
		if tc.embedder {
			p.Extractive.Embedder = emb
		}
		a, err := p.Ask(context.Background(), rag.Request{Question: tc.question})
		if err != nil {
			t.Fatal(err)
		}
		checkQuotes(t, a)
		if a.Quotes[0].Text != tc.wantQuote && !strings.Contains(a.Text, tc.wantQuote) {
			t.Errorf("%q: answer %q lacks %q", tc.question, a.Text, tc.wantQuote)
		}
		found := false
		for _, c := range a.Citations {
			found = found || c.Source == tc.wantSource
		}
		if !found {
			t.Errorf("%q: %q does not cite %s", tc.question, a.Text, tc.wantSource)
		}
		if strings.Contains(a.Text, "Opening hours") || strings.Contains(a.Text, "books and games") {
			t.Errorf("%q: an off-topic sentence was quoted: %q", tc.question, a.Text)
		}
		if len(a.Quotes) > 3 {
			t.Errorf("%d sentences, cap 3", len(a.Quotes))
		}
	}
}

func TestExtractiveSkipsRepeats(t *testing.T) {
	// Two passages say the same thing: the answer says it once.
	k := newKB(t, nil, handbook()...)
	p := &rag.Pipeline{Retriever: &rag.CollectionRetriever{Collection: k.coll, Mode: store.ModeKeyword}}
	a, err := p.Ask(context.Background(), rag.Request{Question: "refunds paid within five days of the return"})
	if err != nil {
		t.Fatal(err)
	}
	checkQuotes(t, a)
	if n := strings.Count(a.Text, "Refunds are paid within five days of the return"); n != 1 {
		t.Errorf("the same sentence quoted %d times: %q", n, a.Text)
	}
}

func TestExtractiveBudget(t *testing.T) {
	long := []string{
		"Refunds are paid once the warehouse has checked the returned parcel.",
		"A refund paid by card reaches the account within five working days.",
		"Refunds for orders paid with vouchers are paid back as new vouchers.",
		"Partial refunds are paid when only some items of an order come back.",
		"Refunds are never paid in cash, whatever the original payment was.",
		"Late refunds are paid with an apology and a small discount code.",
	}
	k := newKB(t, nil, sourced(strings.Join(long, " "), "rules.md"))
	p := &rag.Pipeline{Retriever: &rag.CollectionRetriever{Collection: k.coll, Mode: store.ModeKeyword},
		Extractive: rag.Extractive{MaxSentences: 10, MaxChars: 250}}
	a, err := p.Ask(context.Background(), rag.Request{Question: "when are refunds paid"})
	if err != nil {
		t.Fatal(err)
	}
	checkQuotes(t, a)
	chars := 0
	for _, q := range a.Quotes {
		chars += utf8.RuneCountInString(q.Text)
	}
	if chars > 250 || len(a.Quotes) < 2 {
		t.Errorf("%d quotes, %d characters, budget 250", len(a.Quotes), chars)
	}
}

func TestExtractiveWithoutPassages(t *testing.T) {
	k := newKB(t, nil)
	p := &rag.Pipeline{Retriever: &rag.CollectionRetriever{Collection: k.coll, Mode: store.ModeKeyword}, Threads: k.threads(t)}
	a, err := p.Ask(context.Background(), rag.Request{Question: "anything?", Thread: "t"})
	if err != nil || a.Text != rag.NoPassages || !a.Extractive || len(a.Citations) != 0 {
		t.Fatalf("%+v %v", a, err)
	}
	// Even with nothing in common with the question, a retrieved passage
	// gives its first sentence rather than nothing.
	p = &rag.Pipeline{Retriever: &staticRetriever{docs: []*document.Document{sourced("Shipping takes two days in Europe.", "s.md")}}}
	a, err = p.Ask(context.Background(), rag.Request{Question: "refunds?"})
	if err != nil || a.Text != "Shipping takes two days in Europe. [1]" {
		t.Errorf("fallback: %+v %v", a, err)
	}
	// A streamed extractive answer is the same answer, in one piece.
	var text strings.Builder
	var final *rag.Answer
	for ev, err := range p.Stream(context.Background(), rag.Request{Question: "refunds?"}) {
		if err != nil {
			t.Fatal(err)
		}
		text.WriteString(ev.Text)
		if ev.Answer != nil {
			final = ev.Answer
		}
	}
	if text.String() != a.Text || final == nil || !final.Extractive {
		t.Errorf("streamed extractive: %q %+v", text.String(), final)
	}
}

// TestExtractiveAspects: a question of several parts quotes each part's
// best sentence, from the passages found for it when they were retrieved,
// and never the same sentence twice.
func TestExtractiveAspects(t *testing.T) {
	docs := []*document.Document{
		sourced("Refunds are paid within five days of the return. Refunds go back to the card.", "refunds.md", "Refunds"),
		sourced("Index of policies. Refunds are paid within five days of the return. Shipping takes two days.", "index.md", "Index"),
		sourced("Shipping takes two days. Express shipping takes one day and costs five euros.", "shipping.md", "Shipping"),
		sourced("Gift cards are never refunded.", "gift-cards.md", "Gift cards"),
	}
	for i, d := range docs {
		d.ID = "d" + strconv.Itoa(i+1)
	}
	p := &rag.Pipeline{Retriever: &staticRetriever{docs: docs}}
	q := "How fast are refunds paid and how long does express shipping take?"
	a, err := p.Ask(context.Background(), rag.Request{Question: q, Aspects: []rag.Aspect{
		{Text: "How fast are refunds paid", IDs: []string{"d1", "d2"}},
		{Text: "how long does express shipping take", IDs: []string{"d3"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	checkQuotes(t, a)
	seen := map[string]bool{}
	var srcs []string
	for _, qt := range a.Quotes {
		if seen[qt.Text] {
			t.Errorf("%q quoted twice: %s", qt.Text, a.Text)
		}
		seen[qt.Text] = true
	}
	for _, c := range a.Citations {
		srcs = append(srcs, c.Source)
	}
	if !strings.Contains(a.Text, "Express shipping takes one day") || !slices.Contains(srcs, "refunds.md") || !slices.Contains(srcs, "shipping.md") {
		t.Errorf("answer %q cites %v", a.Text, srcs)
	}
}
