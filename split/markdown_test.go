package split_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/split"
)

const guide = `---
title: Guide
---
Quarry guide, preamble before any heading.

# Install

Download the binary and put it on your PATH.

## From source

Run go install with the module path.

### Requirements

Go 1.26 or newer, nothing else.

## Tiny

# Use

` + "```sh" + `
# not a heading: a shell comment
quarry ingest ./docs
` + "```" + `

Setext title
------------

Text under a Setext heading of level two.
`

func TestMarkdownHeadingPaths(t *testing.T) {
	m, err := split.NewMarkdown(split.MarkdownConfig{})
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := m.Split(fileDoc("guide.md", guide))
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		headings   []string
		first      string
		start, end int
	}
	wants := []want{
		{nil, "---\ntitle: Guide\n---\nQuarry guide", 1, 4},
		{[]string{"Install"}, "# Install\n\nDownload", 6, 8},
		{[]string{"Install", "From source"}, "## From source", 10, 12},
		{[]string{"Install", "From source", "Requirements"}, "### Requirements", 14, 16},
		// "## Tiny" is under 20 characters: it starts the next chunk, so
		// its text stays searchable.
		{[]string{"Tiny · Use"}, "## Tiny\n\n# Use\n\n```sh\n# not a heading", 18, 25}, // a merged chunk names both sections
		{[]string{"Use", "Setext title"}, "Setext title\n---", 27, 30},
	}
	if len(chunks) != len(wants) {
		t.Fatalf("got %d chunks: %q", len(chunks), contents(chunks))
	}
	for i, w := range wants {
		c := chunks[i]
		p := c.Provenance
		if !reflect.DeepEqual(p.HeadingPath, w.headings) || !strings.HasPrefix(c.Content, w.first) || p.LineStart != w.start || p.LineEnd != w.end {
			t.Errorf("chunk %d: headings %q lines %d-%d content %q\nwant %q lines %d-%d starting %q",
				i, p.HeadingPath, p.LineStart, p.LineEnd, c.Content, w.headings, w.start, w.end, w.first)
		}
		if c.Content != guide[p.CharStart:p.CharEnd] || c.Content != strings.TrimSpace(c.Content) {
			t.Errorf("chunk %d is not the trimmed text at its offsets", i)
		}
	}
}

func TestMarkdownHeadingForms(t *testing.T) {
	tests := []struct {
		text string
		want [][]string // heading path of each chunk
	}{
		{"# Title #\n\nclosing hashes are not part of the title", [][]string{{"Title"}}},
		{"#NoSpace is not a heading, just a paragraph of text", [][]string{nil}},
		{"    # indented four spaces is code, not a heading", [][]string{nil}},
		{"Title\n=====\n\nA level one Setext heading here.", [][]string{{"Title"}}},
		{"- item\n---\n\nA list item is not a Setext title.", [][]string{nil}},
		{"# A\n\nsection a has some text\n\n### C\n\nlevel three under one\n\n## B\n\nB replaces C in the path",
			[][]string{{"A"}, {"A", "C"}, {"A", "B"}}},
		{"~~~\n# inside a tilde fence\n~~~\n\n# Real heading with body text", [][]string{nil, {"Real heading with body text"}}},
	}
	m, err := split.NewMarkdown(split.MarkdownConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		chunks, err := m.Split(fileDoc("a.md", tt.text))
		if err != nil {
			t.Fatal(err)
		}
		var got [][]string
		for _, c := range chunks {
			got = append(got, c.Provenance.HeadingPath)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: headings %q, want %q", tt.text, got, tt.want)
		}
	}
}

func TestMarkdownLongSectionIsCutRecursively(t *testing.T) {
	text := "# Intro\n\nShort intro paragraph for the guide.\n\n## Details\n\n" + prose(800) + "\n\n## End\n\nThe closing words of the guide."
	tok := new(split.Tokenizer)
	m, err := split.NewMarkdown(split.MarkdownConfig{Budget: split.RecursiveConfig{MaxTokens: 200, OverlapTokens: 20, Tokenizer: tok}})
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := m.Split(fileDoc("a.md", text))
	if err != nil {
		t.Fatal(err)
	}
	details := 0
	for i, c := range chunks {
		if n := countTokens(t, tok, c.Content); n > 200 {
			t.Errorf("chunk %d has %d tokens", i, n)
		}
		if reflect.DeepEqual(c.Provenance.HeadingPath, []string{"Intro", "Details"}) {
			details++
		}
	}
	if details < 4 {
		t.Errorf("the long section gave %d chunks", details)
	}
	if first, last := chunks[0], chunks[len(chunks)-1]; !reflect.DeepEqual(first.Provenance.HeadingPath, []string{"Intro"}) ||
		!reflect.DeepEqual(last.Provenance.HeadingPath, []string{"Intro", "End"}) {
		t.Errorf("first %q last %q", first.Provenance.HeadingPath, last.Provenance.HeadingPath)
	}
}

