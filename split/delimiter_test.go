package split_test

import (
	"slices"
	"testing"

	"github.com/quarry-rag/quarry/split"
)

func TestDelimiter(t *testing.T) {
	type span struct{ start, end int }
	tests := []struct {
		name  string
		cfg   split.DelimiterConfig
		text  string
		want  []string
		spans []span // CharStart/CharEnd of each chunk, when checked
	}{
		{"verbatim within max", split.DelimiterConfig{MaxLength: 10}, "a  b ", []string{"a  b "}, []span{{0, 5}}},
		{"characters not bytes", split.DelimiterConfig{MaxLength: 5}, "ééééé", []string{"ééééé"}, nil},
		{"empty parts dropped when packing", split.DelimiterConfig{MaxLength: 6}, "ab  cd   ef", []string{"ab cd", "ef"}, []span{{0, 6}, {9, 11}}},
		{"overlap", split.DelimiterConfig{MaxLength: 13, WordOverlap: 1}, "one two three four five six",
			[]string{"one two three", "three four", "four five six"}, []span{{0, 13}, {8, 18}, {14, 27}}},
		{"overlap dropped until the word fits", split.DelimiterConfig{MaxLength: 12, WordOverlap: 2}, "aa bb cc dddddddddd e",
			[]string{"aa bb cc", "dddddddddd e"}, nil},
		{"long word uncut", split.DelimiterConfig{MaxLength: 3, WordOverlap: 1}, "a bbbbbb c", []string{"a", "bbbbbb", "c"}, nil},
		{"custom separator", split.DelimiterConfig{MaxLength: 6, Separator: ", "}, "ab, cd, ef", []string{"ab, cd", "ef"}, nil},
		{"min length joins previous", split.DelimiterConfig{MaxLength: 10, MinLength: 5}, "ab cdefghij klmnopqrs tu abcdefghi vwxyz",
			[]string{"ab", "cdefghij", "klmnopqrs tu", "abcdefghi", "vwxyz"}, []span{{0, 2}, {3, 11}, {12, 24}, {25, 34}, {35, 40}}},
		{"default max keeps a paragraph", split.DelimiterConfig{}, "short text", []string{"short text"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := split.NewDelimiter(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			chunks, err := d.Split(fileDoc("a.txt", tt.text))
			if err != nil {
				t.Fatal(err)
			}
			if got := contents(chunks); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			for i, s := range tt.spans {
				if i < len(chunks) {
					if p := chunks[i].Provenance; p.CharStart != s.start || p.CharEnd != s.end {
						t.Errorf("chunk %d span [%d,%d), want [%d,%d)", i, p.CharStart, p.CharEnd, s.start, s.end)
					}
				}
			}
		})
	}
}

func TestDelimiterLines(t *testing.T) {
	d, err := split.NewDelimiter(split.DelimiterConfig{MaxLength: 8, Separator: "\n"})
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := d.Split(fileDoc("a.txt", "alpha\nbeta\n\ngamma\ndelta"))
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]int{{1, 1}, {2, 2}, {4, 4}, {5, 5}}
	if len(chunks) != len(want) {
		t.Fatalf("chunks %q", contents(chunks))
	}
	for i, c := range chunks {
		if got := [2]int{c.Provenance.LineStart, c.Provenance.LineEnd}; got != want[i] {
			t.Errorf("chunk %d %q lines %v, want %v", i, c.Content, got, want[i])
		}
	}
}
