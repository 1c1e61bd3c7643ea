package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"unicode"

	"github.com/klippa-app/go-pdfium"
	"github.com/klippa-app/go-pdfium/enums"
	pdferrors "github.com/klippa-app/go-pdfium/errors"
	"github.com/klippa-app/go-pdfium/references"
	"github.com/klippa-app/go-pdfium/requests"
	"github.com/klippa-app/go-pdfium/webassembly"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/quarry-rag/quarry/document"
)

// Budgets of the PDF engine. A PDF is a container of compressed streams:
// a 3 MB file can inflate to gigabytes, so what a read may take is bounded
// inside the engine, not by the file's size.
const (
	// DefaultPDFMemory is the memory one PDFium instance may use (its
	// WebAssembly linear memory) when PDFReader.MaxMemory is 0. A Loader
	// gives its PDF reader four times its file size limit, at least this.
	DefaultPDFMemory = 256 << 20
	// DefaultPDFText bounds the text one PDF may yield when
	// PDFReader.MaxText is 0; a Loader gives twice its file size limit, at
	// least this.
	DefaultPDFText = 64 << 20
	// pdfRecycleBytes is the memory an instance may keep between files:
	// one that grew past it is retired after its file, and its memory
	// goes back to the system, so one large PDF does not leave every
	// worker holding its high-water mark.
	pdfRecycleBytes = 64 << 20
)

// PDFReader reads the text of a PDF, one document per page with
// Provenance.Page set (1-based); pages without text give no document.
//
// It runs PDFium compiled to WebAssembly under wazero: no cgo, nothing
// downloaded. The runtime starts when the first PDF is read, not before,
// and is shared by all reads until Close. Compiling PDFium takes seconds;
// the compiled code is cached in CacheDir so later starts take a fraction
// of that. A read stops when its context is done.
//
// Set the exported fields before the first Read. The zero value is ready to
// use; a PDFReader is safe for concurrent use.
type PDFReader struct {
	// CacheDir keeps the wazero compilation cache (a knowledge base's
	// cache/ folder). Empty means the quarry folder in os.UserCacheDir;
	// when neither can be used, PDFium is compiled at every start.
	CacheDir string
	// Workers is how many PDFs are read at once (runtime.GOMAXPROCS when
	// 0); each worker is a PDFium instance with its own memory.
	Workers int
	// MaxMemory bounds one instance's memory in bytes (DefaultPDFMemory
	// when 0): a file that needs more fails with a message that says so,
	// and the process stays within Workers × MaxMemory for PDFs.
	MaxMemory int64
	// MaxText bounds the text one file may yield in bytes (DefaultPDFText
	// when 0).
	MaxText int64
	// Interruptible compiles PDFium with termination checks, so a done
	// context stops a read inside PDFium, mid-page. They cost about three
	// times the time (BenchmarkPDFBook): without them a read stops between
	// pages, and a call into PDFium runs to its end — which a crafted file
	// that makes PDFium loop would never reach. Files from callers who are
	// not trusted (uploads) are read with it.
	Interruptible bool
	// OCR, when set, reads the pages that are images without a text layer
	// (scans): each is rendered in grey at ocrDPI and its text recognized,
	// with the page's provenance. Without it such pages give no text, and
	// a PDF of them only is reported as needing OCR.
	OCR OCR
	// budgetHint says which setting raises the budgets, for messages.
	budgetHint string

	mem pdfMemory // the instances' linear memories

	inflight sync.WaitGroup // reads under way, which Close waits for

	mu     sync.Mutex // guards the fields below
	pool   pdfium.Pool
	cache  wazero.CompilationCache
	err    error // why the runtime could not start; not retried
	closed bool
}

