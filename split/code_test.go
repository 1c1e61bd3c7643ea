package split_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/quarry-rag/quarry/split"
)

const goFile = `// Copyright 2026 The Quarry Authors.

// Package shapes computes areas.
package shapes

import (
	"fmt"
	"math"
)

// Shape is anything with an area.
type Shape interface {
	Area() float64
}

// Circle is a round shape.
type Circle struct{ R float64 }

// Area returns the area of the circle.
func (c Circle) Area() float64 {
	return math.Pi * c.R * c.R
}

// ---- helpers ----

// Describe prints a shape with its area.
func Describe(s Shape) string {
	return fmt.Sprintf("%T with area %.2f", s, s.Area()) // trailing comment
}

var (
	unit    = Circle{R: 1}
	doubled = Circle{R: 2}
)
`

func TestCodeGoDeclarations(t *testing.T) {
	c, err := split.NewCode(split.CodeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := c.Split(fileDoc("shapes/shapes.go", goFile))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		first      string // first line of the chunk
		start, end int
		symbol     string // the heading path's last element
	}{
		{"// Copyright 2026 The Quarry Authors.", 1, 9, "package shapes"}, // header: package clause and imports
		{"// Shape is anything with an area.", 11, 14, "type Shape"},
		{"// Circle is a round shape.", 16, 17, "type Circle"},
		{"// Area returns the area of the circle.", 19, 22, "func (Circle) Area"},
		{"// ---- helpers ----", 24, 29, "func Describe"}, // a free comment travels with the next declaration
		{"var (", 31, 34, "var unit …"},
	}
	if len(chunks) != len(want) {
		t.Fatalf("got %d chunks: %q", len(chunks), contents(chunks))
	}
	for i, w := range want {
		ch := chunks[i]
		first, _, _ := strings.Cut(ch.Content, "\n")
		if first != w.first || ch.Provenance.LineStart != w.start || ch.Provenance.LineEnd != w.end {
			t.Errorf("chunk %d: %q lines %d-%d, want %q lines %d-%d", i, first, ch.Provenance.LineStart, ch.Provenance.LineEnd, w.first, w.start, w.end)
		}
		if ch.Content != goFile[ch.Provenance.CharStart:ch.Provenance.CharEnd] {
			t.Errorf("chunk %d is not the text at its offsets", i)
		}
		if hp := ch.Provenance.HeadingPath; len(hp) == 0 || hp[0] != "package shapes" || hp[len(hp)-1] != w.symbol {
			t.Errorf("chunk %d: heading path %q, want it to end with %q", i, hp, w.symbol)
		}
	}
}

// TestCodeChunksWithinBudget: generated code (a 24,000-character string
// constant on one line, a 1,500-line table) is cut within the token budget
// at line ends, and the one line by characters, every chunk verbatim,
// none of braces alone, each with the declaration's symbol path.
func TestCodeChunksWithinBudget(t *testing.T) {
	text := readFile(t, "testdata/generated_table.go")
	var tok split.Tokenizer
	c, err := split.NewCode(split.CodeConfig{Tokenizer: &tok})
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := c.Split(fileDoc("tables/generated_table.go", text))
	if err != nil {
		t.Fatal(err)
	}
	symbols := map[string]int{}
	prevEnd := 0
	for i, ch := range chunks {
		n, err := tok.Count(ch.Content)
		if err != nil {
			t.Fatal(err)
		}
		if n > 512 {
			t.Errorf("chunk %d: %d tokens, over the 512 budget", i, n)
		}
		p := ch.Provenance
		if ch.Content != text[p.CharStart:p.CharEnd] || strings.TrimSpace(text[prevEnd:p.CharStart]) != "" {
			t.Fatalf("chunk %d is not the text at its offsets, or text before it was lost", i)
		}
		prevEnd = p.CharEnd
		if !strings.ContainsFunc(ch.Content, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) {
			t.Errorf("chunk %d is punctuation alone: %q", i, ch.Content)
		}
		if len(p.HeadingPath) > 0 {
			symbols[p.HeadingPath[len(p.HeadingPath)-1]]++
		}
	}
	if strings.TrimSpace(text[prevEnd:]) != "" {
		t.Error("the end of the file was lost")
	}
	if symbols["const zipdata"] < 40 || symbols["var p256Table"] < 40 || symbols["func Lookup"] != 1 {
		t.Errorf("%d chunks by symbol: %v", len(chunks), symbols)
	}
}

