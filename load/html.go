package load

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"codeberg.org/readeck/go-readability/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding/unicode"

	"github.com/quarry-rag/quarry/document"
)

// HTMLReader reads an HTML page as one Markdown document of its main
// content, so that the Markdown splitter cuts it at its headings.
//
// Page furniture is dropped first: nav and aside elements, page-level
// header and footer elements (not those inside an article, main or
// section), elements whose ARIA role is navigation, banner, contentinfo,
// complementary or search, DocBook-style navheader/navfooter blocks,
// breadcrumbs, comment threads, sharing, cookie and ad blocks (by class),
// scripts and hidden elements.
//
// Readability then locates the article in what is left, and the content is
// the smallest element of the page holding what it chose, taken as it is:
// readability's own cleaning drops link-dense lists and tables, which in a
// reference manual are content (tables of contents, function tables). That
// element grows until it holds the page's main heading (its first H1, else
// its first top-level heading) and at least half of the remaining words, so
// that taking one section or one table for the article cannot lose the
// rest of a manual page. Links become their text, images their alt text,
// and tables Markdown tables (or one line per row, cells separated by
// " | ", when a cell holds blocks).
//
// The page's main heading is the root of every heading path. Readability
// may have chosen content below it, so when the content lacks that heading
// (or, for a page without headings, its <title>), the reader puts it back
// as the first line, as a level-1 heading.
//
// The page's <title> (or, without one, its main heading) becomes metadata
// "title". The zero value is ready to use and safe for concurrent use.
type HTMLReader struct {
	once sync.Once
	conv *converter.Converter
}

// htmlMaxElements bounds the pages readability scores: above it the cleaned
// body is converted as is, because scoring is superlinear in the elements.
const htmlMaxElements = 50000

// htmlMinShare is the share of a page's words (furniture removed) that the
// main content holds at least.
const htmlMinShare = 0.5

// Read implements Reader.
func (r *HTMLReader) Read(ctx context.Context, f File) ([]*document.Document, error) {
	page, err := parseHTML(f.Data)
	if err != nil {
		return nil, err
	}
	text, title, err := r.markdown(ctx, page)
	if err != nil {
		return nil, err
	}
	d := document.New(document.StripNonCharacters(text))
	d.ID = ""
	if title != "" {
		d.Metadata = map[string]any{"title": title}
	}
	return []*document.Document{d}, nil
}

// parseHTML decodes the page to UTF-8 (by byte-order mark, <meta> charset,
// or a guess) and parses it. A page that declares nothing and is valid
// UTF-8 throughout is UTF-8: the guess looks at the first kilobyte only,
// and takes an ASCII start for Windows-1252 ("Café" became "CafÃ©").
func parseHTML(data []byte) (*html.Node, error) {
	enc, _, certain := charset.DetermineEncoding(data, "text/html")
	if !certain && utf8.Valid(data) {
		enc = unicode.UTF8
	}
	r, err := enc.NewDecoder().Bytes(data)
	if err != nil {
		return nil, fmt.Errorf("decode html: %w", err)
	}
	// Invalid bytes in a page said to be UTF-8 would make invalid chunks.
	doc, err := html.Parse(bytes.NewReader(bytes.ToValidUTF8(r, []byte("\uFFFD"))))
	if err != nil {
		return nil, fmt.Errorf("parse html: %w", err)
	}
	return doc, nil
}

func (r *HTMLReader) converter() *converter.Converter {
	r.once.Do(func() {
		conv := converter.NewConverter(
			converter.WithPlugins(
				base.NewBasePlugin(),
				commonmark.NewCommonmarkPlugin(commonmark.WithListEndComment(false)),
				table.NewTablePlugin(table.WithCellPaddingBehavior(table.CellPaddingBehaviorMinimal)),
			),
			// Escapes would end up in chunk text and heading paths ("5\.1\.
			// Table Basics"); the splitter only reads headings and fences.
			converter.WithEscapeMode(converter.EscapeModeDisabled),
		)
		// The base plugin writes < and > in text as entities, for Markdown
		// that is rendered as HTML; chunks are read as text.
		conv.Register.TextTransformer(func(_ converter.Context, s string) string {
			return entityUnescaper.Replace(s)
		}, converter.PriorityLate)
		conv.Register.Renderer(renderTableAsLines, converter.PriorityLate)
		conv.Register.Renderer(renderHeading, converter.PriorityEarly)
		r.conv = conv
	})
	return r.conv
}

