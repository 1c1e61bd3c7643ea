package load

import (
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"image"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/klippa-app/go-pdfium/requests"
)

// ocrText is the text of the generated scan; word accuracy is measured
// against it.
var ocrText = []string{
	"Refunds are paid within fourteen days of the return.",
	"Parcels leave the warehouse every weekday before noon.",
	"Gift cards cannot be exchanged for cash in any store.",
	"Customers may return unopened goods for thirty days.",
	"Support answers every message within one business day.",
}

// renderGray renders page 1 of a PDF in grey at dpi with the tests' PDF
// engine: the picture a scanner would take of the printed page.
func renderGray(t testing.TB, pdf []byte, dpi int) *image.Gray {
	t.Helper()
	pool, err := sharedPDF().start()
	if err != nil {
		t.Fatal(err)
	}
	defer sharedPDF().inflight.Done()
	inst, err := pool.GetInstanceWithContext(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	doc, err := inst.OpenDocument(&requests.OpenDocument{File: &pdf})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.FPDF_CloseDocument(&requests.FPDF_CloseDocument{Document: doc.Document})
	res, err := inst.RenderPageInDPI(&requests.RenderPageInDPI{
		Page: requests.Page{ByIndex: &requests.PageByIndex{Document: doc.Document, Index: 0}},
		DPI:  dpi, ImageFormat: requests.RenderImageFormatGrayscale,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Cleanup()
	src := res.Result.RenderedImage.(*image.Gray)
	return &image.Gray{Pix: bytes.Clone(src.Pix), Stride: src.Stride, Rect: src.Rect}
}

// scanPDF is a PDF whose pages are the given pictures drawn over a US
// Letter page and nothing else, as a scanner writes it; a nil picture is
// a page of text instead, so a document can mix both.
func scanPDF(pages []*image.Gray, text string) []byte {
	p := newPDF()
	p.obj("<< /Type /Catalog /Pages 2 0 R >>")
	kids := make([]string, len(pages))
	for i := range pages {
		kids[i] = fmt.Sprintf("%d 0 R", 4+3*i)
	}
	p.obj(fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(pages)))
	p.obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	for i, img := range pages {
		p.obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> /XObject << /Im1 %d 0 R >> >> /Contents %d 0 R >>", 5+3*i, 6+3*i))
		if img == nil {
			p.stream("", []byte("q Q"))
			p.stream("", []byte(fmt.Sprintf("BT /F1 12 Tf 72 720 Td (%s) Tj ET", text)))
			continue
		}
		var z bytes.Buffer
		w := zlib.NewWriter(&z)
		b := img.Bounds()
		for y := b.Min.Y; y < b.Max.Y; y++ {
			off := img.PixOffset(b.Min.X, y)
			w.Write(img.Pix[off : off+b.Dx()])
		}
		w.Close()
		p.stream(fmt.Sprintf("/Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode ", b.Dx(), b.Dy()), z.Bytes())
		p.stream("", []byte("q 612 0 0 792 0 0 cm /Im1 Do Q"))
	}
	return p.bytes("")
}

// scanOfText is a one-page scan of lines at dpi.
func scanOfText(t testing.TB, lines []string, dpi int) []byte {
	return scanPDF([]*image.Gray{renderGray(t, makePDF([]string{strings.Join(lines, "\n")}, false), dpi)}, "")
}

// fakeOCR answers every page with a text and counts the pages it saw.
type fakeOCR struct {
	mu    sync.Mutex
	text  string
	err   error
	pages int
	size  image.Point
}

func (f *fakeOCR) Recognize(_ context.Context, page *image.Gray) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pages++
	f.size = page.Bounds().Size()
	return f.text, f.err
}

func TestOCRPages(t *testing.T) {
	scan := renderGray(t, makePDF([]string{"Scanned words."}, false), 100)
	mixed := scanPDF([]*image.Gray{nil, scan, nil}, "Typed words.")
	ctx := context.Background()
	// One engine for the cases, which run in turn: only its OCR changes.
	r := &PDFReader{CacheDir: sharedPDF().CacheDir}
	defer r.Close()
	for _, tc := range []struct {
		name  string
		pdf   []byte
		ocr   *fakeOCR
		pages []int  // pages of the documents read
		err   string // in the error; "" for none
		seen  int    // pages OCR was asked for
	}{
		{"scan without OCR", scanPDF([]*image.Gray{scan}, ""), nil, nil, "needs OCR first", 0},
		{"scan", scanPDF([]*image.Gray{scan, scan}, ""), &fakeOCR{text: "Recognized words."}, []int{1, 2}, "", 2},
		{"mixed pages", mixed, &fakeOCR{text: "Recognized words."}, []int{1, 2, 3}, "", 1},
		{"text pages are not OCRed", makePDF([]string{"Typed words."}, false), &fakeOCR{text: "never"}, []int{1}, "", 0},
		// One bad page loses that page, not the document.
		{"a page OCR fails on", mixed, &fakeOCR{err: errors.New("engine broke")}, []int{1, 3}, "page 2: engine broke", 1},
		{"OCR on without tesseract", scanPDF([]*image.Gray{scan}, ""), nil, nil, "tesseract", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r.OCR = nil
			if tc.ocr != nil {
				r.OCR = tc.ocr
			} else if tc.seen > 0 {
				r.OCR = missingOCR{}
			}
			docs, err := r.Read(ctx, File{Path: "scan.pdf", Data: tc.pdf})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				if tc.pages == nil {
					return
				}
				if !errors.Is(err, ErrPartial) {
					t.Fatalf("error %v, want ErrPartial with the pages read", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			var pages []int
			for _, d := range docs {
				pages = append(pages, d.Provenance.Page)
			}
			if fmt.Sprint(pages) != fmt.Sprint(tc.pages) {
				t.Errorf("pages %v, want %v", pages, tc.pages)
			}
			if tc.ocr.pages != tc.seen {
				t.Errorf("OCR saw %d pages, want %d", tc.ocr.pages, tc.seen)
			}
			// The 100 DPI scan is rendered at the least OCR reads well.
			if d := tc.ocr.size.Sub(image.Pt(1275, 1650)); tc.seen > 0 && (d.X < -1 || d.X > 1 || d.Y < -1 || d.Y > 1) {
				t.Errorf("page rendered at %v, want US Letter at 150 DPI (1275×1650)", tc.ocr.size)
			}
		})
	}
}

func TestNewOCR(t *testing.T) {
	_, lookErr := FindTesseract()
	for _, tc := range []struct {
		mode    string
		none    bool // no engine
		missing bool // the engine that fails every page
		err     bool
	}{
		{"", true, false, false},
		{"off", true, false, false},
		{"auto", lookErr != nil, false, false},
		{"on", false, lookErr != nil, false},
		{"always", true, false, true},
	} {
		o, err := NewOCR(tc.mode)
		if (err != nil) != tc.err || (o == nil) != tc.none {
			t.Errorf("NewOCR(%q) = %v, %v", tc.mode, o, err)
		}
		if _, isMissing := o.(missingOCR); isMissing != tc.missing {
			t.Errorf("NewOCR(%q) = %T", tc.mode, o)
		}
	}
}

// tesseract is the OCR engine for the tests that run it: they skip when
// it is not installed, unless QUARRY_TEST_OCR says it must be (CI).
func tesseract(t testing.TB) *Tesseract {
	ts, err := FindTesseract()
	if err != nil {
		if os.Getenv("QUARRY_TEST_OCR") != "" {
			t.Fatalf("QUARRY_TEST_OCR is set: %v", err)
		}
		t.Skipf("tesseract is not installed (apt install tesseract-ocr; QUARRY_TEST_OCR=1 makes this a failure): %v", err)
	}
	return ts
}

// TestTesseractReadsAScan reads a generated scan whose text is known with
// the real tesseract.
func TestTesseractReadsAScan(t *testing.T) {
	r := &PDFReader{CacheDir: sharedPDF().CacheDir, OCR: tesseract(t)}
	defer r.Close()
	docs, err := r.Read(context.Background(), File{Path: "scan.pdf", Data: scanOfText(t, ocrText, 200)})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 1 || docs[0].Provenance.Page != 1 {
		t.Fatalf("%d documents, want page 1 alone", len(docs))
	}
	if acc := wordAccuracy(strings.Join(ocrText, " "), docs[0].Content); acc < 0.95 {
		t.Errorf("word accuracy %.3f, want at least 0.95; read:\n%s", acc, docs[0].Content)
	}
}

// BenchmarkTesseractScan reports OCR throughput (pages/s) and word
// accuracy on the generated 200 DPI scan: the whole read (render, then
// tesseract) beside tesseract alone on the same picture, the reference.
func BenchmarkTesseractScan(b *testing.B) {
	ts := tesseract(b)
	r := &PDFReader{CacheDir: sharedPDF().CacheDir, OCR: ts}
	defer r.Close()
	lines := ocrText
	scan := scanOfText(b, lines, 200)
	want := strings.Join(lines, " ")
	b.Run("read", func(b *testing.B) {
		var acc float64
		for b.Loop() {
			docs, err := r.Read(context.Background(), File{Path: "scan.pdf", Data: scan})
			if err != nil {
				b.Fatal(err)
			}
			acc = wordAccuracy(want, docs[0].Content)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
		b.ReportMetric(acc, "word-accuracy")
	})
	b.Run("tesseract-alone", func(b *testing.B) {
		img := renderGray(b, makePDF([]string{strings.Join(lines, "\n")}, false), 200)
		t := *ts
		t.DPI = 200
		var acc float64
		for b.Loop() {
			text, err := t.Recognize(context.Background(), img)
			if err != nil {
				b.Fatal(err)
			}
			acc = wordAccuracy(want, text)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
		b.ReportMetric(acc, "word-accuracy")
	})
}

// wordAccuracy is the share of the reference's words that the text holds
// in order (their longest common subsequence), case and punctuation
// aside.
func wordAccuracy(ref, got string) float64 {
	words := func(s string) []string {
		return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	}
	a, b := words(ref), words(got)
	if len(a) == 0 {
		return 1
	}
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			switch {
			case a[i] == b[j]:
				cur[j+1] = prev[j] + 1
			default:
				cur[j+1] = max(prev[j+1], cur[j])
			}
		}
		prev, cur = cur, prev
	}
	return float64(prev[len(b)]) / float64(len(a))
}

// TestPartPagesAreWritten: a PDF one of whose pages cannot be read (here
// OCR fails on it) is written with the pages that could, and the file's
// note names the page that could not.
func TestPartPagesAreWritten(t *testing.T) {
	scan := renderGray(t, makePDF([]string{"Scanned words."}, false), 100)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "mixed.pdf"), scanPDF([]*image.Gray{nil, scan, nil}, "Typed words."), 0o644); err != nil {
		t.Fatal(err)
	}
	l := New(Options{CacheDir: sharedPDF().CacheDir, OCR: &fakeOCR{err: errors.New("engine broke")}})
	defer l.Close()
	_, errs, results := walkAll(t, l, dir)
	if len(errs) > 0 || len(results) != 1 {
		t.Fatalf("errors %v, %d results", errs, len(results))
	}
	r := results[0]
	if len(r.Docs) != 2 || r.Docs[0].Provenance.Page != 1 || r.Docs[1].Provenance.Page != 3 || !strings.Contains(r.Note, "1 of 3 pages could not be read (page 2: ") {
		t.Errorf("%d documents, note %q", len(r.Docs), r.Note)
	}
}