func TestCodeDefinitionLines(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		text  string
		first []string // first line of each chunk
	}{
		{"python", "app.py", `import os
import sys


@dataclass
class Config:
    """Settings for the app."""
    path: str = "."

    def load(self):
        return os.listdir(self.path)


# Entry point of the program.
async def main():
    print(Config().load())
`, []string{"import os", "@dataclass", "    def load(self):", "# Entry point of the program."}},
		{"rust", "lib.rs", `use std::fmt;

/// A point in the plane.
#[derive(Debug)]
pub struct Point { x: i32, y: i32 }

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "({}, {})", self.x, self.y)
    }
}

pub(crate) fn origin() -> Point { Point { x: 0, y: 0 } }
`, []string{"use std::fmt;\n\n/// A point in the plane.", "impl fmt::Display for Point {", "    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {", "pub(crate) fn origin()"}},
		{"typescript", "api.ts", `import { get } from "./http";

export interface User { id: string; name: string }

export default async function fetchUser(id: string): Promise<User> {
  return get("/users/" + id);
}

type Handler = (u: User) => void;
`, []string{"import { get } from", "export interface User", "export default async function fetchUser", "type Handler = (u: User) => void;"}},
		{"go that does not parse falls back to lines", "bad.go", `package bad

func Good() int { return 1 }

func Broken( {
	return
}
`, []string{"package bad\n\nfunc Good() int { return 1 }", "func Broken( {"}},
	}
	c, err := split.NewCode(split.CodeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunks, err := c.Split(fileDoc(tt.file, tt.text))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ch := range chunks {
				got = append(got, ch.Content)
			}
			if len(got) != len(tt.first) {
				t.Fatalf("got %d chunks %q, want starts %q", len(got), got, tt.first)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], strings.TrimLeft(tt.first[i], " ")) {
					t.Errorf("chunk %d = %q, want it to start %q", i, got[i], tt.first[i])
				}
			}
		})
	}
}

func TestCodeMaxLines(t *testing.T) {
	var b strings.Builder
	b.WriteString("package big\n\n// Long has a very long body.\nfunc Long() {\n")
	for i := range 400 {
		fmt.Fprintf(&b, "\tx%d := %d\n", i, i)
		if i%50 == 49 {
			b.WriteString("\n") // a blank line now and then: a better place to cut
		}
	}
	b.WriteString("}\n")
	text := b.String()
	c, err := split.NewCode(split.CodeConfig{MaxLines: 120, MaxTokens: 100000}) // lines alone
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := c.Split(fileDoc("big.go", text))
	if err != nil {
		t.Fatal(err)
	}
	covered := 0
	for i, ch := range chunks {
		p := ch.Provenance
		if n := p.LineEnd - p.LineStart + 1; n > 120 {
			t.Errorf("chunk %d has %d lines", i, n)
		}
		if i+1 < len(chunks) && strings.TrimSpace(text[p.CharEnd:chunks[i+1].Provenance.CharStart]) != "" {
			t.Errorf("text lost between chunks %d and %d", i, i+1)
		}
		if i > 0 && i+1 < len(chunks) && !strings.HasPrefix(text[p.CharEnd:], "\n\n") {
			t.Errorf("chunk %d was not cut at a blank line", i)
		}
		covered += len(strings.Fields(ch.Content))
	}
	if covered != len(strings.Fields(text)) || len(chunks) < 4 {
		t.Errorf("%d chunks cover %d of %d words", len(chunks), covered, len(strings.Fields(text)))
	}
}

func TestCodeTinyPiecesJoinANeighbour(t *testing.T) {
	c, err := split.NewCode(split.CodeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	text := "package x\n\nconst A = 1\n\n// B is the second constant of the package.\nconst B = 2\n\nvar c = 3\n"
	chunks, err := c.Split(fileDoc("x.go", text))
	if err != nil {
		t.Fatal(err)
	}
	// "package x" is tiny and joins the declaration after it; "var c = 3",
	// tiny and last, joins the one before.
	want := []string{
		"package x\n\nconst A = 1",
		"// B is the second constant of the package.\nconst B = 2\n\nvar c = 3",
	}
	if got := contents(chunks); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCodeNoTinyTails: when a declaration is cut for the budget, a tail
// too small to stand alone (a closing brace) that its neighbour has no
// room for takes the statements before it instead, so no chunk is tiny or
// without a word, and every chunk stays within the budget.
func TestCodeNoTinyTails(t *testing.T) {
	var tok split.Tokenizer
	for budget := 30; budget <= 60; budget += 3 {
		c, err := split.NewCode(split.CodeConfig{MaxTokens: budget, Tokenizer: &tok})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		b.WriteString("package p\n\n// Step adds one, many times.\nfunc Step(x int) int {\n\tfor i := 0; i < 3; i++ {\n")
		for i := range 24 {
			fmt.Fprintf(&b, "\t\tx = x + %d\n", i)
		}
		b.WriteString("\t}\n\treturn x\n}\n")
		chunks, err := c.Split(fileDoc("p/step.go", b.String()))
		if err != nil {
			t.Fatal(err)
		}
		for i, ch := range chunks {
			n, _ := tok.Count(ch.Content)
			hasWord := strings.ContainsFunc(ch.Content, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) })
			if n > budget || !hasWord || len([]rune(strings.TrimSpace(ch.Content))) < 20 {
				t.Errorf("budget %d, chunk %d: %d tokens: %q", budget, i, n, ch.Content)
			}
		}
	}
}
