package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIngestSymlinkFolder: a folder named through a symbolic link is
// ingested as the folder it points to, not walked as 0 files.
func TestIngestSymlinkFolder(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "docs"), map[string]string{
		"guide.md":   "# Guide\n\nRun the installer.\n",
		"sub/faq.md": "# FAQ\n\nRefunds take five days.\n",
	})
	link := filepath.Join(dir, "link")
	if err := os.Symlink(filepath.Join(dir, "docs"), link); err != nil {
		t.Fatal(err)
	}
	kb := filepath.Join(dir, "kb")
	code, out, errOut := run(t, "", "ingest", link, "--kb", kb)
	if code != 0 || !strings.Contains(out, "2 files: 2 written") {
		t.Fatalf("ingest %s: %d\n%s\n%s", link, code, out, errOut)
	}
	if code, out, errOut := run(t, "", "search", "refunds", "--kb", kb, "--mode", "keyword"); code != 0 || !strings.Contains(out, "sub/faq.md") {
		t.Errorf("search: %d\n%s\n%s", code, out, errOut)
	}
}
