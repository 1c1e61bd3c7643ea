package bm25

import (
	"bytes"
	"slices"
	"testing"
)

func TestCodePairs(t *testing.T) {
	a, err := NewAnalyzer(AnalyzerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		text      string
		code      bool
		wantPairs []string
	}{
		{"If you want it, let it be.", false, nil}, // prose never pairs
		{"Use `if let` to match one pattern.", false, []string{"if let"}},
		{"```python\nif x is not None:\n    pass\n```\nAnd it is done.", false,
			[]string{"python if", "if x", "x is", "is not", "not none"}},
		{"for k, v := range m { if v == nil { break } }", true,
			[]string{"for k", "m if", "if v"}},
	} {
		_, pairs := a.AnalyzeDocument(tc.text, tc.code)
		if !slices.Equal(pairs, tc.wantPairs) {
			t.Errorf("%q (code %v): pairs %q, want %q", tc.text, tc.code, pairs, tc.wantPairs)
		}
	}
	if _, pairs := a.AnalyzeQuery("when should I use if let instead of match"); !slices.Contains(pairs, "if let") {
		t.Errorf("query pairs %q lack %q", pairs, "if let")
	}
	keep, err := NewAnalyzer(AnalyzerConfig{KeepStopWords: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, pairs := keep.AnalyzeDocument("`if let`", false); pairs != nil {
		t.Errorf("an analyzer that keeps stop words pairs %q", pairs)
	}
}

// TestCodeQueriesFindCode: a question whose words are code syntax made of
// stop words finds the passage that shows that code, not prose that merely
// shares its other words — and prose scores as it did before pairs.
func TestCodeQueriesFindCode(t *testing.T) {
	x, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	docs := []Doc{
		{ID: "prose", Text: "Match arms are checked in order; use a match when several patterns apply instead of nesting."},
		{ID: "code", Text: "Use `if let` when only one pattern matters."},
		{ID: "file", Text: "if let Some(x) = opt {\n    println!(\"{x}\");\n}", Code: true},
		{ID: "other", Text: "Instead, when it rains, let the garden be."},
		{ID: "match2", Text: "A match expression compares a value against patterns; use it instead of long chains."},
		{ID: "match3", Text: "Each match arm must be exhaustive, so use a wildcard instead of listing every case."},
		{ID: "match4", Text: "Use match guards instead of nested conditions inside one arm."},
	}
	for i, d := range docs {
		if err := x.Add(uint32(i), d); err != nil {
			t.Fatal(err)
		}
	}
	hits := x.Search("when should I use if let instead of match", 7, SearchOptions{})
	rank := map[string]int{}
	for i, h := range hits {
		rank[h.ID] = i + 1
	}
	if rank["code"] != 1 || rank["file"] == 0 || rank["file"] > rank["match2"] {
		t.Errorf("hits %+v: want the code span first and the code file above prose on match", hits)
	}
	// Without code, no pair term exists and scores are BM25's over words.
	y, _ := New(Config{})
	_ = y.Add(0, docs[0])
	_ = y.Add(1, docs[3])
	if x.Terms() == 0 || y.Search("use instead of match", 2, SearchOptions{})[0].ID != "prose" {
		t.Error("prose search changed")
	}
}

// TestCodePairsPersist: an index with code pairs reads back whole, pairs
// and lengths included (a pair is not part of a document's length).
func TestCodePairsPersist(t *testing.T) {
	x, _ := New(Config{})
	_ = x.Add(0, Doc{ID: "code", Text: "Use `if let` when only one pattern matters."})
	_ = x.Add(1, Doc{ID: "file", Text: "for x in items:\n    if x is not None: print(x)", Code: true})
	var buf bytes.Buffer
	if _, err := x.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	y, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"if let", "is not None", "for x in"} {
		a, b := x.Search(q, 2, SearchOptions{}), y.Search(q, 2, SearchOptions{})
		if len(a) == 0 || !slices.Equal(a, b) {
			t.Errorf("%q: %+v before writing, %+v after reading", q, a, b)
		}
	}
}