var entityUnescaper = strings.NewReplacer("&lt;", "<", "&gt;", ">")

// renderTableAsLines renders the tables the table plugin cannot (cells
// holding paragraphs, lists or line breaks) as one line per row, cells
// separated by " | ", as the DOCX reader does: the plugin's own fallback
// runs the cells of a row together.
func renderTableAsLines(ctx converter.Context, w converter.Writer, n *html.Node) converter.RenderStatus {
	if n.DataAtom != atom.Table {
		return converter.RenderTryNext
	}
	var lines []string
	var rows func(*html.Node)
	rows = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			switch c.DataAtom {
			case atom.Table:
				continue // a nested table is rendered inside its cell
			case atom.Caption:
				var b bytes.Buffer
				ctx.RenderChildNodes(ctx, &b, c)
				if line := collapse(b.String()); line != "" {
					lines = append(lines, line)
				}
			case atom.Tr:
				var cells []string
				for td := c.FirstChild; td != nil; td = td.NextSibling {
					if td.DataAtom != atom.Td && td.DataAtom != atom.Th {
						continue
					}
					var b bytes.Buffer
					ctx.RenderChildNodes(ctx, &b, td)
					cells = append(cells, collapse(b.String()))
				}
				if line := strings.Join(cells, " | "); strings.Trim(line, " |") != "" {
					lines = append(lines, line)
				}
			default:
				rows(c)
			}
		}
	}
	rows(n)
	w.WriteString("\n\n")
	w.WriteString(strings.Join(lines, "\n"))
	w.WriteString("\n\n")
	return converter.RenderSuccess
}

// renderHeading writes a heading as one ATX line of its text. The
// CommonMark plugin's own renderer escapes a heading's trailing '#' by
// overwriting the character before it ("Learn C#" became "Learn \#"); a
// text whose last run of '#'s the splitter would read as a closing
// sequence gets one of its own, so the text survives whole.
func renderHeading(ctx converter.Context, w converter.Writer, n *html.Node) converter.RenderStatus {
	level := headingLevel(n)
	if level == 0 {
		return converter.RenderTryNext
	}
	var b bytes.Buffer
	ctx.RenderChildNodes(ctx, &b, n)
	text := collapse(b.String())
	if text == "" {
		return converter.RenderSuccess
	}
	if t := strings.TrimRight(text, "#"); t != text && (t == "" || strings.HasSuffix(t, " ")) {
		text += " #"
	}
	w.WriteString("\n\n" + strings.Repeat("#", level) + " " + text + "\n\n")
	return converter.RenderSuccess
}

// markdown extracts the main content of page as Markdown, and the page's
// title.
func (r *HTMLReader) markdown(ctx context.Context, page *html.Node) (string, string, error) {
	title := collapse(textOf(findFirst(page, atom.Title)))
	body := findFirst(page, atom.Body)
	if body == nil {
		body = page
	}
	dropChrome(body)
	main, mainNode := mainHeading(body, title)
	if title == "" {
		title = main
	}
	content := mainContent(page, body, mainNode)
	lead := ""
	if main != "" && !hasHeading(content, main) {
		lead = "# " + main + "\n\n"
	}
	plain(content)
	md, err := convertNode(ctx, r.converter(), content)
	if err != nil {
		return "", "", fmt.Errorf("html to markdown: %w", err)
	}
	// The converter can split a multi-byte character when it escapes a
	// neighbouring '#'; never let invalid UTF-8 reach the index.
	return tidyMarkdown(strings.ToValidUTF8(lead+string(md), "\uFFFD")), title, nil
}

