package ingest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/ingest"
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
