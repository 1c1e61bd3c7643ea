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
	// MaxTokens is the most cl100k_base tokens in a chunk; 0 means 512,
	// the chunk budget. A longer piece is cut at line ends, and a line
	// longer than the budget (a generated table, data in a string) by the
	// recursive splitter's rules, so no chunk exceeds it.
	MaxTokens int
	// Tokenizer counts tokens; nil means the splitter loads its own.
	Tokenizer *Tokenizer
}

// Code cuts source code at declarations. Go (a document whose path ends in
// .go and that parses) is cut with go/ast: the file header (package clause,
// its comments and imports) is a chunk, then each top-level declaration with
// its doc comment and any free comments above it, each carrying its symbol
// path (package, then the declaration: "func (*Server) Serve") as its
// heading path. Other languages are cut at
// definition lines: func, fn, def, class, interface, struct, impl, enum,
// trait, type and function, after modifiers such as pub, export, public,
// static or async; comment, attribute and decorator lines just above travel
// with the definition. A piece under 20 characters, or without a letter or
// digit (closing braces), joins a neighbour, so no chunk is tiny; no chunk
// has more than MaxLines lines or MaxTokens tokens. Chunks are verbatim.
// Create it with NewCode.
type Code struct {
	maxLines   int
	definition *regexp.Regexp
	// rec cuts what is over the token budget; its budget is the chunk's.
	rec *Recursive
}

// NewCode validates cfg and returns a code splitter. Errors are *ConfigError.
func NewCode(cfg CodeConfig) (*Code, error) {
	if cfg.MaxLines < 0 {
		return nil, mustBePositive("code", "maxLines", cfg.MaxLines)
	}
	rec, err := newRecursive("code", RecursiveConfig{MaxTokens: cfg.MaxTokens, NoOverlap: true, Tokenizer: cfg.Tokenizer})
	if err != nil {
		return nil, err
	}
	c := &Code{maxLines: cfg.MaxLines, definition: regexp.MustCompile(definitionLine), rec: rec}
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
	p, err := c.pieces(doc.Content, strings.EqualFold(path.Ext(docPath(doc)), ".go"))
	if err != nil {
		return nil, wrapSource(doc, err)
	}
	return chunks(doc, p), nil
}

func docPath(doc *document.Document) string {
	if doc.Provenance.Source != "" {
		return doc.Provenance.Source
	}
	return doc.SourceName
}

// cut is where a chunk starts, with the symbol path of what starts there.
type cut struct {
	off   int
	heads []string
}

func (c *Code) pieces(text string, isGo bool) ([]piece, error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	lines := newLineIndex(text)
	var cuts []cut
	var header []string
	if isGo {
		var ok bool
		if cuts, header, ok = goCuts(text, lines); !ok {
			cuts = c.lineCuts(text, lines)
		}
	} else {
		cuts = c.lineCuts(text, lines)
	}

	// Ranges between cuts, trimmed; tiny ones join a neighbour.
	var rs []piece
	bounds := append(append([]cut{{0, header}}, cuts...), cut{off: len(text)})
	for i := 0; i+1 < len(bounds); i++ {
		if p, ok := trimmed(text, bounds[i].off, bounds[i+1].off); ok {
			p.headings = bounds[i].heads
			rs = append(rs, p)
		}
	}
	merged := joinTiny(text, rs, nil)

	var out []piece
	for _, p := range merged {
		for _, q := range c.capLines(text, lines, p) {
			ps, err := c.capTokens(text, lines, q)
			if err != nil {
				return nil, err
			}
			out = append(out, ps...)
		}
	}
	// Caps can leave a tiny tail (a closing brace): it joins a neighbour
	// that has room for it.
	return joinTiny(text, out, func(s string) bool {
		if strings.Count(s, "\n") >= c.maxLines {
			return false
		}
		if len(s) <= c.rec.maxTokens {
			return true
		}
		n, err := c.rec.tok.Count(s)
		return err == nil && n <= c.rec.maxTokens
	}), nil
}

// joinTiny merges each tiny piece (isTiny, or without a letter or digit)
// into the next piece, the last into the previous, keeping the first
// piece's headings. With within, a piece is merged only when the result is
// within it (the line and token budgets).
func joinTiny(text string, rs []piece, within func(string) bool) []piece {
	fits := func(start, end int) bool { return within == nil || within(text[start:end]) }
	var merged []piece
	// settle places a tiny piece that cannot join the next one: into the
	// previous one when it fits, else with the previous piece's last lines
	// moved over to it (a closing brace takes the statement before it),
	// else alone.
	settle := func(t piece) {
		n := len(merged)
		if n == 0 {
			merged = append(merged, t)
			return
		}
		prev := &merged[n-1]
		if fits(prev.start, t.end) {
			prev.end = t.end
			return
		}
		b := prev.end
		for range 8 {
			i := strings.LastIndexByte(text[prev.start:b], '\n')
			if i <= 0 {
				break
			}
			b = prev.start + i
			head, ok1 := trimmed(text, prev.start, b)
			tail, ok2 := trimmed(text, b, t.end)
			if !ok1 || !ok2 || tinyPiece(text[head.start:head.end]) || !fits(tail.start, tail.end) {
				break
			}
			if !tinyPiece(text[tail.start:tail.end]) {
				prev.end = head.end
				tail.headings = prev.headings
				merged = append(merged, tail)
				return
			}
		}
		merged = append(merged, t)
	}
	carry := -1 // index in rs of a tiny piece waiting for the next one
	for i, p := range rs {
		if carry >= 0 {
			if fits(rs[carry].start, p.end) {
				p.start, p.headings = rs[carry].start, rs[carry].headings
			} else {
				settle(rs[carry])
			}
			carry = -1
		}
		if tinyPiece(text[p.start:p.end]) {
			if i+1 < len(rs) {
				carry = i
				continue
			}
			settle(p)
			continue
		}
		merged = append(merged, p)
	}
	return merged
}

