package load

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWalkFormats reads a folder of every format with a corrupt PDF and a
// truncated DOCX among them: those two get per-file errors naming the
// reason, and everything else is read.
func TestWalkFormats(t *testing.T) {
	docx := makeDOCX(t, docxParagraph("Heading1", "Policy")+docxParagraph("", "Words of the policy document."))
	page, err := os.ReadFile("testdata/article.html")
	if err != nil {
		t.Fatal(err)
	}
	root := tree(t, map[string]string{
		"a/report.pdf":   string(makePDF([]string{"Page one.", "Page two."}, false)),
		"a/broken.pdf":   "%PDF-1.7\n1 0 obj << /Type /Catalog",
		"b/policy.docx":  string(docx),
		"b/cut.docx":     string(docx[:len(docx)-40]),
		"c/article.html": string(page),
		"c/notes.md":     "# Notes\n\nPlain notes.\n",
		"d/locked.pdf":   string(makePDF([]string{"Secret."}, true)),
	})
	l := New(Options{CacheDir: sharedPDF().CacheDir})
	defer l.Close()
	_, errs, results := walkAll(t, l, root)
	for name, says := range map[string]string{"a/broken.pdf": "corrupt", "b/cut.docx": "corrupt or truncated", "d/locked.pdf": "encrypted"} {
		var fe *FileError
		if err := errs[name]; !errors.As(err, &fe) || !strings.Contains(err.Error(), says) || !strings.Contains(err.Error(), filepath.FromSlash(name)) {
			t.Errorf("%s: error %v, want a file error saying %q", name, err, says)
		}
	}
	kinds := map[string]Kind{}
	for _, r := range results {
		kinds[r.Source.Name] = r.Kind
		if r.Err != nil {
			continue
		}
		for _, d := range r.Docs {
			if d.SourceName != r.Source.Name || d.Provenance.Source != r.Source.Name {
				t.Errorf("%s: document source %s / %s", r.Source.Name, d.SourceName, d.Provenance.Source)
			}
		}
		switch r.Source.Name {
		case "a/report.pdf":
			if len(r.Docs) != 2 || r.Docs[1].Provenance.Page != 2 {
				t.Errorf("pdf: %d pages", len(r.Docs))
			}
		case "b/policy.docx":
			if r.Docs[0].Content != "# Policy\n\nWords of the policy document.\n" {
				t.Errorf("docx: %q", r.Docs[0].Content)
			}
		}
	}
	if len(results) != 7 || len(errs) != 3 {
		t.Errorf("%d results, %d errors: %v", len(results), len(errs), errs)
	}
	if kinds["c/article.html"] != KindHTML || kinds["b/policy.docx"] != KindDOCX || kinds["a/report.pdf"] != KindPDF {
		t.Errorf("kinds %v", kinds)
	}
}
