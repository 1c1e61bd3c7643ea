package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// OCR reads the text of a page image: the PDF reader asks it for pages
// that are images without a text layer (scans). Tesseract is Quarry's.
type OCR interface {
	Recognize(ctx context.Context, page *image.Gray) (string, error)
}

// ErrNoOCR means OCR was asked for and no OCR engine is installed.
var ErrNoOCR = errors.New("OCR needs tesseract, which is not installed (Debian and Ubuntu: apt install tesseract-ocr)")

// OCR modes, the values of the ingest.ocr setting.
const (
	OCROff  = "off"  // scans are reported as needing OCR
	OCRAuto = "auto" // scans are read when tesseract is installed
	OCROn   = "on"   // scans are read; a missing tesseract fails them
)

// NewOCR is the OCR engine of a mode: nil for off, and for auto when
// tesseract is not installed; for on without tesseract, an engine whose
// every page fails with ErrNoOCR, so a scan is reported, not skipped.
func NewOCR(mode string) (OCR, error) {
	switch mode {
	case "", OCROff:
		return nil, nil
	case OCRAuto, OCROn:
		t, err := FindTesseract()
		if err == nil {
			return t, nil
		}
		if mode == OCRAuto {
			return nil, nil
		}
		return missingOCR{}, nil
	}
	return nil, fmt.Errorf("ocr %q: use off, auto or on", mode)
}

type missingOCR struct{}

func (missingOCR) Recognize(context.Context, *image.Gray) (string, error) { return "", ErrNoOCR }

// Tesseract runs the tesseract command on each page, one process per
// page, each with a time and an output budget.
type Tesseract struct {
	// Path is the command (FindTesseract fills it).
	Path string
	// Lang is tesseract's -l, e.g. "eng" or "eng+deu" (default eng).
	Lang string
	// Timeout bounds one page (default 2 minutes).
	Timeout time.Duration
	// DPI is the resolution the pages are rendered at, which tesseract is
	// told (the PDF reader sets it).
	DPI int
}

// FindTesseract finds tesseract on the PATH; ErrNoOCR when it is not there.
func FindTesseract() (*Tesseract, error) {
	path, err := exec.LookPath("tesseract")
	if err != nil {
		return nil, ErrNoOCR
	}
	return &Tesseract{Path: path}, nil
}

// maxOCRText bounds what one page's OCR may print: a page of text is a
// few kilobytes, so more is a fault, not text.
const maxOCRText = 1 << 20

// Recognize implements OCR: the page goes to tesseract's standard input as
// a PGM image and its text comes back on standard output.
func (t *Tesseract) Recognize(ctx context.Context, page *image.Gray) (string, error) {
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	lang := t.Lang
	if lang == "" {
		lang = "eng"
	}
	args := []string{"stdin", "stdout", "-l", lang, "--psm", "3"}
	if t.DPI > 0 {
		args = append(args, "--dpi", fmt.Sprint(t.DPI))
	}
	cmd := exec.CommandContext(ctx, t.Path, args...)
	// One thread a process: the PDF reader already reads several files at
	// once, and tesseract's own threads would only contend with them.
	cmd.Env = append(os.Environ(), "OMP_THREAD_LIMIT=1")
	cmd.Stdin = bytes.NewReader(pgm(page))
	var out, stderr limitedBuffer
	out.max, stderr.max = maxOCRText, 4<<10
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "", fmt.Errorf("ocr: tesseract took longer than %s on the page", timeout)
	case ctx.Err() != nil:
		return "", fmt.Errorf("ocr: %w", ctx.Err())
	case err != nil:
		return "", fmt.Errorf("ocr: tesseract: %w: %s", err, strings.TrimSpace(stderr.String()))
	case out.over:
		return "", fmt.Errorf("ocr: tesseract printed more than %s for one page", byteSize(maxOCRText))
	}
	return strings.ReplaceAll(out.String(), "\f", ""), nil
}

// pgm encodes a grey image as binary PGM (P5), which tesseract reads
// without any compression to undo.
func pgm(img *image.Gray) []byte {
	b := img.Bounds()
	var buf bytes.Buffer
	buf.Grow(32 + b.Dx()*b.Dy())
	fmt.Fprintf(&buf, "P5\n%d %d\n255\n", b.Dx(), b.Dy())
	for y := b.Min.Y; y < b.Max.Y; y++ {
		off := img.PixOffset(b.Min.X, y)
		buf.Write(img.Pix[off : off+b.Dx()])
	}
	return buf.Bytes()
}

// limitedBuffer keeps the first max bytes written to it and notes more.
type limitedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.Len(); len(p) > room {
		l.over = true
		l.Buffer.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return l.Buffer.Write(p)
}

var _ io.Writer = (*limitedBuffer)(nil)