// tinyPiece reports whether a piece is too small to stand alone: under
// tinyChars, or holding no letter or digit at all.
func tinyPiece(s string) bool {
	return isTiny(s) || strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) < 0
}

// capTokens cuts p into pieces within the token budget: whole lines while
// they fit, and a line over the budget by the recursive splitter (at
// sentence ends, then words, then characters). A piece no longer in bytes
// than the budget is within it without counting: a token is at least a
// byte.
func (c *Code) capTokens(text string, lines lineIndex, p piece) ([]piece, error) {
	budget := c.rec.maxTokens
	if p.end-p.start <= budget {
		return []piece{p}, nil
	}
	n, err := c.rec.tok.Count(text[p.start:p.end])
	if err != nil {
		return nil, err
	}
	if n <= budget {
		return []piece{p}, nil
	}
	var out []piece
	// flush emits [start, end), whose lines' counts summed fit the budget.
	// Counts of lines apart are not quite those of the lines together (a
	// token can span a line end), so the whole is counted, and one over
	// the budget is cut again before its last line.
	var flush func(start, end int)
	flush = func(start, end int) {
		q, ok := trimmed(text, start, end)
		if !ok {
			return
		}
		if n, err := c.rec.tok.Count(text[q.start:q.end]); err == nil && n > budget {
			if l := lines.line(q.end - 1); lines[l-1] > q.start {
				flush(q.start, lines[l-1])
				flush(lines[l-1], q.end)
				return
			}
		}
		q.headings = p.headings
		out = append(out, q)
	}
	start, acc := p.start, 0
	for l := lines.line(p.start); l <= len(lines); l++ {
		ls := max(lines[l-1], p.start)
		if ls >= p.end {
			break
		}
		le := p.end
		if l < len(lines) {
			le = min(lines[l], p.end)
		}
		k, err := c.rec.tok.Count(text[ls:le])
		if err != nil {
			return nil, err
		}
		switch {
		case k > budget:
			flush(start, ls)
			long, err := c.rec.pieces(text, ls, le)
			if err != nil {
				return nil, err
			}
			for _, q := range long {
				if q, ok := trimmed(text, q.start, q.end); ok {
					q.headings = p.headings
					out = append(out, q)
				}
			}
			start, acc = le, 0
			continue
		case acc+k > budget:
			flush(start, ls)
			start, acc = ls, 0
		}
		acc += k
	}
	flush(start, p.end)
	return out, nil
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
			q.headings = p.headings
			out = append(out, q)
		}
		q, ok := trimmed(text, lines[next-1], p.end)
		if !ok {
			return out
		}
		q.headings = p.headings
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

// goCuts returns where each top-level Go declaration's chunk starts, with
// its symbol path, and the header's; ok is false when the file does not
// parse.
func goCuts(text string, lines lineIndex) (cuts []cut, header []string, ok bool) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", text, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, nil, false
	}
	tf := fset.File(f.Pos())
	off := tf.Offset
	pkg := "package " + f.Name.Name
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
		heads := []string{pkg}
		if sym := goSymbol(d); sym != "" {
			heads = append(heads, sym)
		}
		cuts = append(cuts, cut{off: lines[lines.line(start)-1], heads: heads})
		prevEnd = off(d.End())
	}
	return cuts, []string{pkg}, true
}

// goSymbol names a declaration as Go writes it: "func Serve",
// "func (*Server) Serve", "type Server", "const MaxHeaderBytes" (the first
// name of a group, with " …" after it when there are more).
func goSymbol(d ast.Decl) string {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv != nil && len(d.Recv.List) > 0 {
			return "func (" + recvType(d.Recv.List[0].Type) + ") " + d.Name.Name
		}
		return "func " + d.Name.Name
	case *ast.GenDecl:
		var names []string
		for _, sp := range d.Specs {
			switch sp := sp.(type) {
			case *ast.TypeSpec:
				names = append(names, sp.Name.Name)
			case *ast.ValueSpec:
				for _, n := range sp.Names {
					names = append(names, n.Name)
				}
			}
		}
		if len(names) == 0 {
			return ""
		}
		sym := d.Tok.String() + " " + names[0]
		if len(names) > 1 {
			sym += " …"
		}
		return sym
	}
	return ""
}

// recvType is a method receiver's type as written, without type
// parameters: "*Server", "List".
func recvType(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return "*" + recvType(t.X)
	case *ast.Ident:
		return t.Name
	case *ast.IndexExpr:
		return recvType(t.X)
	case *ast.IndexListExpr:
		return recvType(t.X)
	case *ast.SelectorExpr:
		return recvType(t.X) + "." + t.Sel.Name
	}
	return "?"
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
func (c *Code) lineCuts(text string, lines lineIndex) []cut {
	var cuts []cut
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
			cuts = append(cuts, cut{off: lines[start-1]})
			prev = start
		}
	}
	return cuts
}
