package ingest_test

import (
	"context"
	"fmt"
	"image"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/load"
	"github.com/quarry-rag/quarry/store"
)

// TestOneOutcomePerFile checks every file ends in exactly one outcome the
// report counts: written, unchanged, not read on purpose (an image),
// without text (empty, an encrypted Office file) or could not be parsed
// (a broken archive) — and that only the last is a failure.
func TestOneOutcomePerFile(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"guide.md": "# Guide\n\nRun the installer.\n", "empty.txt": ""})
	files := map[string][]byte{
		"logo.png":    append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), make([]byte, 64)...),
		"secret.docx": append([]byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}, make([]byte, 512)...),
		"broken.docx": []byte("PK\x03\x04 this archive stops here"),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(root, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := newEnv(t, t.TempDir())
	rep := e.ingest(t, ingest.Options{}, root)
	if rep.Files != 5 || rep.Written != 1 || rep.Ignored != 1 || rep.NoText != 2 || rep.Failed != 1 {
		t.Fatalf("report: %+v", rep)
	}
	if rep.Files != rep.Written+rep.Skipped+rep.Ignored+rep.NoText+rep.Failed {
		t.Errorf("outcomes do not add up to the files: %+v", rep)
	}
	notes := strings.Join(rep.Notes, "\n")
	for _, want := range []string{"logo.png", "empty.txt: no text: the file is empty", "secret.docx", "encrypted"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if len(rep.Errors) != 1 || !strings.Contains(rep.Errors[0], "broken.docx") {
		t.Errorf("errors: %v", rep.Errors)
	}
	// A second run: the written and the empty file are unchanged, the rest
	// are looked at again and end the same way.
	rep = e.ingest(t, ingest.Options{}, root)
	if rep.Skipped != 2 || rep.Written != 0 || rep.Ignored != 1 || rep.NoText != 1 || rep.Failed != 1 {
		t.Errorf("second run: %+v", rep)
	}
}

// scanOCR is an OCR engine for tests: every scanned page reads as text.
type scanOCR struct{}

func (scanOCR) Recognize(context.Context, *image.Gray) (string, error) {
	return "Recognized refunds text.", nil
}

// TestOCRReReadsPDFsOnly checks turning OCR on re-reads the PDFs, whose
// scanned pages now give text, and leaves other unchanged files alone; and
// that a scan is read once OCR is on.
func TestOCRReReadsPDFsOnly(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"guide.md": "# Guide\n\nRun the installer.\n"})
	for _, name := range []string{"scan.pdf", "mixed.pdf"} {
		// mixed.pdf: a page of text, then a scanned page.
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := newEnv(t, t.TempDir())
	plain := load.New(load.Options{})
	defer plain.Close()
	withOCR := load.New(load.Options{OCR: scanOCR{}})
	defer withOCR.Close()
	rep := e.ingest(t, ingest.Options{Loader: plain}, root)
	if rep.Written != 2 || rep.NoText != 1 || !strings.Contains(strings.Join(rep.Notes, "\n"), "needs OCR") {
		t.Fatalf("without OCR: %+v", rep)
	}
	rep = e.ingest(t, ingest.Options{Loader: withOCR}, root)
	if rep.Written != 2 || rep.Skipped != 1 || rep.NoText != 0 {
		t.Fatalf("with OCR: the PDFs are read again, the guide is not: %+v", rep)
	}
	pages := map[int]bool{}
	hits, err := e.coll.Search(context.Background(), store.SearchRequest{Mode: store.ModeKeyword, Query: "recognized", TopK: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		pages[h.Doc.Provenance.Page] = true
	}
	if len(hits) != 2 || !pages[1] || !pages[2] {
		t.Errorf("OCRed pages: %d hits on pages %v, want page 1 of the scan and page 2 of mixed.pdf", len(hits), pages)
	}
	rep = e.ingest(t, ingest.Options{Loader: withOCR}, root)
	if rep.Skipped != 3 {
		t.Fatalf("with OCR again: %+v", rep)
	}
}

// TestEncodedChunksLeftOut: inside a file of code, the chunks that are a
// key or a table of constants are left out and the file's note says how
// many; the code around them is written. Keeping data keeps them.
func TestEncodedChunksLeftOut(t *testing.T) {
	root := t.TempDir()
	var table strings.Builder
	table.WriteString("// p256Precomputed holds multiples of the base point.\nvar p256Precomputed = [...]uint64{\n")
	for i := range 40 {
		fmt.Fprintf(&table, "\t0x%016x, 0x%016x, 0x%016x, 0x%016x,\n", i*7919, i*104729, i*1299709, i*15485863)
	}
	table.WriteString("}\n")
	prose := strings.Repeat("// The curve's arithmetic runs in constant time, so that how long it takes says nothing about the secret it works on.\n", 30)
	code := "package curve\n\n" + prose + "// Double doubles a point on the curve, in constant time.\nfunc Double(p Point) Point {\n\treturn add(p, p)\n}\n\n" + table.String() +
		"\n// Add adds two points on the curve and returns their sum.\nfunc Add(p, q Point) Point {\n\treturn add(p, q)\n}\n"
	writeTree(t, root, map[string]string{"curve/curve.go": code})
	for _, keep := range []bool{false, true} {
		e := newEnv(t, t.TempDir())
		rep := e.ingest(t, ingest.Options{Loader: load.New(load.Options{KeepData: keep})}, root)
		if rep.Written != 1 {
			t.Fatalf("keep %v: %+v", keep, rep)
		}
		var texts []string
		err := e.coll.Scan(t.Context(), 0, func(docs []*document.Document) error {
			for _, d := range docs {
				texts = append(texts, d.Content)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		all := strings.Join(texts, "\n")
		left := !strings.Contains(all, "0x0000000000001eef")
		note := strings.Join(rep.Notes, "\n")
		if left == keep || !strings.Contains(all, "func Double") || !strings.Contains(all, "func Add") {
			t.Errorf("keep %v: the table left out %v; chunks %d", keep, left, len(texts))
		}
		if strings.Contains(note, "chunks of encoded data") == keep {
			t.Errorf("keep %v: notes %q", keep, note)
		}
		e.s.Close()
	}
}

// TestLeftOutFoldersAreReported: a folder left out for its name (build,
// vendor, node_modules) is named in the report, since a folder of real
// sources can bear such a name (Go's go/build); with no names to skip it
// is read.
func TestLeftOutFoldersAreReported(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"go/build/build.go":       "package build\n\n// Import finds the package named by an import path.\nfunc Import(path string) error { return nil }\n",
		"web/node_modules/x/a.js": "module.exports = function add(a, b) { return a + b }\n",
		"README.md":               "# Tools\n\nThe build package finds packages.\n",
	})
	for _, skip := range [][]string{nil, {}} {
		e := newEnv(t, t.TempDir())
		rep := e.ingest(t, ingest.Options{Loader: load.New(load.Options{SkipFolders: skip})}, root)
		notes := strings.Join(rep.Notes, "\n")
		if skip == nil {
			if rep.Written != 1 || !strings.Contains(notes, filepath.Join("go", "build")+": left out: a folder named build") ||
				!strings.Contains(notes, "a folder named node_modules") {
				t.Errorf("default: %d written, notes %q", rep.Written, notes)
			}
		} else if rep.Written != 3 || strings.Contains(notes, "left out") {
			t.Errorf("no folders skipped: %d written, notes %q", rep.Written, notes)
		}
		e.s.Close()
	}
}

// TestEmptyFilesAreNamed: an empty file's outcome (without text) reaches
// the run's events with its name, as every other notice does, so the
// command line prints it; it used to be counted and never named.
func TestEmptyFilesAreNamed(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"guide.md": "# Guide\n\nRun the installer.\n", "notes/empty.txt": ""})
	var named []string
	e := newEnv(t, t.TempDir())
	defer e.s.Close()
	rep := e.ingest(t, ingest.Options{Progress: func(ev ingest.Event) {
		if ev.Note != "" {
			named = append(named, ev.Note)
		}
	}}, root)
	if rep.NoText != 1 || len(named) != 1 || !strings.Contains(named[0], filepath.Join("notes", "empty.txt")+": no text: the file is empty") {
		t.Errorf("no text %d, notes in events %q", rep.NoText, named)
	}
}
