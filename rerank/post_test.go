package rerank_test

import (
	"context"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/rerank"
)

func scored(content string, score float64) *document.Document {
	d := document.New(content)
	d.SetScore(score)
	return d
}

func contents(docs []*document.Document) string {
	var s []string
	for _, d := range docs {
		s = append(s, d.Content)
	}
	return strings.Join(s, "|")
}

func TestPostProcessors(t *testing.T) {
	ctx := context.Background()
	dup := []*document.Document{
		scored("refunds take five days to arrive", 0.9),
		scored("Refunds take five days to arrive.", 0.8),
		scored("gift cards are never refunded", 0.7),
		scored("refunds take five days to arrive on the card", 0.6),
	}
	vec := func(c string, s float64, v ...float32) *document.Document {
		d := scored(c, s)
		d.Embedding = v
		return d
	}
	for _, tc := range []struct {
		name string
		p    interface {
			Process(context.Context, string, []*document.Document) ([]*document.Document, error)
		}
		in   []*document.Document
		want string
	}{
		{"dedupe near repeats", rerank.Dedupe{}, dup, "refunds take five days to arrive|gift cards are never refunded|refunds take five days to arrive on the card"},
		{"dedupe looser", rerank.Dedupe{Similarity: 0.5}, dup, "refunds take five days to arrive|gift cards are never refunded"},
		{"mmr words: the repeat sinks below fresh material", rerank.MMR{Lambda: 0.5}, dup, "refunds take five days to arrive|gift cards are never refunded|Refunds take five days to arrive.|refunds take five days to arrive on the card"},
		{"mmr k", rerank.MMR{K: 2, Lambda: 0.5}, dup, "refunds take five days to arrive|gift cards are never refunded"},
		{"mmr embeddings", rerank.MMR{Lambda: 0.5}, []*document.Document{vec("a", 1, 1, 0), vec("a2", 0.9, 1, 0.01), vec("b", 0.5, 0, 1)}, "a|b|a2"},
		{"mmr one", rerank.MMR{}, dup[:1], "refunds take five days to arrive"},
		{"pack fits in rank order", &rerank.Pack{Budget: 64 + 5 + 12}, []*document.Document{
			{ID: "1", SourceName: "a.md", Content: "one two three four five"},
			{ID: "2", SourceName: "b.md", Content: strings.Repeat("word ", 10)},
			{ID: "3", SourceName: "c.md", Content: "six"},
		}, "one two three four five|six"},
		{"pack: overhead leaves nothing", &rerank.Pack{Budget: 10, Buffer: -1}, []*document.Document{{ID: strings.Repeat("x", 40), Content: "a"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := tc.p.Process(ctx, "q", tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := contents(out); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestPackCountsRealTokens checks the budget is in cl100k_base tokens, not
// words or bytes.
func TestPackCountsRealTokens(t *testing.T) {
	// "tokenization" is 2 tokens in cl100k_base; 12 bytes, one word.
	d := &document.Document{ID: "", SourceName: "", Content: "tokenization"}
	over := rerank.CitationOverhead([]*document.Document{d}) // "{}" → 0
	for _, tc := range []struct {
		budget int
		want   int
	}{{64 + over + 1, 0}, {64 + over + 2, 1}} {
		out, err := (&rerank.Pack{Budget: tc.budget}).Process(context.Background(), "q", []*document.Document{d})
		if err != nil || len(out) != tc.want {
			t.Errorf("budget %d: %d passages, want %d (%v)", tc.budget, len(out), tc.want, err)
		}
	}
}
