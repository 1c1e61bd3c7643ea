package split_test

import (
	"slices"
	"testing"

	"github.com/quarry-rag/quarry/split"
)

func TestSentence(t *testing.T) {
	tests := []struct {
		name string
		cfg  split.SentenceConfig
		text string
		want []string
	}{
		{"grouped", split.SentenceConfig{MaxWords: 10}, "First one. Second one.", []string{"First one. Second one."}},
		{"lowercase after a period is not a sentence end", split.SentenceConfig{MaxWords: 4}, "See e.g. this case. Then more.",
			[]string{"See e.g. this case.", "Then more."}},
		{"blank line with spaces is a paragraph break", split.SentenceConfig{MaxWords: 2}, "one two\n \t\nthree",
			[]string{"one two", "three"}},
		{"uppercase beyond Latin", split.SentenceConfig{MaxWords: 2}, "Один два. Три четыре.", []string{"Один два.", "Три четыре."}},
		{"opening guillemet", split.SentenceConfig{MaxWords: 2}, "Il dit. «Bonjour» ensuite.", []string{"Il dit.", "«Bonjour» ensuite."}},
		{"overlap from the previous chunk", split.SentenceConfig{MaxWords: 4, OverlapWords: 1}, "One two. Three four. Five six.",
			[]string{"One two. Three four.", "four. Five six."}},
		{"overlap never exceeds max", split.SentenceConfig{MaxWords: 4, OverlapWords: 3}, "One two three. Four five six.",
			[]string{"One two three.", "three. Four five six."}},
		{"long sentence pieces carry overlap", split.SentenceConfig{MaxWords: 4, OverlapWords: 1}, "Hi. A b c d e f g",
			[]string{"Hi.", "Hi. A b c", "c d e f", "f g"}},
		{"packing restarts after the pieces", split.SentenceConfig{MaxWords: 3}, "a b c d. E f.", []string{"a b c", "d.", "E f."}},
		{"min words", split.SentenceConfig{MaxWords: 6, MinWords: 3}, "One two three four five six. Seven eight. Nine ten eleven twelve thirteen.",
			[]string{"One two three four five six. Seven eight.", "Nine ten eleven twelve thirteen."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := split.NewSentence(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			chunks, err := s.Split(fileDoc("a.txt", tt.text))
			if err != nil {
				t.Fatal(err)
			}
			if got := contents(chunks); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSentenceProvenance(t *testing.T) {
	s, err := split.NewSentence(split.SentenceConfig{MaxWords: 3})
	if err != nil {
		t.Fatal(err)
	}
	text := "  First  line here.\nSecond\tline.\n\nThird one now."
	chunks, err := s.Split(fileDoc("a.txt", text))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		content          string
		start, end       int
		lineStart, lineE int
	}{
		{"First line here.", 2, 19, 1, 1},
		{"Second line.", 20, 32, 2, 2},
		{"Third one now.", 34, 48, 4, 4},
	}
	if len(chunks) != len(want) {
		t.Fatalf("chunks %q", contents(chunks))
	}
	for i, w := range want {
		p := chunks[i].Provenance
		if chunks[i].Content != w.content || p.CharStart != w.start || p.CharEnd != w.end || p.LineStart != w.lineStart || p.LineEnd != w.lineE {
			t.Errorf("chunk %d: %q %+v, want %+v", i, chunks[i].Content, p, w)
		}
	}
}
