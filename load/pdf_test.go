package load

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rc4"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/quarry-rag/quarry/split"
)

// pdfFile writes a PDF by hand: numbered objects, then the cross-reference
// table and the trailer.
type pdfFile struct {
	b       bytes.Buffer
	offsets []int
}

func newPDF() *pdfFile {
	p := &pdfFile{}
	p.b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	return p
}

// obj writes the next object and returns its number.
func (p *pdfFile) obj(body string) int {
	p.offsets = append(p.offsets, p.b.Len())
	fmt.Fprintf(&p.b, "%d 0 obj\n%s\nendobj\n", len(p.offsets), body)
	return len(p.offsets)
}

// stream writes a stream object of data with the dictionary entries dict.
func (p *pdfFile) stream(dict string, data []byte) int {
	p.offsets = append(p.offsets, p.b.Len())
	fmt.Fprintf(&p.b, "%d 0 obj\n<< /Length %d %s>>\nstream\n", len(p.offsets), len(data), dict)
	p.b.Write(data)
	p.b.WriteString("\nendstream\nendobj\n")
	return len(p.offsets)
}

// bytes ends the file, with trailer entries extra beside /Size and /Root.
func (p *pdfFile) bytes(extra string) []byte {
	xref := p.b.Len()
	fmt.Fprintf(&p.b, "xref\n0 %d\n0000000000 65535 f \n", len(p.offsets)+1)
	for _, off := range p.offsets {
		fmt.Fprintf(&p.b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&p.b, "trailer\n<< /Size %d /Root 1 0 R%s >>\nstartxref\n%d\n%%%%EOF\n", len(p.offsets)+1, extra, xref)
	return p.b.Bytes()
}

// makePDF writes a minimal PDF by hand: one page per entry of pages, each
// line of an entry set in Helvetica. With encrypt set, the document is
// protected by the standard security handler (RC4, revision 2) with the
// user password "secret".
func makePDF(pages []string, encrypt bool) []byte {
	p := newPDF()
	n := len(pages)
	kids := make([]string, n)
	for i := range pages {
		kids[i] = fmt.Sprintf("%d 0 R", 4+2*i)
	}
	p.obj("<< /Type /Catalog /Pages 2 0 R >>")
	p.obj(fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), n))
	p.obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	for i, text := range pages {
		var s strings.Builder
		s.WriteString("BT /F1 12 Tf 14 TL 72 720 Td\n")
		for _, line := range strings.Split(text, "\n") {
			r := strings.NewReplacer(`\`, `\\`, "(", `\(`, ")", `\)`)
			fmt.Fprintf(&s, "(%s) Tj T*\n", r.Replace(line))
		}
		s.WriteString("ET")
		p.obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", 5+2*i))
		p.stream("", []byte(s.String()))
	}
	id := "0123456789abcdef"
	extra := fmt.Sprintf(" /ID [<%x> <%x>]", id, id)
	if encrypt {
		o, u := rc4Keys("secret", "owner", id)
		extra += fmt.Sprintf(" /Encrypt %d 0 R", p.obj(fmt.Sprintf("<< /Filter /Standard /V 1 /R 2 /O <%x> /U <%x> /P -4 >>", o, u)))
	}
	return p.bytes(extra)
}

// imagePDF is one page that is an image and nothing else, as a scanner
// writes: an 8×8 grey picture drawn over the page, no text layer.
func imagePDF() []byte {
	p := newPDF()
	p.obj("<< /Type /Catalog /Pages 2 0 R >>")
	p.obj("<< /Type /Pages /Kids [3 0 R] /Count 1 >>")
	p.obj("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /Im1 4 0 R >> >> /Contents 5 0 R >>")
	p.stream("/Type /XObject /Subtype /Image /Width 8 /Height 8 /ColorSpace /DeviceGray /BitsPerComponent 8 ", bytes.Repeat([]byte{0x80}, 64))
	p.stream("", []byte("q 468 0 0 648 72 72 cm /Im1 Do Q"))
	return p.bytes("")
}

// rc4Keys computes the O and U entries of the standard security handler,
// revision 2 (PDF 1.7, algorithms 3.2 to 3.4).
func rc4Keys(user, owner, id string) (o, u []byte) {
	pad := []byte("\x28\xbf\x4e\x5e\x4e\x75\x8a\x41\x64\x00\x4e\x56\xff\xfa\x01\x08\x2e\x2e\x00\xb6\xd0\x68\x3e\x80\x2f\x0c\xa9\xfe\x64\x53\x69\x7a")
	padded := func(pw string) []byte { return append([]byte(pw), pad...)[:32] }
	ok := md5.Sum(padded(owner))
	c, _ := rc4.NewCipher(ok[:5])
	o = make([]byte, 32)
	c.XORKeyStream(o, padded(user))
	h := md5.New()
	h.Write(padded(user))
	h.Write(o)
	binary.Write(h, binary.LittleEndian, int32(-4))
	h.Write([]byte(id))
	key := h.Sum(nil)[:5]
	c, _ = rc4.NewCipher(key)
	u = make([]byte, 32)
	c.XORKeyStream(u, pad)
	return o, u
}

// sharedPDF is one PDF engine for the tests of this package, so that the
// start-up is paid once per run; its compilation cache is kept between
// runs in the temporary folder.
var sharedPDF = sync.OnceValue(func() *PDFReader {
	return &PDFReader{CacheDir: filepath.Join(os.TempDir(), "quarry-load-test-cache")}
})

func TestMain(m *testing.M) {
	code := m.Run()
	sharedPDF().Close()
	os.Exit(code)
}

func TestPDFPages(t *testing.T) {
	pages := []string{
		"The first page talks about quarries and stone.\nIt has two lines.",
		"Page two holds the marker word zanzibarite for the test.",
		"The third page closes the document.",
	}
	docs, err := sharedPDF().Read(context.Background(), File{Path: "three.pdf", Data: makePDF(pages, false)})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 3 {
		t.Fatalf("%d documents, want one per page", len(docs))
	}
	for i, d := range docs {
		if d.Provenance.Page != i+1 {
			t.Errorf("document %d has page %d", i, d.Provenance.Page)
		}
		if want := strings.Fields(pages[i])[0]; !strings.HasPrefix(d.Content, want) {
			t.Errorf("page %d text %q", i+1, d.Content)
		}
	}
	if !strings.Contains(docs[0].Content, "stone.\nIt has") {
		t.Errorf("lines of page 1 not kept: %q", docs[0].Content)
	}
	// Through the splitter, as quarry chunk and ingestion do: the marker
	// word is found on page 2 and chunk indexes run across pages.
	rec, err := split.NewRecursive(split.RecursiveConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		d.SourceType, d.SourceName = "file", "three.pdf"
	}
	chunks, err := split.SplitAll(rec, docs)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for i, c := range chunks {
		if c.Provenance.ChunkIndex != i || c.Provenance.ChunkCount != len(chunks) {
			t.Errorf("chunk %d numbered %d of %d", i, c.Provenance.ChunkIndex, c.Provenance.ChunkCount)
		}
		if strings.Contains(c.Content, "zanzibarite") {
			found = true
			if c.Provenance.Page != 2 {
				t.Errorf("marker on page %d, want 2", c.Provenance.Page)
			}
		}
	}
	if !found {
		t.Error("marker word not found")
	}
}

func TestPDFErrors(t *testing.T) {
	good := makePDF([]string{"Readable text."}, false)
	// Each error is a file without text (load.ErrNoText, a notice with the
	// reason) or one that could not be parsed.
	tests := []struct {
		name   string
		data   []byte
		says   string
		noText bool
	}{
		{"encrypted", makePDF([]string{"Secret text."}, true), "encrypted", true},
		{"garbage", []byte("%PDF-1.7\nthis is not a PDF at all\n"), "corrupt", false},
		{"truncated", good[:len(good)/3], "", false},
		{"empty page", makePDF([]string{""}, false), "its one page holds no text and no images", true},
		{"scan", imagePDF(), "a scan): it needs OCR", true},
	}
	for _, tt := range tests {
		_, err := sharedPDF().Read(context.Background(), File{Path: tt.name + ".pdf", Data: tt.data})
		if err == nil {
			// PDFium repairs some damage; a truncated file may still read.
			if tt.says != "" {
				t.Errorf("%s: no error", tt.name)
			}
			continue
		}
		t.Logf("%s: %v", tt.name, err)
		if !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%s: error %q does not say %q", tt.name, err, tt.says)
		}
		if tt.says != "" && errors.Is(err, ErrNoText) != tt.noText {
			t.Errorf("%s: errors.Is(ErrNoText) = %v, want %v", tt.name, !tt.noText, tt.noText)
		}
	}
}

func TestPDFContextStopsRead(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := sharedPDF().Read(ctx, File{Data: makePDF([]string{"x"}, false)}); err == nil {
		t.Error("a done context still read")
	}
	// The engine keeps working for other reads.
	if _, err := sharedPDF().Read(context.Background(), File{Data: makePDF([]string{"still fine"}, false)}); err != nil {
		t.Error(err)
	}
}

func TestPDFClosed(t *testing.T) {
	r := &PDFReader{CacheDir: t.TempDir()}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Read(context.Background(), File{Data: makePDF([]string{"x"}, false)}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("read after close: %v", err)
	}
}

// TestPDFCacheWritten checks that the engine leaves its compiled code in
// the cache folder, which is what makes later starts fast (see
// BenchmarkPDFStartup: about 5 s cold, 0.1 s warm).
func TestPDFCacheWritten(t *testing.T) {
	if _, err := sharedPDF().Read(context.Background(), File{Data: makePDF([]string{"warm"}, false)}); err != nil {
		t.Fatal(err)
	}
	if entries, err := os.ReadDir(sharedPDF().CacheDir); err != nil || len(entries) == 0 {
		t.Errorf("nothing cached in %s: %v", sharedPDF().CacheDir, err)
	}
}

// TestCleanPDFTextRejoinsHyphenation: a word PDFium marks as hyphenated
// across a line break (U+0002, or U+FFFE where a soft hyphen was) is one
// word again; no non-character survives.
func TestCleanPDFTextRejoinsHyphenation(t *testing.T) {
	for in, want := range map[string]string{
		"an inter\ufffe\r\npreter here": "an interpreter here",
		"an inter\x02\r\npreter here":   "an interpreter here",
		"an inter\x02 \npreter here":    "an interpreter here",
		"well\x02known":                 "well-known",
		"odd\ufffe mark":                "odd mark",
		"non\uffffchar\ufdd0s":          "nonchars",
		"line one\r\nline two  \r\n":    "line one\nline two",
	} {
		if got := cleanPDFText(in); got != want {
			t.Errorf("cleanPDFText(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPDFHyphenatedWord reads a real PDF whose line ends in a hyphenated
// word: the word is found whole.
func TestPDFHyphenatedWord(t *testing.T) {
	docs, err := sharedPDF().Read(context.Background(), File{Path: "h.pdf", Data: makePDF([]string{"The byte code inter-\npreter runs the program."}, false)})
	if err != nil {
		t.Fatal(err)
	}
	text := docs[0].Content
	if strings.ContainsRune(text, '\ufffe') || strings.ContainsRune(text, '\x02') || !strings.Contains(text, "interpreter runs") {
		t.Errorf("page text %q", text)
	}
}

// cancelOCR cancels the read's context when it is asked for a page.
type cancelOCR struct {
	cancel context.CancelFunc
	pages  int
}

func (c *cancelOCR) Recognize(context.Context, *image.Gray) (string, error) {
	c.pages++
	c.cancel()
	return "text", nil
}

// TestPDFStopsBetweenPages checks a done context stops a read of the fast
// engine at the next page, and that the interruptible engine reads and
// stops too.
func TestPDFStopsBetweenPages(t *testing.T) {
	scan := renderGray(t, makePDF([]string{"a scanned page"}, false), 72)
	pdf := scanPDF([]*image.Gray{scan, scan, scan}, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ocr := &cancelOCR{cancel: cancel}
	r := &PDFReader{CacheDir: sharedPDF().CacheDir, OCR: ocr}
	defer r.Close()
	if _, err := r.Read(ctx, File{Data: pdf}); !errors.Is(err, context.Canceled) || ocr.pages != 1 {
		t.Errorf("read: %v after %d pages, want context.Canceled after page 1", err, ocr.pages)
	}
	ir := &PDFReader{CacheDir: sharedPDF().CacheDir, Interruptible: true, Workers: 1}
	defer ir.Close()
	if docs, err := ir.Read(context.Background(), File{Data: makePDF([]string{"one", "two"}, false)}); err != nil || len(docs) != 2 {
		t.Fatalf("interruptible read: %d documents, %v", len(docs), err)
	}
	done, stop := context.WithCancel(context.Background())
	stop()
	if _, err := ir.Read(done, File{Data: makePDF([]string{"x"}, false)}); err == nil {
		t.Error("an interruptible read with a done context succeeded")
	}
}

// TestPDFWithJunkBeforeTheHeader: a PDF whose %PDF- header comes after a
// few bytes of junk (a mail or download tool's) is read, as other
// readers read it, not refused as "not a PDF".
func TestPDFWithJunkBeforeTheHeader(t *testing.T) {
	data := append([]byte("Content-Type: application/pdf\r\n\r\n"), makePDF([]string{"The marker word zanzibarite sits on the only page."}, false)...)
	kind, err := Sniff("mailed.pdf", data)
	if err != nil || kind != KindPDF {
		t.Fatalf("Sniff = %q, %v", kind, err)
	}
	docs, err := sharedPDF().Read(context.Background(), File{Path: "mailed.pdf", Data: data})
	if err != nil || len(docs) != 1 || !strings.Contains(docs[0].Content, "zanzibarite") {
		t.Fatalf("read: %v, %d documents", err, len(docs))
	}
}
