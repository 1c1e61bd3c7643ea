package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestIngestOCR ingests a scanned PDF (a page that is a picture of text):
// without --ocr it is a file without text whose note says how to read it;
// with --ocr, when tesseract is installed, its words are found on page 1.
func TestIngestOCR(t *testing.T) {
	docs := t.TempDir()
	b, err := os.ReadFile("testdata/scan.pdf")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(docs, "scan.pdf"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	kb := filepath.Join(t.TempDir(), "kb")
	code, out, errOut := run(t, "", "ingest", docs, "--kb", kb)
	if code != 0 || !strings.Contains(out, "1 without text") || !strings.Contains(errOut, "needs OCR") || !strings.Contains(errOut, "--ocr") {
		t.Fatalf("ingest a scan without OCR: %d %q %q", code, out, errOut)
	}
	if _, err := exec.LookPath("tesseract"); err != nil {
		if os.Getenv("QUARRY_TEST_OCR") != "" {
			t.Fatalf("QUARRY_TEST_OCR is set: tesseract is not installed")
		}
		t.Skip("tesseract is not installed (apt install tesseract-ocr; QUARRY_TEST_OCR=1 makes this a failure)")
	}
	code, out, errOut = run(t, "", "ingest", docs, "--kb", kb, "--ocr")
	if code != 0 || !strings.Contains(out, "1 written") {
		t.Fatalf("ingest --ocr: %d %q %q", code, out, errOut)
	}
	code, out, errOut = run(t, "", "search", "fourteen days", "--kb", kb, "--json")
	if code != 0 {
		t.Fatalf("search: %d %s", code, errOut)
	}
	hits, err := searchHits(out)
	if err != nil || len(hits) == 0 {
		t.Fatalf("search: %v %s", err, out)
	}
	if hits[0]["source"] != "scan.pdf" || hits[0]["page"] != float64(1) || !strings.Contains(strings.ToLower(hits[0]["text"].(string)), "refunds are paid within fourteen days") {
		t.Errorf("hit %v, want page 1 of scan.pdf with its recognized text", hits[0])
	}
}
