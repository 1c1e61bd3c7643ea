package split

import (
	"regexp"
	"slices"
	"strings"

	"github.com/quarry-rag/quarry/document"
)

// tinyChars is the length, in characters after trimming, below which a
// section is tiny and joins the next section's chunk; the health audit uses
// the same definition.
const tinyChars = 20

// MarkdownConfig configures the Markdown splitter.
type MarkdownConfig struct {
	// Budget is the token budget of a chunk: a section over it is cut by the
	// recursive splitter with these settings.
	Budget RecursiveConfig
}

// Markdown makes a chunk of each heading section (ATX headings # to ######
// and Setext headings), recording the path of headings above it. A section
// runs from its heading line to the next heading of any level; text before
// the first heading is a section with no heading. A tiny section, under 20
// characters after trimming ("## Port" and "Use 8080."), is never dropped:
// it starts the next section's chunk, or, when it is the last, stands as a
// chunk of its own. Headings inside fenced code blocks
// and YAML front matter are not headings. Create it with NewMarkdown.
type Markdown struct {
	rec *Recursive
}

// NewMarkdown validates cfg and returns a Markdown splitter. Errors are
// *ConfigError.
func NewMarkdown(cfg MarkdownConfig) (*Markdown, error) {
	rec, err := newRecursive("markdown", cfg.Budget)
	if err != nil {
		return nil, err
	}
	return &Markdown{rec: rec}, nil
}

// Split implements Splitter.
func (m *Markdown) Split(doc *document.Document) ([]*document.Document, error) {
	if err := checkText(doc); err != nil {
		return nil, err
	}
	p, err := m.pieces(doc.Content)
	if err != nil {
		return nil, wrapSource(doc, err)
	}
	return chunks(doc, p), nil
}

func (m *Markdown) pieces(text string) ([]piece, error) {
	var out []piece
	secs := sections(text)
	pending := -1 // start of tiny sections waiting to join the next one
	var pendingPaths [][]string
	for n, sec := range secs {
		if strings.TrimSpace(text[sec.start:sec.end]) == "" {
			continue
		}
		if n < len(secs)-1 && isTiny(text[sec.start:sec.end]) {
			if pending < 0 {
				pending = sec.start
			}
			pendingPaths = append(pendingPaths, sec.headings)
			continue
		}
		if pending >= 0 {
			sec.start, pending = pending, -1
			sec.headings = mergedPath(append(pendingPaths, sec.headings))
			pendingPaths = nil
		}
		ps, err := m.rec.pieces(text, sec.start, sec.end)
		if err != nil {
			return nil, err
		}
		for i, p := range ps {
			body := text[p.start:p.end]
			if p.normalised {
				body = p.text
			}
			// A section cut for size can leave its heading line alone in
			// the first piece; the heading is in every piece's path, and a
			// heading-only chunk answers nothing (health flags it as tiny).
			if i == 0 && len(ps) > 1 && sectionHeading(text, sec) != "" && strings.TrimSpace(body) == sectionHeading(text, sec) {
				continue
			}
			p.headings = sec.headings
			out = append(out, p)
		}
	}
	return out, nil
}

// sectionHeading is a section's first line, trimmed, when it is an ATX
// heading ("### Tip"), and "" otherwise.
func sectionHeading(text string, sec section) string {
	line := text[sec.start:sec.end]
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	if line = strings.TrimSpace(line); strings.HasPrefix(line, "#") {
		return line
	}
	return ""
}

// section is a byte range of a Markdown text under one heading path.
type section struct {
	start, end int
	headings   []string
}

