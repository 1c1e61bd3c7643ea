package load

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/split"
)

const (
	docxNS   = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"`
	docxRels = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`
	// docxStyles names headings the way Word does (ids Heading1, Heading2),
	// plus a localized heading whose id says nothing ("berschrift1" with
	// an outline level) and a custom style based on Heading 2.
	docxStyles = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:styles ` + docxNS + `>
<w:style w:type="paragraph" w:styleId="Normal"><w:name w:val="Normal"/></w:style>
<w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/><w:basedOn w:val="Normal"/><w:pPr><w:outlineLvl w:val="0"/></w:pPr></w:style>
<w:style w:type="paragraph" w:styleId="Heading2"><w:name w:val="heading 2"/><w:basedOn w:val="Normal"/></w:style>
<w:style w:type="paragraph" w:styleId="berschrift1"><w:name w:val="Überschrift 1"/><w:pPr><w:outlineLvl w:val="0"/></w:pPr></w:style>
<w:style w:type="paragraph" w:styleId="MyHeading"><w:name w:val="My Heading"/><w:basedOn w:val="Heading2"/></w:style>
<w:style w:type="paragraph" w:styleId="Title"><w:name w:val="Title"/></w:style>
</w:styles>`
	docxNumbering = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:numbering ` + docxNS + `>
<w:abstractNum w:abstractNumId="0"><w:lvl w:ilvl="0"><w:numFmt w:val="bullet"/></w:lvl><w:lvl w:ilvl="1"><w:numFmt w:val="bullet"/></w:lvl></w:abstractNum>
<w:abstractNum w:abstractNumId="1"><w:lvl w:ilvl="0"><w:numFmt w:val="decimal"/></w:lvl></w:abstractNum>
<w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num>
<w:num w:numId="2"><w:abstractNumId w:val="1"/></w:num>
</w:numbering>`
	docxCore = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Quarry Handbook</dc:title></cp:coreProperties>`
)

// docxParagraph writes a paragraph in a style ("" for none).
func docxParagraph(style, text string) string {
	p := "<w:p>"
	if style != "" {
		p += `<w:pPr><w:pStyle w:val="` + style + `"/></w:pPr>`
	}
	return p + `<w:r><w:rPr><w:b/></w:rPr><w:t xml:space="preserve">` + text + `</w:t></w:r></w:p>`
}

