package split

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/quarry-rag/quarry/document"
)

// CodeConfig configures the code splitter.
type CodeConfig struct {
	// MaxLines is the most lines in a chunk; 0 means 160. A longer
	// declaration is cut, at a blank line in the second half of the limit
	// when there is one.
	MaxLines int
}

// Code cuts source code at declarations. Go (a document whose path ends in
// .go and that parses) is cut with go/ast: the file header (package clause,
// its comments and imports) is a chunk, then each top-level declaration with
// its doc comment and any free comments above it. Other languages are cut at
// definition lines: func, fn, def, class, interface, struct, impl, enum,
// trait, type and function, after modifiers such as pub, export, public,
// static or async; comment, attribute and decorator lines just above travel
// with the definition. A piece under 20 characters joins the next one (the
// last joins the previous), so no chunk is tiny; no chunk has more than
// MaxLines lines. Chunks are verbatim. Create it with NewCode.
type Code struct {
	maxLines   int
	definition *regexp.Regexp
}

// NewCode validates cfg and returns a code splitter. Errors are *ConfigError.
func NewCode(cfg CodeConfig) (*Code, error) {
	if cfg.MaxLines < 0 {
		return nil, mustBePositive("code", "maxLines", cfg.MaxLines)
	}
	c := &Code{maxLines: cfg.MaxLines, definition: regexp.MustCompile(definitionLine)}
	if c.maxLines == 0 {
		c.maxLines = 160
	}
	return c, nil
}

// Split implements Splitter. The language comes from the extension of
// doc.Provenance.Source, or of doc.SourceName when that is empty.
func (c *Code) Split(doc *document.Document) ([]*document.Document, error) {
	if err := checkText(doc); err != nil {
		return nil, err
	}
	return chunks(doc, c.pieces(doc.Content, strings.EqualFold(path.Ext(docPath(doc)), ".go"))), nil
}

func docPath(doc *document.Document) string {
	if doc.Provenance.Source != "" {
		return doc.Provenance.Source
	}
	return doc.SourceName
}

func (c *Code) pieces(text string, isGo bool) []piece {
	if strings.TrimSpace(text) == "" {
		return nil
	}
	lines := newLineIndex(text)
	var cuts []int
	if isGo {
		var ok bool
		if cuts, ok = goCuts(text, lines); !ok {
			cuts = c.lineCuts(text, lines)
		}
	} else {
		cuts = c.lineCuts(text, lines)
	}

	// Ranges between cuts, trimmed; tiny ones join a neighbour.
	var rs []piece
	bounds := append(append([]int{0}, cuts...), len(text))
	for i := 0; i+1 < len(bounds); i++ {
		if p, ok := trimmed(text, bounds[i], bounds[i+1]); ok {
			rs = append(rs, p)
		}
	}
	var merged []piece
	carry := -1 // start of a tiny range waiting for the next one
	for i, p := range rs {
		if carry >= 0 {
			p.start, carry = carry, -1
		}
		if isTiny(text[p.start:p.end]) {
			if i+1 < len(rs) {
				carry = p.start
				continue
			}
			if len(merged) > 0 {
				merged[len(merged)-1].end = p.end
				continue
			}
		}
		merged = append(merged, p)
	}

	var out []piece
	for _, p := range merged {
		out = append(out, c.capLines(text, lines, p)...)
	}
	return out
}

func isTiny(s string) bool {
	return utf8.RuneCountInString(strings.TrimSpace(s)) < tinyChars
}

// trimmed narrows [start, end) to its non-whitespace part.
func trimmed(text string, start, end int) (piece, bool) {
	s := text[start:end]
	t := strings.TrimLeftFunc(s, unicode.IsSpace)
	start += len(s) - len(t)
	t = strings.TrimRightFunc(t, unicode.IsSpace)
	if t == "" {
		return piece{}, false
	}
	return piece{start: start, end: start + len(t)}, true
}

// capLines cuts p into pieces of at most maxLines lines.
func (c *Code) capLines(text string, lines lineIndex, p piece) []piece {
	var out []piece
	for {
		first, last := lines.line(p.start), lines.line(p.end-1)
		if last-first+1 <= c.maxLines {
			return append(out, p)
		}
		// Lines are 1-based; lines[l-1] is where line l starts.
		next := first + c.maxLines // first line of the rest
		for l := next - 1; l > first+c.maxLines/2; l-- {
			if strings.TrimSpace(lineText(text, lines, l)) == "" {
				next = l
				break
			}
		}
		if q, ok := trimmed(text, p.start, lines[next-1]); ok {
			out = append(out, q)
		}
		q, ok := trimmed(text, lines[next-1], p.end)
		if !ok {
			return out
		}
		p = q
	}
}

func lineText(text string, lines lineIndex, l int) string {
	end := len(text)
	if l < len(lines) {
		end = lines[l]
	}
	return text[lines[l-1]:end]
}

// goCuts returns where each top-level Go declaration's chunk starts; ok is
// false when the file does not parse.
func goCuts(text string, lines lineIndex) ([]int, bool) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", text, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, false
	}
	tf := fset.File(f.Pos())
	off := tf.Offset
	var cuts []int
	prevEnd := off(f.Name.End())
	ci := 0
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
			prevEnd = off(d.End()) // imports stay in the header
			continue
		}
		start := off(d.Pos())
		var doc *ast.CommentGroup
		switch d := d.(type) {
		case *ast.FuncDecl:
			doc = d.Doc
		case *ast.GenDecl:
			doc = d.Doc
		}
		if doc != nil {
			start = off(doc.Pos())
		}
		// Free comments on lines after the previous declaration belong to
		// this one: they usually introduce what follows.
		for ci < len(f.Comments) && off(f.Comments[ci].Pos()) <= prevEnd {
			ci++
		}
		for ; ci < len(f.Comments) && off(f.Comments[ci].Pos()) < start; ci++ {
			if g := off(f.Comments[ci].Pos()); lines.line(g) > lines.line(prevEnd) {
				start = g
				break
			}
		}
		cuts = append(cuts, lines[lines.line(start)-1])
		prevEnd = off(d.End())
	}
	return cuts, true
}

// definitionLine matches a line that opens a function, type or similar in
// most languages, after any modifiers.
const definitionLine = `^\s*(?:(?:export|default|pub(?:\([^)]*\))?|public|private|protected|internal|fileprivate|static|final|abstract|sealed|open|override|virtual|async|unsafe|extern(?:\s+"[^"]*")?|const|inline|partial|readonly|data|declare|synchronized|native|local|suspend|mutating|lazy)\s+)*(?:func|fn|def|class|interface|struct|impl|enum|trait|type|function\*?)(?:<|\s+[\p{L}_$(<{*&])`

// isPreamble reports whether a line belongs with the definition below it: a
// comment, an attribute or a decorator.
func isPreamble(line string) bool {
	s := strings.TrimSpace(line)
	for _, p := range []string{"//", "#", "/*", "*", "--", "@", "[", ";;"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// lineCuts returns where each definition line's chunk starts.
func (c *Code) lineCuts(text string, lines lineIndex) []int {
	var cuts []int
	prev := 1 // first line of the current chunk
	for l := 2; l <= len(lines); l++ {
		if !c.definition.MatchString(lineText(text, lines, l)) {
			continue
		}
		start := l
		for start-1 > prev && isPreamble(lineText(text, lines, start-1)) {
			start--
		}
		if start > prev {
			cuts = append(cuts, lines[start-1])
			prev = start
		}
	}
	return cuts
}