// sections cuts text at its headings; the sections cover text exactly.
func sections(text string) []section {
	type heading struct {
		level int
		title string
	}
	var (
		out   []section
		stack []heading
		cur   section
	)
	open := func(at, level int, title string) {
		cur.end = at
		if cur.end > cur.start {
			out = append(out, cur)
		}
		for len(stack) > 0 && stack[len(stack)-1].level >= level {
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, heading{level, PlainHeading(title)})
		path := make([]string, len(stack))
		for i, h := range stack {
			path[i] = h.title
		}
		cur = section{start: at, headings: path}
	}

	skip := frontMatterEnd(text)
	var (
		fence     string // the opening fence while inside a fenced block
		paraStart = -1   // start of the previous line when it may be a Setext title
		paraLine  string
		newBlock  = true // the previous line ended a block (blank, heading, fence)
	)
	for pos := skip; pos < len(text); {
		end := strings.IndexByte(text[pos:], '\n')
		next := len(text)
		if end < 0 {
			end = len(text)
		} else {
			end += pos
			next = end + 1
		}
		line := strings.TrimRight(text[pos:end], "\r")
		start := pos
		pos = next

		if fence != "" {
			if closesFence(line, fence) {
				fence = ""
				newBlock = true
			}
			paraStart = -1
			continue
		}
		if f := opensFence(line); f != "" {
			fence, paraStart = f, -1
			continue
		}
		if level, title, ok := atxHeading(line); ok {
			open(start, level, title)
			paraStart, newBlock = -1, true
			continue
		}
		if level := setextUnderline(line); level > 0 && paraStart >= 0 {
			open(paraStart, level, strings.TrimSpace(paraLine))
			paraStart, newBlock = -1, true
			continue
		}
		blank := strings.TrimSpace(line) == ""
		paraStart = -1
		if !blank && newBlock && isParagraphStart(line) {
			paraStart, paraLine = start, line
		}
		newBlock = blank
	}
	cur.end = len(text)
	if cur.end > cur.start {
		out = append(out, cur)
	}
	return out
}

// frontMatterEnd returns the end of a leading YAML front matter block
// (between "---" lines), or 0 when there is none.
func frontMatterEnd(text string) int {
	first, rest, ok := strings.Cut(text, "\n")
	if !ok || strings.TrimRight(first, "\r") != "---" {
		return 0
	}
	off := len(first) + 1
	for rest != "" {
		line, after, _ := strings.Cut(rest, "\n")
		off += len(line) + 1
		if l := strings.TrimRight(line, " \t\r"); l == "---" || l == "..." {
			return min(off, len(text))
		}
		rest = after
	}
	return 0
}

// indent strips up to three leading spaces; ok is false for four or more
// (an indented code block).
func indent(line string) (string, bool) {
	for i := 0; i < 4; i++ {
		if i == len(line) || line[i] != ' ' {
			return line[i:], true
		}
	}
	return line, false
}

// atxHeading parses "## Title ##".
func atxHeading(line string) (level int, title string, ok bool) {
	s, ok := indent(line)
	if !ok {
		return 0, "", false
	}
	for level < len(s) && s[level] == '#' {
		level++
	}
	if level == 0 || level > 6 || (level < len(s) && s[level] != ' ' && s[level] != '\t') {
		return 0, "", false
	}
	title = strings.TrimSpace(s[level:])
	// A closing run of #s goes when a space precedes it or it is all there is.
	if t := strings.TrimRight(title, "#"); t == "" || strings.HasSuffix(t, " ") || strings.HasSuffix(t, "\t") {
		title = strings.TrimSpace(t)
	}
	return level, title, true
}

// setextUnderline returns 1 for "===", 2 for "---" (two or more: a single
// "-" is an empty list item), and 0 otherwise.
func setextUnderline(line string) int {
	s, ok := indent(line)
	s = strings.TrimRight(s, " \t")
	if !ok || s == "" {
		return 0
	}
	if strings.Trim(s, "=") == "" {
		return 1
	}
	if len(s) >= 2 && strings.Trim(s, "-") == "" {
		return 2
	}
	return 0
}

// isParagraphStart reports whether a line after a block break starts a
// paragraph, which a Setext underline can turn into a heading; list items,
// quotes, tables and indented code cannot.
func isParagraphStart(line string) bool {
	s, ok := indent(line)
	if !ok || s == "" {
		return false
	}
	switch s[0] {
	case '>', '|', '<':
		return false
	case '-', '*', '+':
		return len(s) > 1 && s[1] != ' ' && s[1] != '\t'
	}
	i := 0
	for i < len(s) && i < 9 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i > 0 && i < len(s) && (s[i] == '.' || s[i] == ')') && (i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\t') {
		return false
	}
	return true
}

