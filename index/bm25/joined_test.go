package bm25

import (
	"bytes"
	"slices"
	"testing"
)

// TestJoinedParts checks a word joined across '.' or ':' is a term whole
// and by its parts, and numbers and abbreviations are left whole.
func TestJoinedParts(t *testing.T) {
	a, err := NewAnalyzer(AnalyzerConfig{NoStemming: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"l.TryLock", []string{"l.trylock", "trylock"}},
		{"sync.Mutex", []string{"sync.mutex", "sync", "mutex"}},
		{"std::vector", []string{"std", "vector"}}, // the segmenter splits a double colon
		{"pi is 3.14", []string{"pi", "3.14"}},
		{"e.g. this", []string{"e.g"}},
		{"docs.example.com", []string{"docs.example.com", "docs", "example", "com"}},
	} {
		if got := a.Analyze(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("%q: %q, want %q", tc.text, got, tc.want)
		}
	}
}

// TestJoinedPartsFindAndPersist checks a method named alone finds the
// text that names it with its receiver, before writing and after reading
// the index (a part counts towards the length either way).
func TestJoinedPartsFindAndPersist(t *testing.T) {
	x, _ := New(Config{})
	_ = x.Add(0, Doc{ID: "mem", Text: "A successful call to l.TryLock is equivalent to a call to l.Lock."})
	_ = x.Add(1, Doc{ID: "other", Text: "Locks are taken and released in order."})
	var buf bytes.Buffer
	if _, err := x.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	y, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"TryLock", "l.TryLock"} {
		a, b := x.Search(q, 2, SearchOptions{}), y.Search(q, 2, SearchOptions{})
		if len(a) == 0 || a[0].ID != "mem" || !slices.Equal(a, b) {
			t.Errorf("%q: %+v before writing, %+v after reading", q, a, b)
		}
	}
}
