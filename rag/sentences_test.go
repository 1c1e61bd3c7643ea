package rag

import (
	"slices"
	"testing"
)

func TestSentences(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"plain", "Refunds are paid within five days. Gift cards are never refunded! Is shipping free of charge? Yes, it is always free.",
			[]string{"Refunds are paid within five days.", "Gift cards are never refunded!", "Is shipping free of charge?", "Yes, it is always free."}},
		{"wrapped lines join", "Refunds are paid\nwithin five days of\nthe return.",
			[]string{"Refunds are paid within five days of the return."}},
		{"abbreviations and initials", "Use a tool, e.g. the CLI for this. Ask Dr. Smith about it today. J. R. Tolkien wrote many books.",
			[]string{"Use a tool, e.g. the CLI for this.", "Ask Dr. Smith about it today.", "J. R. Tolkien wrote many books."}},
		{"numbers and lower case", "Version 9.6 added this feature today. it continues here. 2024 was a good year for us.",
			[]string{"Version 9.6 added this feature today. it continues here.", "2024 was a good year for us."}},
		{"markdown furniture", "# Title\n\nFirst real sentence is here.\n\n| a | b |\n|---|---|\n\n```\ncode() is skipped here.\n```\n\n---\n> quoted text is skipped too\n\n- A bullet item with words.\n2. A numbered item with words.",
			[]string{"First real sentence is here.", "A bullet item with words.", "A numbered item with words."}},
		{"short and symbolic fragments", "`CONCURRENTLY`\n\nOK then.\n\n= 1 + 2 * 3 / 4 =",
			nil},
		{"inline code and closing quotes", "Specify the `CONCURRENTLY` option of `CREATE INDEX`. The index is marked “invalid.” Then it is rebuilt again.",
			[]string{"Specify the `CONCURRENTLY` option of `CREATE INDEX`.", "The index is marked “invalid.”", "Then it is rebuilt again."}},
		{"a passage cut inside a code block", "x := f(y) // Not a sentence at all.\n```\n\nThe first real sentence follows the block.\n\n```go\nz := 2 // Nor is this one here.",
			[]string{"The first real sentence follows the block."}},
		{"markup is not quoted", "<!-- ignore\nthis -->\nSee [Chapter 2][ch2] and [the guide](guide.md) for **bold** and *k*th steps.\n" +
			"[ch2]: https://example.com/ch2\nA <b>tag</b> and an image ![a chart](c.png) here. Code `a *b* [c](d)` stays as written. Read [`os.Stat`](/pkg/os#Stat) for [the `x` flag][x] today.",
			[]string{"See Chapter 2 and the guide for bold and kth steps.", "A tag and an image a chart here.", "Code `a *b* [c](d)` stays as written.", "Read `os.Stat` for the `x` flag today."}},
	} {
		var got []string
		for _, s := range sentences(tc.in) {
			got = append(got, s.text)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

func TestSentenceLines(t *testing.T) {
	in := "# Title\n\nFirst sentence wraps from line two\nonto line three. Second one\nstarts on three.\n\n<!-- a\ncomment -->\nLast sentence sits on line eight."
	var got []int
	for _, s := range sentences(in) {
		got = append(got, s.line)
	}
	if want := []int{2, 3, 8}; !slices.Equal(got, want) {
		t.Errorf("lines %v, want %v", got, want)
	}
}
