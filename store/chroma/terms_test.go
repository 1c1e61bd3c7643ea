package chroma

import (
	"math"
	"testing"
)

// TestFormIsOneWordPerTerm: every term's form is one word without spaces
// or the pair mark, readable for letters and digits, and no two terms
// share a form.
func TestFormIsOneWordPerTerm(t *testing.T) {
	terms := []string{"refund", "größe", "日本", "x1", "a b", "a+b", "_6162", "ab", "c++", "foo bar", "foo_bar", "tab\tin", "|", "+"}
	want := map[string]string{"refund": "refund", "größe": "größe", "日本": "日本", "a b": "a+b", "foo bar": "foo+bar"}
	seen := map[string]string{}
	for _, term := range terms {
		f := form(term)
		if w, ok := want[term]; ok && f != w {
			t.Errorf("form(%q) = %q, want %q", term, f, w)
		}
		for _, r := range f {
			if r == ' ' || r == '\t' {
				t.Errorf("form(%q) = %q holds a space", term, f)
			}
		}
		if f == pairMark {
			t.Errorf("form(%q) is the pair mark", term)
		}
		if other, dup := seen[f]; dup {
			t.Errorf("%q and %q share the form %q", term, other, f)
		}
		seen[f] = term
	}
}

// TestScoreIsBM25: a record's score is BM25 over its terms, code pairs
// counted as terms but not in its length.
func TestScoreIsBM25(t *testing.T) {
	p := defaultBM25()
	idf := map[string]float64{"refund": 1.5, "a+b": 2}
	doc := " refund policy refund | a+b "
	norm := p.K1 * (1 - p.B + p.B*3/p.AvgLen) // three terms before the mark
	want := 1.5*2*(p.K1+1)/(2+norm) + 2*1*(p.K1+1)/(1+norm)
	if got := score(doc, idf, p); math.Abs(got-want) > 1e-12 {
		t.Errorf("score %v, want %v", got, want)
	}
	if got := score(" policy ", idf, p); got != 0 {
		t.Errorf("score of a record without the terms: %v", got)
	}
}

// TestCollectionNames: a Quarry name maps to a valid Chroma name (which
// ends in a letter or digit) and back, and to no other name's.
func TestCollectionNames(t *testing.T) {
	b := &Backend{prefix: "quarry"}
	seen := map[string]string{}
	for _, name := range []string{"kb", "kb-", "kb_", "kb-q", "a", "team-a"} {
		c := b.cname(name)
		if last := c[len(c)-1]; !('a' <= last && last <= 'z' || '0' <= last && last <= '9') {
			t.Errorf("%q → %q ends in %q", name, c, last)
		}
		if back, ok := b.qname(c); !ok || back != name {
			t.Errorf("%q → %q → %q, %v", name, c, back, ok)
		}
		if other, dup := seen[c]; dup {
			t.Errorf("%q and %q share %q", name, other, c)
		}
		seen[c] = name
	}
	for _, c := range []string{"quarry-state", "quarry-threads", "other_kb", "quarry_kb.q"} {
		if n, ok := b.qname(c); ok {
			t.Errorf("%q read as Quarry collection %q", c, n)
		}
	}
}