// idAttr numbers the elements of a page so that the blocks readability
// keeps can be found in the page as it was.
const idAttr = "data-quarry-id"

// mainContent returns the element of body holding what readability takes
// for the main content of page, widened to hold heading (the page's main
// heading, nil when it has none) and half of body's words. Body itself is
// returned when readability finds nothing, or when the page is too large to
// score.
func mainContent(page, body, heading *html.Node) *html.Node {
	var nodes []*html.Node
	each(body, func(e *html.Node) {
		e.Attr = append(e.Attr, html.Attribute{Key: idAttr, Val: strconv.Itoa(len(nodes))})
		nodes = append(nodes, e)
	})
	if len(nodes) > htmlMaxElements {
		return body
	}
	// Readability scores the page better with its head (the title tells
	// it which heading is the article's).
	p := readability.NewParser()
	p.DisableJSONLD = true
	art, err := p.ParseAndMutate(cloneNode(page), nil)
	if err != nil || art.Node == nil {
		return body
	}
	// The kept blocks are the outermost numbered elements of the article;
	// text outside any of them was made by readability from loose text we
	// cannot place, so the whole body is the safer answer.
	var picked []int
	loose := false
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			switch c.Type {
			case html.TextNode:
				if strings.TrimSpace(c.Data) != "" {
					loose = true
				}
			case html.ElementNode:
				if id, ok := numbered(c); ok && id < len(nodes) {
					picked = append(picked, id)
					continue
				}
				walk(c)
			}
		}
	}
	walk(art.Node)
	if loose || len(picked) == 0 {
		return body
	}
	// The content is the smallest element holding every kept block:
	// readability drops link-dense lists and tables inside it, which in
	// reference manuals are content (tables of contents, keyword tables).
	lca := nodes[picked[0]]
	for _, id := range picked[1:] {
		for n := nodes[id]; lca != n && !isAncestor(lca, n); {
			lca = lca.Parent
		}
	}
	// Readability may take one section of a reference page, or one table,
	// for the article: the page's own heading and the bulk of its words
	// tell that the article is larger.
	want := int(htmlMinShare * float64(len(strings.Fields(textOf(body)))))
	for lca != body && (partOf[lca.DataAtom] || len(strings.Fields(textOf(lca))) < want ||
		(heading != nil && !isAncestor(lca, heading))) {
		lca = lca.Parent
	}
	return lca
}

// partOf lists elements that make no sense as the whole content, such as
// the rows of a table readability scored, or a span: the content grows to
// hold the table, list or block around them.
var partOf = map[atom.Atom]bool{
	atom.Tbody: true, atom.Thead: true, atom.Tfoot: true, atom.Tr: true, atom.Td: true, atom.Th: true,
	atom.Caption: true, atom.Colgroup: true, atom.Li: true, atom.Dt: true, atom.Dd: true,
	atom.Span: true, atom.A: true, atom.Em: true, atom.Strong: true, atom.B: true, atom.I: true,
	atom.Code: true, atom.Small: true, atom.Sup: true, atom.Sub: true, atom.U: true, atom.Mark: true,
	atom.Abbr: true, atom.Cite: true, atom.Q: true, atom.Kbd: true, atom.Samp: true, atom.Var: true,
	atom.Time: true, atom.Label: true, atom.Font: true,
}

func numbered(e *html.Node) (int, bool) {
	for _, a := range e.Attr {
		if a.Key == idAttr {
			id, err := strconv.Atoi(a.Val)
			return id, err == nil
		}
	}
	return 0, false
}

func isAncestor(a, n *html.Node) bool {
	for p := n.Parent; p != nil; p = p.Parent {
		if p == a {
			return true
		}
	}
	return false
}

func cloneNode(n *html.Node) *html.Node {
	c := &html.Node{Type: n.Type, DataAtom: n.DataAtom, Data: n.Data, Namespace: n.Namespace, Attr: slices.Clone(n.Attr)}
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		c.AppendChild(cloneNode(ch))
	}
	return c
}