// opensFence returns the fence ("```", "~~~~", …) a line opens, or "".
func opensFence(line string) string {
	s, ok := indent(line)
	if !ok || len(s) < 3 || (s[0] != '`' && s[0] != '~') {
		return ""
	}
	n := 0
	for n < len(s) && s[n] == s[0] {
		n++
	}
	if n < 3 || (s[0] == '`' && strings.Contains(s[n:], "`")) {
		return ""
	}
	return s[:n]
}

// closesFence reports whether line closes the block opened by fence.
func closesFence(line, fence string) bool {
	s, ok := indent(line)
	if !ok {
		return false
	}
	s = strings.TrimRight(s, " \t")
	return len(s) >= len(fence) && strings.Trim(s, fence[:1]) == ""
}

// mergedPath is the heading path of a chunk that holds several sections
// (tiny ones joined to the next): their common parent, then each
// section's own heading, joined with " · ", so the path names every
// section the chunk holds ("Install › Port · Host").
func mergedPath(paths [][]string) []string {
	common := paths[0]
	for _, p := range paths[1:] {
		n := 0
		for n < len(common) && n < len(p) && common[n] == p[n] {
			n++
		}
		common = common[:n]
	}
	var names []string
	for _, p := range paths {
		if len(p) > len(common) {
			if name := p[len(p)-1]; !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	out := slices.Clone(common)
	if len(names) > 0 {
		out = append(out, strings.Join(names, " · "))
	}
	return out
}

var (
	// inlineLink is [text](target) or ![alt](src); the text stays.
	inlineLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	// htmlTag is an HTML tag, opening or closing, of an element Markdown
	// writers use; other text in angle brackets (a < b > c, <T>) is kept.
	htmlTag = regexp.MustCompile(`(?i)</?(?:a|abbr|b|big|blockquote|br|center|cite|code|dd|del|details|div|dl|dt|em|figcaption|figure|font|h[1-6]|hr|i|img|ins|kbd|li|mark|ol|p|picture|pre|q|s|samp|section|small|source|span|strike|strong|sub|summary|sup|table|tbody|td|tfoot|th|thead|tr|tt|u|ul|var|video)(?:\s[^<>]*)?/?>`)
	// emphasis is a run of * or _ that opens or closes emphasis: at a
	// word's edge, not inside a word (snake_case keeps its underscores).
	emphasis = regexp.MustCompile(`(^|[\s(])[*_]+|[*_]+($|[\s).,:;!?])`)
	// escaped is a backslash escape of ASCII punctuation (CommonMark).
	escaped = regexp.MustCompile("\\\\([!-/:-@\\[-`{-~])")
)

// PlainHeading is a Markdown heading's text as a reader sees it: links
// and images as their text, inline HTML tags, emphasis markers and code
// backticks dropped, backslash escapes resolved ("\\#" is "#").
func PlainHeading(title string) string {
	if !strings.ContainsAny(title, "[<*_`\\") {
		return title
	}
	// An escaped character is set aside first (as a private-use
	// character) so the markup rules below leave it be.
	t := escaped.ReplaceAllStringFunc(title, func(m string) string { return string(rune(0xE000) + rune(m[1])) })
	t = inlineLink.ReplaceAllString(t, "$1")
	t = htmlTag.ReplaceAllString(t, "")
	t = strings.ReplaceAll(t, "`", "")
	t = emphasis.ReplaceAllString(t, "$1$2")
	t = strings.Map(func(r rune) rune {
		if r >= 0xE000 && r < 0xE080 {
			return r - 0xE000
		}
		return r
	}, t)
	return strings.Join(strings.Fields(t), " ")
}

// StripHTMLTags drops the HTML tags of the elements Markdown writers use
// inline (<span class="filename">, <kbd>, <br>) from a line of Markdown,
// keeping their text, outside `code spans`. Its result is what a reader
// of the rendered page sees there.
func StripHTMLTags(line string) string {
	if !strings.Contains(line, "<") {
		return line
	}
	parts := strings.Split(line, "`")
	for i := 0; i < len(parts); i += 2 { // even parts are outside code spans
		if i+1 == len(parts) && i > 0 && len(parts)%2 == 0 {
			break // an unclosed backtick: the rest is as written
		}
		parts[i] = htmlTag.ReplaceAllString(parts[i], "")
	}
	return strings.Join(parts, "`")
}
