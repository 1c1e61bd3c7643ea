package load

import (
	"archive/zip"
	"bytes"
	"cmp"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/quarry-rag/quarry/document"
)

// docxMaxPart bounds the uncompressed size of one part of a DOCX file, so a
// small file cannot expand without limit.
const docxMaxPart = 256 << 20

// DOCXReader reads a Word document (DOCX) as one Markdown document, so that
// the Markdown splitter gives each chunk its heading path.
//
// Paragraphs in a heading style (Title, Heading 1 to Heading 9, styles
// based on them, or paragraphs with an outline level) become Markdown
// headings: Title and Heading 1 are level 1, Heading n level n, capped at 6.
// Style ids are resolved through styles.xml, so localized style names work.
// List paragraphs become "- " or "1. " lines indented by level; a table
// becomes one line per row with its cells separated by " | ". Deleted text,
// field codes and the fallback copies of text boxes are left out. The
// document title from docProps/core.xml becomes metadata "title".
//
// It uses only archive/zip and encoding/xml. The zero value is ready to use
// and safe for concurrent use.
type DOCXReader struct {
	maxPart int64 // docxMaxPart when 0; tests lower it
}

// cfbMagic starts an OLE compound file, where Office keeps encrypted
// documents.
var cfbMagic = []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}

// Read implements Reader. A file that is not a complete ZIP archive, or
// lacks its main document part, is an error that says so.
func (r DOCXReader) Read(_ context.Context, f File) ([]*document.Document, error) {
	limit := cmp.Or(r.maxPart, docxMaxPart)
	withPart := func(zf *zip.File, fn func(*xml.Decoder) error) error { return decodePart(zf, limit, fn) }
	zr, err := zip.NewReader(bytes.NewReader(f.Data), int64(len(f.Data)))
	if err != nil {
		return nil, fmt.Errorf("docx: corrupt or truncated archive: %w", err)
	}
	parts := map[string]*zip.File{}
	for _, zf := range zr.File {
		parts[zf.Name] = zf
	}
	main := mainPart(parts, limit)
	if parts[main] == nil {
		return nil, fmt.Errorf("docx: not a Word document: the archive has no %s", main)
	}
	w := &docxWriter{styles: map[string]docxStyle{}, lists: map[string]bool{}, counters: map[string]int{}}
	if sf := parts[path.Join(path.Dir(main), "styles.xml")]; sf != nil {
		if err := withPart(sf, w.readStyles); err != nil {
			return nil, fmt.Errorf("docx: styles: %w", err)
		}
	}
	if nf := parts[path.Join(path.Dir(main), "numbering.xml")]; nf != nil {
		if err := withPart(nf, w.readNumbering); err != nil {
			return nil, fmt.Errorf("docx: numbering: %w", err)
		}
	}
	if err := withPart(parts[main], w.readBody); err != nil {
		return nil, fmt.Errorf("docx: %s: %w", main, err)
	}
	doc := document.New(document.StripNonCharacters(w.String()))
	doc.ID = ""
	if cf := parts["docProps/core.xml"]; cf != nil {
		var title string
		err := withPart(cf, func(d *xml.Decoder) (err error) {
			title, err = coreTitle(d)
			return err
		})
		if err == nil && title != "" {
			doc.Metadata = map[string]any{"title": title}
		}
	}
	return []*document.Document{doc}, nil
}

// mainPart finds the main document part through the package relationships,
// defaulting to word/document.xml.
func mainPart(parts map[string]*zip.File, limit int64) string {
	const def = "word/document.xml"
	rf := parts["_rels/.rels"]
	if rf == nil {
		return def
	}
	target := ""
	_ = decodePart(rf, limit, func(d *xml.Decoder) error {
		for {
			tok, err := d.Token()
			if err != nil {
				return nil
			}
			if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "Relationship" &&
				strings.HasSuffix(attr(se, "Type"), "/officeDocument") {
				target = strings.TrimPrefix(attr(se, "Target"), "/")
				return nil
			}
		}
	})
	if target == "" {
		return def
	}
	return path.Clean(target)
}

// errPartTooLarge is a part that expands beyond the size limit.
var errPartTooLarge = errors.New("a part expands beyond the size limit (a zip bomb?)")

// decodePart decodes one part of the archive, at most limit bytes of it.
func decodePart(zf *zip.File, limit int64, fn func(*xml.Decoder) error) error {
	rc, err := zf.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	lr := &limitedReader{r: rc, n: limit}
	if err := fn(xml.NewDecoder(lr)); err != nil {
		if lr.over {
			return errPartTooLarge
		}
		return err
	}
	return nil
}