// TestMarkdownCutLeavesNoHeadingOnlyChunk: a long section whose first
// block is larger than the budget would leave its heading line alone in a
// chunk; that piece is dropped (its heading is in the next one's path).
func TestMarkdownCutLeavesNoHeadingOnlyChunk(t *testing.T) {
	// As the PostgreSQL manual's HTML converts: a tip inside a list item,
	// its paragraph alone over the budget.
	para := func(n int) string { return strings.Join(strings.Fields(prose(n)), " ") }
	text := "# Guide\n\n- The first item of a list. " + para(30) + "\n\n  ### Tip\n\n  " + para(150) + "\n- " + para(150) + "\n"
	tok := new(split.Tokenizer)
	m, err := split.NewMarkdown(split.MarkdownConfig{Budget: split.RecursiveConfig{MaxTokens: 120, OverlapTokens: 10, Tokenizer: tok}})
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := m.Split(fileDoc("tip.md", text))
	if err != nil {
		t.Fatal(err)
	}
	tips := 0
	for i, c := range chunks {
		if n := len([]rune(strings.TrimSpace(c.Content))); n < 20 {
			t.Errorf("chunk %d is tiny: %q", i, c.Content)
		}
		if reflect.DeepEqual(c.Provenance.HeadingPath, []string{"Guide", "Tip"}) {
			tips++
		}
	}
	if tips < 2 {
		t.Errorf("the long section gave %d chunks", tips)
	}
}

// TestMarkdownShortSectionsKept: a section under 20 characters is never
// dropped: it joins the next section's chunk, or stands alone when last;
// a heading that only opens its subsections stays in their paths.
func TestMarkdownShortSectionsKept(t *testing.T) {
	m, err := split.NewMarkdown(split.MarkdownConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"# Config\n\n## Port\n\nUse 8080.\n\n## Host\n\nThe host name is read from the environment.\n", []string{"Use 8080.", "The host name"}},
		{"# Config\n\n## Host\n\nThe host name is read from the environment.\n\n## Port\n\nUse 8080.\n", []string{"The host name", "Use 8080."}},
		{"Short note.\n", []string{"Short note."}},
		{"## Port\n\nUse 8080.\n", []string{"Use 8080."}},
	} {
		chunks, err := m.Split(fileDoc("c.md", tc.text))
		if err != nil {
			t.Fatal(err)
		}
		all := strings.Join(contents(chunks), "\n")
		for _, w := range tc.want {
			if !strings.Contains(all, w) {
				t.Errorf("%q: %q lost from %q", tc.text, w, contents(chunks))
			}
		}
	}
}

// TestPlainHeadings: heading paths are the text a reader sees, without
// Markdown's syntax: escapes resolved, emphasis, code and link markup and
// inline HTML dropped, identifiers' underscores kept.
func TestPlainHeadings(t *testing.T) {
	tests := []struct{ in, want string }{
		{`\#[derive] and *Option*`, "#[derive] and Option"},
		{"**Bold** `code` [a link](x.html) ![logo](l.png)", "Bold code a link logo"},
		{"snake_case_name and __init__ stay", "snake_case_name and init stay"},
		{`<span class="filename">Filename: src/main.rs</span>`, "Filename: src/main.rs"},
		{`The \*star\* escape`, "The *star* escape"},
		{"Vec<T> and a < b", "Vec<T> and a < b"},
		{"Plain", "Plain"},
	}
	for _, tt := range tests {
		if got := split.PlainHeading(tt.in); got != tt.want {
			t.Errorf("PlainHeading(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestStripHTMLTags: inline HTML in Markdown keeps its text, code spans
// keep their tags, and angle brackets that are not HTML stay.
func TestStripHTMLTags(t *testing.T) {
	tests := []struct{ in, want string }{
		{`<span class="filename">Filename: src/main.rs</span>`, "Filename: src/main.rs"},
		{"Press <kbd>Ctrl</kbd>+<kbd>C</kbd> to stop.<br>", "Press Ctrl+C to stop."},
		{"Write `<span>` for a span.", "Write `<span>` for a span."},
		{"Use Vec<T> when a < b and c > d.", "Use Vec<T> when a < b and c > d."},
	}
	for _, tt := range tests {
		if got := split.StripHTMLTags(tt.in); got != tt.want {
			t.Errorf("StripHTMLTags(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
