package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNewRAG(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bot")
	code, out, errOut := run(t, "", "new", "rag", dir)
	if code != 0 || !strings.Contains(out, "main_test.go") || !strings.Contains(out, "go mod tidy") {
		t.Fatalf("new rag: %d %q %q", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "main.go")); err != nil {
		t.Error(err)
	}
	if code, _, errOut := run(t, "", "new", "rag", dir); code != 2 || !strings.Contains(errOut, "not empty") {
		t.Errorf("new rag into a full folder: %d %q", code, errOut)
	}
	if code, _, _ := run(t, "", "new", "agent", filepath.Join(t.TempDir(), "x")); code != 2 {
		t.Errorf("new agent: exit %d, want 2", code)
	}
}