// limitedReader is io.LimitReader that remembers hitting the limit, so the
// error can say why the XML ended early.
type limitedReader struct {
	r    io.Reader
	n    int64
	over bool
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		l.over = true
		return 0, io.ErrUnexpectedEOF
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

func attr(se xml.StartElement, local string) string {
	for _, a := range se.Attr {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

// docxStyle is what matters of a paragraph style: its heading level
// (0 for none), the style it is based on, and whether it is a list style.
type docxStyle struct {
	level   int
	basedOn string
	bullet  bool
}

// readStyles records the heading level of each paragraph style, by name
// (Title, heading 1–9) or outline level.
func (w *docxWriter) readStyles(d *xml.Decoder) error {
	var id string
	var cur docxStyle
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "style":
				id, cur = attr(t, "styleId"), docxStyle{}
			case "name":
				name := strings.ToLower(strings.TrimSpace(attr(t, "val")))
				if lvl, ok := headingName(name); ok {
					cur.level = lvl
				}
				cur.bullet = strings.HasPrefix(name, "list bullet")
			case "basedOn":
				cur.basedOn = attr(t, "val")
			case "outlineLvl":
				if n, err := strconv.Atoi(attr(t, "val")); err == nil && n >= 0 && n < 9 && cur.level == 0 {
					cur.level = n + 1
				}
			}
		case xml.EndElement:
			if t.Name.Local == "style" && id != "" {
				w.styles[id] = cur
				id = ""
			}
		}
	}
}

// headingName maps a style name or id to a heading level.
func headingName(name string) (int, bool) {
	name = strings.ToLower(name)
	if name == "title" {
		return 1, true
	}
	rest, ok := strings.CutPrefix(name, "heading")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(rest))
	if err != nil || n < 1 || n > 9 {
		return 0, false
	}
	return n, true
}

// styleLevel resolves a style's heading level through basedOn links.
func (w *docxWriter) styleLevel(id string) int {
	for range 16 { // basedOn chains are short; a loop must not hang us
		s, ok := w.styles[id]
		if !ok {
			lvl, _ := headingName(id)
			return lvl
		}
		if s.level > 0 {
			return s.level
		}
		if s.basedOn == "" {
			return 0
		}
		id = s.basedOn
	}
	return 0
}

// readNumbering records which list definitions are bulleted, by numId and
// level.
func (w *docxWriter) readNumbering(d *xml.Decoder) error {
	abstract := map[string]map[string]bool{} // abstractNumId → ilvl → bullet
	nums := map[string]string{}              // numId → abstractNumId
	var absID, lvl, numID string
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch se.Name.Local {
		case "abstractNum":
			absID = attr(se, "abstractNumId")
			abstract[absID] = map[string]bool{}
		case "lvl":
			lvl = attr(se, "ilvl")
		case "numFmt":
			if m := abstract[absID]; m != nil {
				m[lvl] = attr(se, "val") == "bullet"
			}
		case "num":
			numID = attr(se, "numId")
		case "abstractNumId":
			nums[numID] = attr(se, "val")
		}
	}
	for num, abs := range nums {
		for l, bullet := range abstract[abs] {
			w.lists[num+"/"+l] = bullet
		}
	}
	return nil
}

// docxPara is a paragraph being read.
type docxPara struct {
	style   string
	outline int // outline level + 1 set on the paragraph itself
	numID   string
	ilvl    string
	text    strings.Builder
}

// docxTable is a table being read: its rows so far, the current row's
// cells, and the current cell's paragraphs.
type docxTable struct {
	rows [][]string
	row  []string
	cell []string
}

// docxWriter turns a document part into Markdown blocks.
type docxWriter struct {
	styles   map[string]docxStyle
	lists    map[string]bool // numId/ilvl → bulleted
	counters map[string]int  // numId/ilvl → items so far
	blocks   []docxBlock
}

type docxBlock struct {
	text string
	list bool
}

func (w *docxWriter) String() string {
	var b strings.Builder
	for i, bl := range w.blocks {
		if i > 0 {
			if bl.list && w.blocks[i-1].list {
				b.WriteByte('\n')
			} else {
				b.WriteString("\n\n")
			}
		}
		b.WriteString(bl.text)
	}
	if b.Len() > 0 {
		b.WriteByte('\n')
	}
	return b.String()
}

