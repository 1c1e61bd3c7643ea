package load

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/split"
)

// TestMarkdownMarkupStripped: HTML comments and link reference definitions
// leave a Markdown file's text (and its headings), code blocks keep them,
// and every line keeps its number.
func TestMarkdownMarkupStripped(t *testing.T) {
	src := strings.Join([]string{
		"# Guide",
		"",
		"Read [the next chapter][Chapter 2] first. <!-- ignore -->",
		"",
		"<!--",
		"# copy the output here",
		"Do not remove or links may break. -->",
		"## Setup",
		"",
		"Install it with the script.",
		"",
		"```html",
		"<!-- a comment in code stays -->",
		"[x]: kept-in-code.html",
		"```",
		"",
		"[Chapter 2]: ch02-00-guessing-game.html",
		`[id]: <https://example.com> "Title"`,
		"",
	}, "\n")
	docs, err := TextReader{}.Read(context.Background(), File{Path: "g.md", Kind: KindMarkdown, Data: []byte(src)})
	if err != nil {
		t.Fatal(err)
	}
	text := docs[0].Content
	for _, gone := range []string{"ignore", "copy the output", "Do not remove", "ch02-00", "example.com"} {
		if strings.Contains(text, gone) {
			t.Errorf("%q is still in the text:\n%s", gone, text)
		}
	}
	for _, kept := range []string{"Read [the next chapter][Chapter 2] first.", "<!-- a comment in code stays -->", "[x]: kept-in-code.html", "Install it with the script."} {
		if !strings.Contains(text, kept) {
			t.Errorf("%q was lost:\n%s", kept, text)
		}
	}
	if strings.Count(text, "\n") != strings.Count(src, "\n") {
		t.Errorf("line count changed: %d, source %d", strings.Count(text, "\n"), strings.Count(src, "\n"))
	}
	md, err := split.NewMarkdown(split.MarkdownConfig{})
	if err != nil {
		t.Fatal(err)
	}
	docs[0].SourceType, docs[0].SourceName = "file", "g.md"
	chunks, err := split.SplitAll(md, docs)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chunks {
		for _, h := range c.Provenance.HeadingPath {
			if strings.Contains(h, "copy the output") {
				t.Errorf("a commented-out line became a heading: %q", c.Provenance.HeadingPath)
			}
		}
		if strings.Contains(c.Content, "Install it with") && c.Provenance.LineStart != 8 {
			t.Errorf("the Setup chunk starts at line %d, want 8", c.Provenance.LineStart)
		}
	}
}

func TestSVGReadsTextOnly(t *testing.T) {
	svg := `<?xml version="1.0"?>
<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 100">
  <title>Ownership diagram</title>
  <desc>How a value moves between owners</desc>
  <path d="M10 10 L90 90 C 20 20, 40 20, 50 10 Z" style="fill:none;stroke:#000"/>
  <text x="5" y="20">s1 <tspan>owns</tspan> the string</text>
</svg>`
	l := New(Options{})
	defer l.Close()
	if k, err := Sniff("diagram.svg", []byte(svg)); err != nil || k != KindSVG {
		t.Fatalf("Sniff: %v %v", k, err)
	}
	if k, _ := Sniff("noext", []byte(svg)); k != KindSVG {
		t.Fatalf("Sniff by content: %v", k)
	}
	docs, err := SVGReader{}.Read(context.Background(), File{Path: "d.svg", Data: []byte(svg)})
	if err != nil {
		t.Fatal(err)
	}
	want := "Ownership diagram\nHow a value moves between owners\ns1 owns the string"
	if docs[0].Content != want {
		t.Errorf("SVG text %q, want %q", docs[0].Content, want)
	}
	_, err = SVGReader{}.Read(context.Background(), File{Path: "i.svg", Data: []byte(`<svg xmlns="http://www.w3.org/2000/svg"><path d="M0 0 L1 1"/></svg>`)})
	if !errors.Is(err, ErrSkipped) {
		t.Errorf("an SVG without text: %v, want skipped", err)
	}
}

func TestSelectIncludeExclude(t *testing.T) {
	root := tree(t, map[string]string{
		"a.md": "a", "b.txt": "b", "drafts/c.md": "c", "docs/d.md": "d", "docs/deep/e.md": "e", "docs/f.go": "package f",
	})
	l := New(Options{})
	defer l.Close()
	names := func(sel Selection) []string {
		t.Helper()
		es, err := l.Select([]string{root}, sel)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			out = append(out, e.Source.Name)
		}
		return out
	}
	for _, tc := range []struct {
		sel  Selection
		want string
	}{
		{Selection{}, "a.md b.txt docs/d.md docs/deep/e.md docs/f.go drafts/c.md"},
		{Selection{Include: []string{"*.md"}}, "a.md docs/d.md docs/deep/e.md drafts/c.md"},
		{Selection{Exclude: []string{"drafts/"}}, "a.md b.txt docs/d.md docs/deep/e.md docs/f.go"},
		{Selection{Include: []string{"docs/**"}, Exclude: []string{"*.go"}}, "docs/d.md docs/deep/e.md"},
		{Selection{Exclude: []string{"*.md", "!docs/d.md"}}, "b.txt docs/d.md docs/f.go"},
	} {
		if got := strings.Join(names(tc.sel), " "); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.sel, got, tc.want)
		}
	}
	if _, err := l.Select([]string{root}, Selection{Include: []string{"# nothing"}}); err == nil {
		t.Error("a pattern that matches nothing was accepted")
	}
}