// chromeClass matches class and id tokens of navigation blocks that carry
// no semantic element: DocBook's navheader/navfooter, breadcrumbs, skip
// links.
var chromeClass = regexp.MustCompile(`(?i)^(navheader|navfooter|navbar|breadcrumbs?|skip-?links?|skip-to-content)$`)

// chromeWord matches a part (between - and _) of a class or id token of a
// block that is page furniture rather than content: comment threads,
// related links, sharing and subscription boxes, cookie banners, ads.
var chromeWord = regexp.MustCompile(`(?i)^(comments|commentlist|disqus|related|relatedposts|share|sharing|social|newsletter|subscribe|cookie|cookies|gdpr|consent|advert|advertisement|ads|sponsor|sponsored|popup|pagination|pager)$`)

// furniture lists the block containers chromeWord applies to; inline
// elements are left alone (a span.comment inside code is content).
var furniture = map[atom.Atom]bool{atom.Div: true, atom.Section: true, atom.Ul: true, atom.Ol: true, atom.Form: true}

// dropChrome removes navigation, page headers and footers, and hidden
// elements from n.
func dropChrome(n *html.Node) {
	var drop []*html.Node
	var walk func(n *html.Node, inContent bool)
	walk = func(n *html.Node, inContent bool) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.CommentNode {
				drop = append(drop, c)
				continue
			}
			if c.Type != html.ElementNode {
				continue
			}
			if isChrome(c, inContent) {
				drop = append(drop, c)
				continue
			}
			switch c.DataAtom {
			case atom.Article, atom.Main, atom.Section:
				walk(c, true)
			default:
				walk(c, inContent)
			}
		}
	}
	walk(n, false)
	for _, d := range drop {
		d.Parent.RemoveChild(d)
	}
}

func isChrome(n *html.Node, inContent bool) bool {
	switch n.DataAtom {
	case atom.Nav, atom.Aside, atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Iframe, atom.Dialog:
		return true
	case atom.Header, atom.Footer:
		if !inContent {
			return true
		}
	}
	for _, a := range n.Attr {
		switch a.Key {
		case "role":
			switch strings.ToLower(strings.TrimSpace(a.Val)) {
			case "navigation", "banner", "contentinfo", "complementary", "search":
				return true
			}
		case "hidden":
			return true
		case "aria-hidden":
			if strings.EqualFold(a.Val, "true") {
				return true
			}
		case "class", "id":
			for _, tok := range strings.Fields(a.Val) {
				if chromeClass.MatchString(tok) {
					return true
				}
				// Ids are often made from a section title ("plpython-sharing"),
				// so only a whole id counts.
				if furniture[n.DataAtom] && a.Key == "id" && (chromeWord.MatchString(tok) || tok == "disqus_thread") {
					return true
				}
				if furniture[n.DataAtom] && a.Key == "class" {
					for _, w := range strings.FieldsFunc(tok, func(r rune) bool { return r == '-' || r == '_' }) {
						if chromeWord.MatchString(w) {
							return true
						}
					}
				}
			}
		case "style":
			s := strings.ToLower(strings.ReplaceAll(a.Val, " ", ""))
			if strings.Contains(s, "display:none") || strings.Contains(s, "visibility:hidden") {
				return true
			}
		}
	}
	return false
}

// mainHeading is the page's own heading: its first H1, else the first
// heading of the top level it uses, else its title.
func mainHeading(body *html.Node, title string) (string, *html.Node) {
	best, text := 7, ""
	var node *html.Node
	each(body, func(e *html.Node) {
		if lvl := headingLevel(e); lvl > 0 && lvl < best {
			if t := collapse(textOf(e)); t != "" {
				best, text, node = lvl, t, e
			}
		}
	})
	if text != "" {
		return text, node
	}
	return title, nil
}

