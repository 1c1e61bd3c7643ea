package load

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// benchPages returns HTML pages to read: the PostgreSQL manual when it is
// installed, else the fixtures.
func benchPages(b *testing.B) [][]byte {
	b.Helper()
	names, _ := filepath.Glob(filepath.Join(pgDocs, "*.html"))
	if len(names) == 0 {
		names, _ = filepath.Glob("testdata/*.html")
	}
	var pages [][]byte
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			b.Fatal(err)
		}
		pages = append(pages, data)
	}
	return pages
}

// BenchmarkHTMLReader reports pages read per second (main content found
// and converted to Markdown).
func BenchmarkHTMLReader(b *testing.B) {
	pages := benchPages(b)
	r := &HTMLReader{}
	b.ResetTimer()
	n := 0
	for b.Loop() {
		if _, err := r.Read(context.Background(), File{Data: pages[n%len(pages)]}); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "pages/s")
}

// BenchmarkPDFReader reports PDF pages read per second, the engine
// already started.
func BenchmarkPDFReader(b *testing.B) {
	const perFile = 50
	text := make([]string, perFile)
	for i := range text {
		text[i] = fmt.Sprintf("Page %d of the benchmark report.\nIt has a few lines of text on stone, quarries and retrieval.\nAnd a third line.", i+1)
	}
	data := makePDF(text, false)
	r := sharedPDF()
	if _, err := r.Read(context.Background(), File{Data: data}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	pages := 0
	for b.Loop() {
		docs, err := r.Read(context.Background(), File{Data: data})
		if err != nil {
			b.Fatal(err)
		}
		pages += len(docs)
	}
	b.ReportMetric(float64(pages)/b.Elapsed().Seconds(), "pages/s")
}

// BenchmarkPDFStartup measures starting the PDF engine and reading one
// page, with an empty compilation cache (PDFium compiled from scratch) and
// with a warm one.
func BenchmarkPDFStartup(b *testing.B) {
	data := makePDF([]string{"start"}, false)
	read := func(dir string) {
		r := &PDFReader{CacheDir: dir, Workers: 1}
		defer r.Close()
		if _, err := r.Read(context.Background(), File{Data: data}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			dir := b.TempDir()
			b.StartTimer()
			read(dir)
		}
	})
	b.Run("warm", func(b *testing.B) {
		dir := b.TempDir()
		read(dir)
		b.ResetTimer()
		for b.Loop() {
			read(dir)
		}
	})
}

// BenchmarkPDFBook reads a whole book: the PDF that QUARRY_BENCH_PDF
// names (a real, typeset one: `groff -man -Tpdf` of a few large manual
// pages makes one), beside poppler's pdftotext on the same file when it is
// installed, the reference. It skips without the variable.
func BenchmarkPDFBook(b *testing.B) {
	path := os.Getenv("QUARRY_BENCH_PDF")
	if path == "" {
		b.Skip("set QUARRY_BENCH_PDF to a PDF to read")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []struct {
		name          string
		interruptible bool
	}{{"quarry", false}, {"quarry-interruptible", true}} {
		b.Run(mode.name, func(b *testing.B) {
			r := &PDFReader{CacheDir: sharedPDF().CacheDir, Workers: 1, Interruptible: mode.interruptible}
			defer r.Close()
			if _, err := r.Read(context.Background(), File{Data: data}); err != nil {
				b.Fatal(err)
			}
			pages := 0
			for b.Loop() {
				docs, err := r.Read(context.Background(), File{Data: data})
				if err != nil {
					b.Fatal(err)
				}
				pages += len(docs)
			}
			b.ReportMetric(float64(pages)/b.Elapsed().Seconds(), "pages/s")
		})
	}
	b.Run("pdftotext", func(b *testing.B) {
		bin, err := exec.LookPath("pdftotext")
		if err != nil {
			b.Skip("pdftotext is not installed (apt install poppler-utils)")
		}
		for b.Loop() {
			if out, err := exec.Command(bin, path, os.DevNull).CombinedOutput(); err != nil {
				b.Fatalf("pdftotext: %v: %s", err, out)
			}
		}
	})
}

// BenchmarkEncodedShare measures the data test ingestion runs on every
// chunk of prose and code, over real code (this package's own source).
func BenchmarkEncodedShare(b *testing.B) {
	data, err := os.ReadFile("load.go")
	if err != nil {
		b.Fatal(err)
	}
	text := string(data)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		EncodedShare(text)
	}
}
