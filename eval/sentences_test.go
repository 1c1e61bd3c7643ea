package eval

import (
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/rag"
)

func TestSentenceScores(t *testing.T) {
	an, err := bm25.NewAnalyzer(bm25.AnalyzerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	g := Golden{ID: "q", Question: "How long do refunds take?", Sources: []string{"policies/refunds.md"},
		Answers: []string{"Refunds are paid within five days of the return.", "A refund goes back to the card that paid."}}
	passages := []rag.Citation{{N: 1, Source: "docs/policies/refunds.md"}, {N: 2, Source: "faq.md"}}
	for _, tc := range []struct {
		name   string
		g      Golden
		a      rag.Answer
		scores map[string]float64 // absent metrics must be absent
	}{
		{"quotes from the answer and its source", g, rag.Answer{Text: "Refunds are paid within five days of the return [1].", Passages: passages,
			Quotes: []rag.Quote{{Text: "Refunds are paid within five days of the return.", N: 1}, {Text: "Opening hours are nine to five.", N: 1}}},
			map[string]float64{SentencePrecision: 1, SentenceRecall: 0.5, Answered: 1, Markup: 0}},
		{"a quote from elsewhere that does not answer", g, rag.Answer{Text: "Shipping is free [2].", Passages: passages,
			Quotes: []rag.Quote{{Text: "Shipping is free of charge for all orders.", N: 2}, {Text: "A refund goes back to the card that paid, always.", N: 2}}},
			map[string]float64{SentencePrecision: 0.5, SentenceRecall: 0.5, Answered: 1, Markup: 0}},
		{"a written answer is judged by its statements", g, rag.Answer{Text: "Refunds are paid within five days of the return. See **the policy**.", Passages: passages},
			map[string]float64{SentencePrecision: 0.5, SentenceRecall: 0.5, Answered: 1, Markup: 1}},
		{"abstaining on an answerable question", g, rag.Answer{Abstained: true, Text: rag.NotRelevant},
			map[string]float64{SentenceRecall: 0, Answered: 0}},
		{"abstaining on an unanswerable question", Golden{ID: "u", Question: "What is the capital of France?", Unanswerable: true},
			rag.Answer{Abstained: true, Text: rag.NotRelevant}, map[string]float64{Abstention: 1}},
		{"answering an unanswerable question", Golden{ID: "u", Question: "What is the capital of France?", Unanswerable: true},
			rag.Answer{Text: "Paris [1].", Passages: passages, Quotes: []rag.Quote{{Text: "Paris.", N: 1}}}, map[string]float64{Abstention: 0, Markup: 0}},
	} {
		got := sentenceScores(an, tc.g, &tc.a)
		for _, m := range SentenceMetrics {
			want, ok := tc.scores[m]
			sc, has := got[m]
			if ok != has || (ok && sc.Score != want) {
				t.Errorf("%s: %s = %+v (present %v), want %v (present %v)", tc.name, m, sc, has, want, ok)
			}
		}
	}
}

func TestHasMarkup(t *testing.T) {
	for _, tc := range []struct {
		text string
		want bool
	}{
		{"Refunds are paid within five days [1].", false},
		{"Run `quarry ask **x**` or `<b>` in code [2].", false},
		{"See [the guide](guide.md) [1].", true},
		{"See [Chapter 2][ch2] [1].", true},
		{"A <!-- ignore --> comment.", true},
		{"A <b>bold</b> word.", true},
		{"This is **strong**.", true},
		{"The *k*th receive.", true},
		{"Intro {#intro} heading.", true},
		{"## A heading", true},
		{"2 * 3 * 4 is arithmetic.", false},
	} {
		if got := HasMarkup(tc.text); got != tc.want {
			t.Errorf("HasMarkup(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

func TestReadGoldenUnanswerable(t *testing.T) {
	gs, err := ReadGolden(strings.NewReader(`{"id":"a","question":"q?","sources":["a.md"],"answers":["It is so."]}
{"id":"u","question":"u?","unanswerable":true}`))
	if err != nil || len(gs) != 2 || len(gs[0].Answers) != 1 || !gs[1].Unanswerable {
		t.Fatalf("%+v %v", gs, err)
	}
	if _, err := ReadGolden(strings.NewReader(`{"id":"u","question":"u?","unanswerable":true,"sources":["a.md"]}`)); err == nil {
		t.Error("an unanswerable case with sources was read")
	}
}
