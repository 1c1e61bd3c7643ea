package load

import (
	"archive/zip"
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/quarry-rag/quarry/document"
)

// fuzzDeadline is how long one input may take before it counts as a hang.
const fuzzDeadline = 10 * time.Second

// withDeadline runs read and fails the input when it has not returned
// within fuzzDeadline, so the fuzzer keeps a hanging input.
func withDeadline(t *testing.T, read func() error) error {
	done := make(chan error, 1)
	go func() { done <- read() }()
	select {
	case err := <-done:
		return err
	case <-time.After(fuzzDeadline):
		t.Fatalf("no result after %v", fuzzDeadline)
		return nil
	}
}

func FuzzHTMLReader(f *testing.F) {
	for _, name := range []string{"testdata/article.html", "testdata/manual.html"} {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		"", "<html><head><title>t</title></head><body><h1>x</h1><p>y</p></body></html>",
		"<table><tr><td><table><tr><td>nested</td></tr></table></td></tr></table>",
		"<nav><header><footer><aside>", "<h1><a href=x><img alt=y></a></h1>",
		"<meta charset=\"shift_jis\"><p>\x82\xa0</p>", "<pre>a\n# b\n```</pre>",
		"<h2>Learn C#</h2><p>inter\uFFFEpreter</p>", "<h2>x<a href=#x>¶</a></h2>",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var docs []*document.Document
		err := withDeadline(t, func() (err error) {
			docs, err = (&HTMLReader{}).Read(context.Background(), File{Path: "f.html", Data: data})
			return err
		})
		if err != nil {
			return
		}
		if len(docs) != 1 || !utf8.ValidString(docs[0].Content) || strings.IndexFunc(docs[0].Content, document.NonCharacter) >= 0 {
			t.Fatalf("documents %v", docs)
		}
	})
}

// zipped puts body into word/document.xml of an archive.
func zipped(body string) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, _ := zw.Create("word/document.xml")
	w.Write([]byte(body))
	zw.Close()
	return b.Bytes()
}

func FuzzDOCXReader(f *testing.F) {
	f.Add(makeDOCX(f, docxHandbook), "")
	f.Add([]byte{}, `<w:document `+docxNS+`><w:body>`+docxHandbook+`</w:body></w:document>`)
	f.Add([]byte{}, `<w:document `+docxNS+`><w:body><w:tbl><w:tr><w:tc><w:tbl><w:tr><w:tc><w:p><w:r><w:t>x</w:t></w:r></w:p></w:tc></w:tr></w:tbl></w:tc></w:tr></w:tbl></w:body></w:document>`)
	f.Add([]byte("PK\x03\x04"), "<w:p><w:p><w:p>")
	f.Fuzz(func(t *testing.T, archive []byte, body string) {
		data := archive
		if body != "" {
			data = zipped(body)
		}
		var docs []*document.Document
		err := withDeadline(t, func() (err error) {
			docs, err = DOCXReader{maxPart: 8 << 20}.Read(context.Background(), File{Path: "f.docx", Data: data})
			return err
		})
		if err == nil && (len(docs) != 1 || strings.Contains(docs[0].Content, "\x00") || strings.IndexFunc(docs[0].Content, document.NonCharacter) >= 0) {
			t.Fatalf("documents %v", docs)
		}
	})
}

// FuzzPDFReader feeds PDFium damaged and odd PDFs. The engine is started
// once per fuzzing process (a fraction of a second with the compilation
// cache warm); a read past the deadline is stopped and reported.
func FuzzPDFReader(f *testing.F) {
	f.Add(makePDF([]string{"one", "two\nlines", "three"}, false))
	f.Add(makePDF([]string{"locked"}, true))
	f.Add(makePDF([]string{""}, false))
	f.Add([]byte("%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), fuzzDeadline)
		defer cancel()
		docs, err := sharedPDF().Read(ctx, File{Path: "f.pdf", Data: data})
		if ctx.Err() != nil {
			t.Fatalf("read did not finish within %v", fuzzDeadline)
		}
		if err != nil {
			return
		}
		for i, d := range docs {
			if d.Provenance.Page < 1 || (i > 0 && d.Provenance.Page <= docs[i-1].Provenance.Page) || !utf8.ValidString(d.Content) ||
				strings.IndexFunc(d.Content, document.NonCharacter) >= 0 {
				t.Fatalf("page %d: %+v", i, d.Provenance)
			}
		}
	})
}
