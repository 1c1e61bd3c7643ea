package load

import (
	"bytes"
	"compress/zlib"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// makeBombPDF writes a one-page PDF whose content stream is inflated
// bytes of spaces and text operators, compressed with FlateDecode: a few
// hundred kilobytes on disk that expand to inflated bytes in the engine.
func makeBombPDF(inflated int) []byte {
	var z bytes.Buffer
	w, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	w.Write([]byte("BT /F1 12 Tf 72 720 Td (bomb) Tj ET\n"))
	chunk := bytes.Repeat([]byte(" "), 1<<20)
	for n := 0; n < inflated; n += len(chunk) {
		w.Write(chunk)
	}
	w.Close()
	p := newPDF()
	p.obj("<< /Type /Catalog /Pages 2 0 R >>")
	p.obj("<< /Type /Pages /Kids [4 0 R] /Count 1 >>")
	p.obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	p.obj("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>")
	p.stream("/Filter /FlateDecode ", z.Bytes())
	return p.bytes("")
}

// TestPDFMemoryProbe: the size of an instance's memory is readable, so
// instances that grew are retired after their file.
func TestPDFMemoryProbe(t *testing.T) {
	r := &PDFReader{Workers: 1}
	defer r.Close()
	pool, err := r.start()
	if err != nil {
		t.Fatal(err)
	}
	defer r.inflight.Done()
	inst, err := pool.GetInstanceWithContext(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	size, ok := instanceMemory(inst)
	if !ok || size == 0 || size > uint64(r.maxMemory()) {
		t.Fatalf("instance memory = %d, %v", size, ok)
	}
}

// TestPDFBombBudget reads a PDF whose stream inflates past the engine's
// budget: the read fails with a message naming the budget and the setting
// that raises it, no WebAssembly stack trace, and the reader still reads
// the next file.
func TestPDFBombBudget(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("short or race mode: the bomb takes seconds to build (CI runs this without -race)")
	}
	l := New(Options{CacheDir: t.TempDir()})
	defer l.Close()
	r := l.pdf
	r.MaxMemory = 64 << 20
	bomb := makeBombPDF(160 << 20)
	_, err := r.Read(context.Background(), File{Path: "bomb.pdf", Data: bomb})
	if err == nil {
		t.Fatal("the bomb was read")
	}
	msg := err.Error()
	if !strings.Contains(msg, "64 MiB") || !strings.Contains(msg, "max_file_size") || strings.Contains(msg, "wasm stack trace") || strings.Contains(msg, "\n") {
		t.Errorf("bomb error: %q", msg)
	}
	docs, err := r.Read(context.Background(), File{Path: "ok.pdf", Data: makePDF([]string{"after the bomb the reader still reads"}, false)})
	if err != nil || len(docs) != 1 {
		t.Fatalf("read after the bomb: %v %v", docs, err)
	}
}

// TestPDFBombPeakRSS ingests a 1 GiB bomb, three at once, in a child
// process and checks the child's peak resident memory stays under 1 GB.
func TestPDFBombPeakRSS(t *testing.T) {
	if os.Getenv("QUARRY_PDF_BOMB_CHILD") == "1" {
		bombChild(t)
		return
	}
	if testing.Short() || raceEnabled {
		t.Skip("short or race mode: the race detector's memory would be measured (CI runs this without -race)")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run", "^TestPDFBombPeakRSS$", "-test.v")
	cmd.Env = append(os.Environ(), "QUARRY_PDF_BOMB_CHILD=1", "QUARRY_PDF_CACHE="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	st, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Skip("no resource usage on this system")
	}
	peak := st.Maxrss * 1024 // kilobytes on Linux
	t.Logf("peak RSS reading three 1 GiB bombs at once: %d MiB\n%s", peak>>20, lastLines(string(out), 6))
	if peak > 1<<30 {
		t.Errorf("peak RSS %d MiB, want under 1 GiB", peak>>20)
	}
}

func bombChild(t *testing.T) {
	l := New(Options{CacheDir: os.Getenv("QUARRY_PDF_CACHE")})
	defer l.Close()
	bomb := makeBombPDF(1 << 30)
	t.Logf("bomb: %d bytes on disk, 1 GiB inflated", len(bomb))
	errs := make(chan error, 3)
	for range 3 {
		go func() {
			_, err := l.pdf.Read(context.Background(), File{Path: "bomb.pdf", Data: bomb})
			errs <- err
		}()
	}
	for range 3 {
		if err := <-errs; err == nil || !strings.Contains(err.Error(), "the PDF engine may use") {
			t.Errorf("a bomb read gave %v, want the budget's message", err)
		} else {
			t.Log("bomb: " + err.Error())
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