// Read implements Reader. Password-protected, damaged and text-less PDFs
// are errors that say so.
func (r *PDFReader) Read(ctx context.Context, f File) ([]*document.Document, error) {
	pool, err := r.start()
	if err != nil {
		return nil, err
	}
	defer r.inflight.Done()
	inst, err := pool.GetInstanceWithContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("pdf: %w", err)
	}
	// An interruptible engine is killed by a done context: PDFium has no
	// cancellation of its own, and the runtime closes the module at its
	// next check. Without the checks the instance must not be closed under
	// running code; readPDF stops at the next page instead.
	stop := func() bool { return true }
	if r.Interruptible {
		stop = context.AfterFunc(ctx, func() { _ = inst.Kill() })
	}
	docs, err := readPDF(ctx, inst, f.Data, r.maxText(), r.OCR)
	size, known := instanceMemory(inst)
	if stop() {
		// An instance that failed, or grew past what it may keep, is
		// retired: the pool starts a fresh one for the next file and the
		// old one's memory is unmapped now.
		if err != nil || !known || size > pdfRecycleBytes {
			_ = inst.Kill()
		} else {
			_ = inst.Close()
		}
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("pdf: %w", ctx.Err())
	}
	if err != nil && known && size+pdfNearLimit >= uint64(r.maxMemory()) {
		return nil, fmt.Errorf("pdf: reading it needs more than the %s the PDF engine may use (a stream expands past it)%s", byteSize(r.maxMemory()), r.hint())
	}
	return docs, cleanError(err)
}

// pdfNearLimit is how close to its budget an instance's memory must be
// for a failed read to be blamed on the budget.
const pdfNearLimit = 2 << 20

func (r *PDFReader) maxMemory() int64 {
	if r.MaxMemory > 0 {
		return r.MaxMemory
	}
	return DefaultPDFMemory
}

func (r *PDFReader) maxText() int64 {
	if r.MaxText > 0 {
		return r.MaxText
	}
	return DefaultPDFText
}

func (r *PDFReader) hint() string {
	if r.budgetHint == "" {
		return ""
	}
	return "; " + r.budgetHint
}

// instanceMemory is the size of an instance's linear memory. go-pdfium
// does not export it, so it is read through the instance's exported Module
// field by reflection; TestPDFMemoryProbe fails if a new go-pdfium moves
// it, and an unknown size retires the instance after every file.
func instanceMemory(inst pdfium.Pdfium) (uint64, bool) {
	impl := inst.GetImplementation()
	if impl == nil {
		return 0, false
	}
	v := reflect.ValueOf(impl)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return 0, false
	}
	mod := v.FieldByName("Module")
	if !mod.IsValid() || mod.IsNil() {
		return 0, false
	}
	m := mod.MethodByName("Memory")
	if !m.IsValid() || m.Type().NumIn() != 0 || m.Type().NumOut() != 1 {
		return 0, false
	}
	out := m.Call(nil)[0]
	if !out.IsValid() || (out.Kind() == reflect.Interface && out.IsNil()) {
		return 0, false
	}
	mem, ok := out.Interface().(api.Memory)
	if !ok {
		return 0, false
	}
	return uint64(mem.Size()), true
}

// cleanError keeps the first line of an engine error: wazero appends a
// WebAssembly stack trace that tells a user nothing.
func cleanError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if i := strings.Index(msg, "\n"); i >= 0 {
		return errors.New(strings.TrimSpace(msg[:i]))
	}
	return err
}

// byteSize writes a byte count the way people read it.
func byteSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// start brings up the runtime on first use.
func (r *PDFReader) start() (pdfium.Pool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		return nil, errors.New("pdf: the reader is closed")
	case r.pool != nil:
		r.inflight.Add(1)
		return r.pool, nil
	case r.err != nil:
		return nil, r.err
	}
	cfg := wazero.NewRuntimeConfig().
		// The bundled PDFium lowers setjmp/longjmp to exception handling.
		WithCoreFeatures(api.CoreFeaturesV2 | experimental.CoreFeaturesExceptionHandling).
		WithCloseOnContextDone(r.Interruptible).
		WithMemoryLimitPages(uint32(min(r.maxMemory()>>16, 65536)))
	if dir := r.cacheDir(); dir != "" {
		if cache, err := wazero.NewCompilationCacheWithDir(dir); err == nil {
			r.cache = cache
			cfg = cfg.WithCompilationCache(cache)
		}
	}
	workers := r.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	pool, err := webassembly.Init(webassembly.Config{
		// Linear memories come from r.mem: reserved at the budget, never
		// copied to grow, their pages handed back when an instance goes.
		Context:       experimental.WithMemoryAllocator(context.Background(), experimental.MemoryAllocatorFunc(r.mem.allocate)),
		MaxIdle:       workers,
		MaxTotal:      workers,
		RuntimeConfig: cfg,
		FSConfig:      wazero.NewFSConfig(), // no file system: files arrive as bytes
		Stdout:        io.Discard,
		Stderr:        io.Discard,
		ReuseWorkers:  true,
	})
	if err != nil {
		r.closeCache()
		r.err = fmt.Errorf("pdf: start PDFium: %w", err)
		return nil, r.err
	}
	r.pool = pool
	r.inflight.Add(1)
	return pool, nil
}