// readBody walks the document part. Paragraphs nest (a text box inside a
// paragraph holds paragraphs) and so do tables, so both are stacks.
func (w *docxWriter) readBody(d *xml.Decoder) error {
	var paras []*docxPara
	var tables []*docxTable
	inRun := 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			var p *docxPara
			if len(paras) > 0 {
				p = paras[len(paras)-1]
			}
			switch t.Name.Local {
			case "p":
				paras = append(paras, &docxPara{})
			case "pStyle":
				if p != nil {
					p.style = attr(t, "val")
				}
			case "outlineLvl":
				if n, err := strconv.Atoi(attr(t, "val")); p != nil && err == nil && n >= 0 && n < 9 {
					p.outline = n + 1
				}
			case "numId":
				if p != nil {
					p.numID = attr(t, "val")
				}
			case "ilvl":
				if p != nil {
					p.ilvl = attr(t, "val")
				}
			case "r":
				inRun++
			case "t":
				var s string
				if err := d.DecodeElement(&s, &t); err != nil {
					return err
				}
				if p != nil {
					p.text.WriteString(s)
				}
			case "tab":
				if p != nil && inRun > 0 {
					p.text.WriteByte('\t')
				}
			case "br", "cr":
				if p != nil && inRun > 0 {
					p.text.WriteByte('\n')
				}
			case "noBreakHyphen":
				if p != nil {
					p.text.WriteByte('-')
				}
			case "instrText", "delText", "Fallback", "rPr", "sectPr", "del":
				// Field codes, deletions, duplicate text-box copies and
				// formatting hold no text of the document.
				if err := d.Skip(); err != nil {
					return err
				}
			case "tbl":
				tables = append(tables, &docxTable{})
			case "tr":
				if len(tables) > 0 {
					tables[len(tables)-1].row = nil
				}
			case "tc":
				if len(tables) > 0 {
					tables[len(tables)-1].cell = nil
				}
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "r":
				inRun--
			case "p":
				if len(paras) == 0 {
					continue
				}
				p := paras[len(paras)-1]
				paras = paras[:len(paras)-1]
				switch {
				case len(paras) > 0:
					// A text box's paragraph continues the enclosing one.
					paras[len(paras)-1].text.WriteString(" " + p.text.String() + " ")
				case len(tables) > 0:
					tb := tables[len(tables)-1]
					if s := collapse(p.text.String()); s != "" {
						tb.cell = append(tb.cell, s)
					}
				default:
					w.paragraph(p)
				}
			case "tc":
				if len(tables) > 0 {
					tb := tables[len(tables)-1]
					tb.row = append(tb.row, strings.Join(tb.cell, " "))
				}
			case "tr":
				if len(tables) > 0 {
					tb := tables[len(tables)-1]
					if strings.Trim(strings.Join(tb.row, ""), " ") != "" {
						tb.rows = append(tb.rows, tb.row)
					}
				}
			case "tbl":
				if len(tables) == 0 {
					continue
				}
				tb := tables[len(tables)-1]
				tables = tables[:len(tables)-1]
				lines := make([]string, len(tb.rows))
				for i, r := range tb.rows {
					lines[i] = strings.Join(r, " | ")
				}
				if len(tables) > 0 {
					// A nested table is text in its cell.
					outer := tables[len(tables)-1]
					outer.cell = append(outer.cell, strings.Join(lines, "; "))
				} else if len(lines) > 0 {
					w.blocks = append(w.blocks, docxBlock{text: strings.Join(lines, "\n")})
				}
			}
		}
	}
}

// paragraph adds a top-level paragraph as a heading, a list item or text.
func (w *docxWriter) paragraph(p *docxPara) {
	text := strings.TrimSpace(p.text.String())
	if text == "" {
		return
	}
	level := p.outline
	if level == 0 && p.style != "" {
		level = w.styleLevel(p.style)
	}
	if level > 0 {
		w.blocks = append(w.blocks, docxBlock{text: strings.Repeat("#", min(level, 6)) + " " + collapse(text)})
		return
	}
	bullet, isList := false, false
	if p.numID != "" && p.numID != "0" {
		key := p.numID + "/" + cmp.Or(p.ilvl, "0")
		bullet, isList = w.lists[key], true
		if !bullet {
			w.counters[key]++
		}
	} else if s, ok := w.styles[p.style]; ok && s.bullet {
		bullet, isList = true, true
	}
	if isList {
		depth, _ := strconv.Atoi(p.ilvl)
		marker := "- "
		if !bullet {
			marker = strconv.Itoa(w.counters[p.numID+"/"+cmp.Or(p.ilvl, "0")]) + ". "
		}
		w.blocks = append(w.blocks, docxBlock{text: strings.Repeat("  ", min(max(depth, 0), 8)) + marker + collapse(text), list: true})
		return
	}
	// Text that would read as Markdown structure is escaped, so only real
	// headings cut sections.
	if strings.HasPrefix(text, "#") || strings.HasPrefix(text, "```") || strings.HasPrefix(text, "~~~") {
		text = `\` + text
	}
	w.blocks = append(w.blocks, docxBlock{text: text})
}

// coreTitle reads dc:title from docProps/core.xml.
func coreTitle(d *xml.Decoder) (string, error) {
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "title" {
			var s string
			if err := d.DecodeElement(&s, &se); err != nil {
				return "", err
			}
			return collapse(s), nil
		}
	}
}