// makeDOCX writes a DOCX archive whose body is the given WordprocessingML.
func makeDOCX(t testing.TB, body string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for name, content := range map[string]string{
		"[Content_Types].xml": `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`,
		"_rels/.rels":         docxRels,
		"word/styles.xml":     docxStyles,
		"word/numbering.xml":  docxNumbering,
		"docProps/core.xml":   docxCore,
		"word/document.xml":   `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document ` + docxNS + `><w:body>` + body + `<w:sectPr/></w:body></w:document>`,
	} {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(content))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

const docxHandbook = `<w:p><w:pPr><w:pStyle w:val="Title"/></w:pPr><w:r><w:t>Quarry Handbook</w:t></w:r></w:p>` +
	`<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>Getting</w:t></w:r><w:r><w:t xml:space="preserve"> started</w:t></w:r></w:p>` +
	`<w:p><w:r><w:t>Quarry reads folders of documents and answers questions with citations.</w:t></w:r></w:p>` +
	`<w:p><w:pPr><w:pStyle w:val="Heading2"/></w:pPr><w:r><w:t>Installing Quarry</w:t></w:r></w:p>` +
	`<w:p><w:r><w:t>Download a release</w:t><w:tab/><w:t>and put it on your PATH before anything else.</w:t></w:r>` +
	`<w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText>HYPERLINK "x"</w:instrText></w:r>` +
	`<w:del><w:r><w:delText>removed words</w:delText></w:r></w:del></w:p>` +
	docxList1 +
	`<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Flag</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>Meaning</w:t></w:r></w:p></w:tc></w:tr>` +
	`<w:tr><w:tc><w:p><w:r><w:t>--kb</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>the knowledge</w:t></w:r></w:p><w:p><w:r><w:t>base folder</w:t></w:r></w:p></w:tc></w:tr></w:tbl>` +
	`<w:p><w:pPr><w:pStyle w:val="berschrift1"/></w:pPr><w:r><w:t>Zweites Kapitel</w:t></w:r></w:p>` +
	`<w:p><w:pPr><w:pStyle w:val="MyHeading"/></w:pPr><w:r><w:t>Custom heading</w:t></w:r></w:p>` +
	`<w:p><w:r><w:t># not a heading, just text that starts with a hash sign.</w:t></w:r></w:p>` +
	`<w:p><w:r><mc:AlternateContent><mc:Choice Requires="wps"><w:t>Box text once.</w:t></mc:Choice><mc:Fallback><w:t>Box text once.</w:t></mc:Fallback></mc:AlternateContent></w:r></w:p>`

const docxList1 = `<w:p><w:r><w:t>Steps to follow:</w:t></w:r></w:p>` +
	`<w:p><w:pPr><w:numPr><w:ilvl w:val="0"/><w:numId w:val="2"/></w:numPr></w:pPr><w:r><w:t>Download</w:t></w:r></w:p>` +
	`<w:p><w:pPr><w:numPr><w:ilvl w:val="0"/><w:numId w:val="2"/></w:numPr></w:pPr><w:r><w:t>Install</w:t></w:r></w:p>` +
	`<w:p><w:pPr><w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr></w:pPr><w:r><w:t>a bullet</w:t></w:r></w:p>` +
	`<w:p><w:pPr><w:numPr><w:ilvl w:val="1"/><w:numId w:val="1"/></w:numPr></w:pPr><w:r><w:t>a nested bullet</w:t></w:r></w:p>`

func TestDOCXMarkdown(t *testing.T) {
	docs, err := DOCXReader{}.Read(context.Background(), File{Path: "h.docx", Data: makeDOCX(t, docxHandbook)})
	if err != nil {
		t.Fatal(err)
	}
	want := "# Quarry Handbook\n\n# Getting started\n\n" +
		"Quarry reads folders of documents and answers questions with citations.\n\n" +
		"## Installing Quarry\n\nDownload a release\tand put it on your PATH before anything else.\n\n" +
		"Steps to follow:\n\n1. Download\n2. Install\n- a bullet\n  - a nested bullet\n\n" +
		"Flag | Meaning\n--kb | the knowledge base folder\n\n" +
		"# Zweites Kapitel\n\n## Custom heading\n\n" +
		"\\# not a heading, just text that starts with a hash sign.\n\nBox text once.\n"
	if docs[0].Content != want {
		t.Errorf("got\n%s\nwant\n%s", docs[0].Content, want)
	}
	if docs[0].Metadata["title"] != "Quarry Handbook" {
		t.Errorf("metadata %v", docs[0].Metadata)
	}
}

func TestDOCXHeadingPaths(t *testing.T) {
	body := docxParagraph("Heading1", "Refunds") +
		docxParagraph("", "Refunds are paid within thirty days of a request, to the card that paid.") +
		docxParagraph("Heading2", "Exceptions") +
		docxParagraph("", "Gift cards are never refunded in cash, whatever the amount on them.")
	docs, err := DOCXReader{}.Read(context.Background(), File{Path: "r.docx", Data: makeDOCX(t, body)})
	if err != nil {
		t.Fatal(err)
	}
	md, err := split.NewMarkdown(split.MarkdownConfig{})
	if err != nil {
		t.Fatal(err)
	}
	docs[0].SourceType, docs[0].SourceName = "file", "r.docx"
	chunks, err := split.SplitAll(md, docs)
	if err != nil {
		t.Fatal(err)
	}
	var paths [][]string
	for _, c := range chunks {
		paths = append(paths, c.Provenance.HeadingPath)
	}
	if want := [][]string{{"Refunds"}, {"Refunds", "Exceptions"}}; !reflect.DeepEqual(paths, want) {
		t.Errorf("heading paths %q, want %q", paths, want)
	}
}

func TestDOCXErrors(t *testing.T) {
	good := makeDOCX(t, docxParagraph("", "text"))
	var noDoc bytes.Buffer
	zw := zip.NewWriter(&noDoc)
	zw.Create("other.xml")
	zw.Close()
	for name, data := range map[string][]byte{
		"truncated": good[:len(good)/2],
		"empty":     {},
		"no body":   noDoc.Bytes(),
		"bad xml":   makeDOCX(t, "<w:p><w:r><w:t>unclosed"),
	} {
		_, err := DOCXReader{}.Read(context.Background(), File{Data: data})
		if err == nil || !strings.HasPrefix(err.Error(), "docx: ") {
			t.Errorf("%s: error %v", name, err)
		}
	}
	// A deflate bomb is cut off at the part limit, with an error.
	var bomb bytes.Buffer
	zw = zip.NewWriter(&bomb)
	w, _ := zw.Create("word/document.xml")
	w.Write([]byte(`<w:document ` + docxNS + `><w:body><w:p><w:r><w:t>`))
	w.Write(bytes.Repeat([]byte("a"), 2<<20))
	zw.Close()
	if _, err := (DOCXReader{maxPart: 1 << 20}).Read(context.Background(), File{Data: bomb.Bytes()}); !errors.Is(err, errPartTooLarge) {
		t.Errorf("bomb: %v", err)
	}
}