func (r *PDFReader) cacheDir() string {
	if r.CacheDir != "" {
		return r.CacheDir
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "quarry")
}

func (r *PDFReader) closeCache() {
	if r.cache != nil {
		_ = r.cache.Close(context.Background())
		r.cache = nil
	}
}

// Close stops the runtime, if it started. Reads after Close fail.
func (r *PDFReader) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	// Reads under way finish first: their instances' memory must not be
	// unmapped under code that is still running.
	r.inflight.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	var err error
	if r.pool != nil {
		err = r.pool.Close()
		r.pool = nil
	}
	r.mem.close()
	r.closeCache()
	if err != nil {
		return fmt.Errorf("pdf: close PDFium: %w", err)
	}
	return nil
}

func readPDF(ctx context.Context, inst pdfium.Pdfium, data []byte, maxText int64, ocr OCR) ([]*document.Document, error) {
	opened, err := inst.OpenDocument(&requests.OpenDocument{File: &data})
	if err != nil {
		return nil, openError(err)
	}
	defer inst.FPDF_CloseDocument(&requests.FPDF_CloseDocument{Document: opened.Document})
	n, err := inst.FPDF_GetPageCount(&requests.FPDF_GetPageCount{Document: opened.Document})
	if err != nil {
		return nil, fmt.Errorf("pdf: count pages: %w", err)
	}
	var docs []*document.Document
	var total int64
	var failed []string // the pages that could not be read, and why
	for i := range n.PageCount {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		text, err := pageText(inst, opened.Document, i)
		if err != nil {
			failed = append(failed, fmt.Sprintf("page %d: %v", i+1, err))
			continue
		}
		if ocr != nil && strings.TrimSpace(text) == "" {
			if images, dpi := pageImages(inst, opened.Document, i); images > 0 {
				if text, err = ocrPage(ctx, inst, opened.Document, i, ocr, dpi); err != nil {
					if errors.Is(err, ErrNoOCR) || ctx.Err() != nil {
						return nil, fmt.Errorf("pdf: page %d: %w", i+1, err)
					}
					failed = append(failed, fmt.Sprintf("page %d: %v", i+1, err))
					continue
				}
			}
		}
		if total += int64(len(text)); total > maxText {
			return nil, fmt.Errorf("pdf: the text passes %s by page %d of %d; the reader takes at most that from one file", byteSize(maxText), i+1, n.PageCount)
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		d := document.New(text)
		d.ID = ""
		d.Provenance.Page = i + 1
		docs = append(docs, d)
	}
	if len(failed) > 0 {
		// One bad page loses that page, not the document.
		shown := strings.Join(failed[:min(len(failed), 3)], "; ")
		if len(failed) > 3 {
			shown += fmt.Sprintf("; and %d more", len(failed)-3)
		}
		if len(docs) == 0 {
			return nil, fmt.Errorf("pdf: no page could be read: %s", shown)
		}
		return docs, fmt.Errorf("pdf: %w: %d of %s could not be read (%s); the others were", ErrPartial, len(failed), pagesOf(n.PageCount), shown)
	}
	if len(docs) == 0 {
		return nil, noTextReason(inst, opened.Document, n.PageCount)
	}
	return docs, nil
}

// noTextReason says why a PDF gave no text: no pages; pages that are
// images (a scan, which needs OCR); or pages that hold nothing PDFium can
// draw, which is an empty document or content it cannot decode. Counting
// objects costs a page load each, paid only by PDFs without text.
func noTextReason(inst pdfium.Pdfium, doc references.FPDF_DOCUMENT, pages int) error {
	if pages == 0 {
		return fmt.Errorf("pdf: %w: the document has no pages", ErrNoText)
	}
	images := 0
	for i := range pages {
		if n, _ := pageImages(inst, doc, i); n > 0 {
			images++
		}
	}
	if images > 0 {
		are := "are images"
		if images == 1 {
			are = "is an image"
		}
		return fmt.Errorf("pdf: %w: %d of %s %s without a text layer (a scan): it needs OCR first: %s", ErrNoText, images, pagesOf(pages), are, ocrAdvice())
	}
	if pages == 1 {
		return fmt.Errorf("pdf: %w: its one page holds no text and no images (an empty document, or content in a form PDFium cannot decode)", ErrNoText)
	}
	return fmt.Errorf("pdf: %w: its %d pages hold no text and no images (an empty document, or content in a form PDFium cannot decode)", ErrNoText, pages)
}

// ocrAdvice says how to turn OCR on, and whether tesseract is installed.
func ocrAdvice() string {
	if _, err := FindTesseract(); err != nil {
		return "install tesseract (Debian and Ubuntu: apt install tesseract-ocr), then ingest with --ocr or set ingest.ocr = \"auto\""
	}
	return "ingest with --ocr, or set ingest.ocr = \"auto\" (tesseract is installed)"
}

// OCR budgets: a page is rendered at its pictures' own resolution, as
// scanned — more pixels than the scan has only slow OCR down — within
// [ocrMinDPI, ocrMaxDPI] (ocrMaxDPI when unknown), and lower for a page so
// large that its image would pass ocrMaxPixels (a poster, a map).
const (
	ocrMinDPI    = 150
	ocrMaxDPI    = 300
	ocrMaxPixels = 40 << 20
)

// ocrPage renders a page in grey and recognizes its text; scanDPI is the
// resolution of its pictures (0 when unknown).
func ocrPage(ctx context.Context, inst pdfium.Pdfium, doc references.FPDF_DOCUMENT, index int, ocr OCR, scanDPI float64) (string, error) {
	size, err := inst.FPDF_GetPageSizeByIndex(&requests.FPDF_GetPageSizeByIndex{Document: doc, Index: index})
	if err != nil {
		return "", fmt.Errorf("ocr: page size: %w", err)
	}
	dpi := ocrMaxDPI
	if scanDPI > 0 {
		dpi = int(min(max(math.Round(scanDPI), ocrMinDPI), ocrMaxDPI))
	}
	if px := size.Width / 72 * float64(dpi) * size.Height / 72 * float64(dpi); px > ocrMaxPixels {
		dpi = max(72, int(float64(dpi)*math.Sqrt(ocrMaxPixels/px)))
	}
	res, err := inst.RenderPageInDPI(&requests.RenderPageInDPI{
		Page: requests.Page{ByIndex: &requests.PageByIndex{Document: doc, Index: index}},
		DPI:  dpi, ImageFormat: requests.RenderImageFormatGrayscale,
	})
	if err != nil {
		return "", fmt.Errorf("ocr: render: %w", err)
	}
	// The pixels live in the engine's memory until Cleanup: copy them out.
	src, ok := res.Result.RenderedImage.(*image.Gray)
	var img *image.Gray
	if ok {
		img = &image.Gray{Pix: bytes.Clone(src.Pix), Stride: src.Stride, Rect: src.Rect}
	}
	res.Cleanup()
	if !ok {
		return "", errors.New("ocr: render: no grey image")
	}
	if t, isTesseract := ocr.(*Tesseract); isTesseract && t.DPI != dpi {
		tc := *t
		tc.DPI = dpi
		ocr = &tc
	}
	return ocr.Recognize(ctx, img)
}

// pageImages counts a page's image objects and gives the highest
// resolution they are drawn at (0 when unknown); a page that cannot be
// loaded counts none.
func pageImages(inst pdfium.Pdfium, doc references.FPDF_DOCUMENT, index int) (images int, dpi float64) {
	page, err := inst.FPDF_LoadPage(&requests.FPDF_LoadPage{Document: doc, Index: index})
	if err != nil {
		return 0, 0
	}
	defer inst.FPDF_ClosePage(&requests.FPDF_ClosePage{Page: page.Page})
	n, err := inst.FPDFPage_CountObjects(&requests.FPDFPage_CountObjects{Page: requests.Page{ByReference: &page.Page}})
	if err != nil {
		return 0, 0
	}
	for i := range n.Count {
		obj, err := inst.FPDFPage_GetObject(&requests.FPDFPage_GetObject{Page: requests.Page{ByReference: &page.Page}, Index: i})
		if err != nil {
			continue
		}
		t, err := inst.FPDFPageObj_GetType(&requests.FPDFPageObj_GetType{PageObject: obj.PageObject})
		if err != nil || t.Type != enums.FPDF_PAGEOBJ_IMAGE {
			continue
		}
		images++
		md, err := inst.FPDFImageObj_GetImageMetadata(&requests.FPDFImageObj_GetImageMetadata{ImageObject: obj.PageObject, Page: requests.Page{ByReference: &page.Page}})
		if err == nil {
			dpi = max(dpi, float64(md.ImageMetadata.HorizontalDPI), float64(md.ImageMetadata.VerticalDPI))
		}
	}
	return images, dpi
}

// openError names why PDFium refused a file.
func openError(err error) error {
	switch {
	case errors.Is(err, pdferrors.ErrPassword):
		return fmt.Errorf("pdf: %w: encrypted: the document needs a password", ErrNoText)
	case errors.Is(err, pdferrors.ErrSecurity):
		return fmt.Errorf("pdf: %w: encrypted with an unsupported security handler", ErrNoText)
	case errors.Is(err, pdferrors.ErrFormat):
		return errors.New("pdf: corrupt: not a readable PDF structure")
	case errors.Is(err, pdferrors.ErrFile):
		return errors.New("pdf: corrupt: the file could not be parsed")
	}
	return fmt.Errorf("pdf: open: %w", err)
}

func pageText(inst pdfium.Pdfium, doc references.FPDF_DOCUMENT, index int) (string, error) {
	page, err := inst.FPDF_LoadPage(&requests.FPDF_LoadPage{Document: doc, Index: index})
	if err != nil {
		return "", err
	}
	defer inst.FPDF_ClosePage(&requests.FPDF_ClosePage{Page: page.Page})
	tp, err := inst.FPDFText_LoadPage(&requests.FPDFText_LoadPage{Page: requests.Page{ByReference: &page.Page}})
	if err != nil {
		return "", err
	}
	defer inst.FPDFText_ClosePage(&requests.FPDFText_ClosePage{TextPage: tp.TextPage})
	count, err := inst.FPDFText_CountChars(&requests.FPDFText_CountChars{TextPage: tp.TextPage})
	if err != nil || count.Count <= 0 {
		return "", err
	}
	text, err := inst.FPDFText_GetText(&requests.FPDFText_GetText{TextPage: tp.TextPage, Count: count.Count})
	if err != nil {
		return "", err
	}
	return cleanPDFText(text.Text), nil
}

// cleanPDFText turns PDFium's page text into plain lines: CRLF becomes
// "\n"; a word hyphenated across a line break rejoins (PDFium marks that
// hyphen with U+0002, or leaves U+FFFE where a soft hyphen was); other
// control characters, byte-order marks and non-characters go, and so do
// trailing spaces.
func cleanPDFText(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	rs := []rune(s)
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == '\x02' || r == '\ufffe':
			// A break mark at a line's end joins the word across it;
			// elsewhere a \x02 is a hyphen and a U+FFFE nothing.
			j := i + 1
			for j < len(rs) && (rs[j] == ' ' || rs[j] == '\t') {
				j++
			}
			if j < len(rs) && (rs[j] == '\n' || rs[j] == '\r') {
				i = j
				continue
			}
			if r == '\x02' {
				b.WriteByte('-')
			}
		case r == '\r':
			b.WriteByte('\n')
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case unicode.IsControl(r) || r == '\ufeff' || document.NonCharacter(r):
		default:
			b.WriteRune(r)
		}
	}
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// pagesOf is "1 page" or "n pages".
func pagesOf(n int) string {
	if n == 1 {
		return "1 page"
	}
	return fmt.Sprintf("%d pages", n)
}