func hasHeading(n *html.Node, text string) bool {
	found := false
	each(n, func(e *html.Node) {
		if !found && headingLevel(e) > 0 && collapse(textOf(e)) == text {
			found = true
		}
	})
	return found
}

// plain turns links into their text and images into their alt text: URLs
// are noise in chunks that are embedded and shown as citations.
func plain(n *html.Node) {
	var links, imgs, marks []*html.Node
	each(n, func(e *html.Node) {
		switch e.DataAtom {
		case atom.A:
			if permalink(e) {
				marks = append(marks, e)
				return
			}
			links = append(links, e)
		case atom.Img:
			imgs = append(imgs, e)
		}
	})
	for _, a := range marks {
		a.Parent.RemoveChild(a)
	}
	for _, a := range links {
		for c := a.FirstChild; c != nil; {
			next := c.NextSibling
			a.RemoveChild(c)
			a.Parent.InsertBefore(c, a)
			c = next
		}
		a.Parent.RemoveChild(a)
	}
	for _, img := range imgs {
		alt := ""
		for _, a := range img.Attr {
			if a.Key == "alt" {
				alt = collapse(a.Val)
			}
		}
		if alt != "" {
			img.Parent.InsertBefore(&html.Node{Type: html.TextNode, Data: alt}, img)
		}
		img.Parent.RemoveChild(img)
	}
}

// permalink reports whether a link is a page's anchor to itself drawn as
// a glyph (GitHub's and Node.js's "#", Sphinx's "¶", "§", "🔗"): text that
// means nothing in a passage and would end up in heading paths.
func permalink(a *html.Node) bool {
	text := strings.TrimSpace(textOf(a))
	switch text {
	case "#", "¶", "§", "🔗", "\U0001f517\ufe0f", "":
	default:
		return false
	}
	for _, at := range a.Attr {
		switch at.Key {
		case "href":
			if strings.HasPrefix(at.Val, "#") {
				return true
			}
		case "class":
			c := strings.ToLower(at.Val)
			if strings.Contains(c, "anchor") || strings.Contains(c, "headerlink") || strings.Contains(c, "permalink") {
				return true
			}
		}
	}
	return text != "" && a.Parent != nil && headingLevel(a.Parent) > 0
}

func headingLevel(e *html.Node) int {
	switch e.DataAtom {
	case atom.H1:
		return 1
	case atom.H2:
		return 2
	case atom.H3:
		return 3
	case atom.H4:
		return 4
	case atom.H5:
		return 5
	case atom.H6:
		return 6
	}
	return 0
}

// each calls fn for every element below n, in document order.
func each(n *html.Node, fn func(*html.Node)) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode {
			fn(c)
		}
		each(c, fn)
	}
}

func findFirst(n *html.Node, a atom.Atom) *html.Node {
	var found *html.Node
	var walk func(*html.Node) bool
	walk = func(n *html.Node) bool {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode && c.DataAtom == a {
				found = c
				return true
			}
			if walk(c) {
				return true
			}
		}
		return false
	}
	walk(n)
	return found
}

// textOf returns the text below n.
func textOf(n *html.Node) string {
	if n == nil {
		return ""
	}
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

var blankRun = regexp.MustCompile(`\n[ \t]*\n(?:[ \t]*\n)+`)

// tidyMarkdown trims trailing spaces and runs of blank lines.
func tidyMarkdown(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\u00a0")
	}
	s = strings.TrimSpace(blankRun.ReplaceAllString(strings.Join(lines, "\n"), "\n\n"))
	if s == "" {
		return ""
	}
	return s + "\n"
}

// convertNode runs the Markdown converter, turning a panic inside it (one
// escapes a trailing '#' in a one-byte heading out of range) into an error,
// so a hostile page is a per-file failure, never a crash.
func convertNode(ctx context.Context, c *converter.Converter, n *html.Node) (md []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the converter failed on this page: %v", p)
		}
	}()
	return c.ConvertNode(n, converter.WithContext(ctx))
}
