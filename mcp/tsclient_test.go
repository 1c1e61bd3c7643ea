package mcp_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTypeScriptClient drives `quarry mcp` with the official TypeScript
// client (testdata/tsclient), an implementation independent of the Go SDK.
// It needs node and the client's packages (`npm ci` in that folder; .ci/run
// does it).
func TestTypeScriptClient(t *testing.T) {
	if testing.Short() {
		t.Skip("builds quarry and starts node")
	}
	dir, _ := filepath.Abs(filepath.Join("testdata", "tsclient"))
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the TypeScript client check is skipped")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		t.Skipf("the TypeScript client is not installed: run `npm ci` in %s (.ci/run does)", dir)
	}
	bin := filepath.Join(t.TempDir(), "quarry")
	build := exec.Command("go", "build", "-o", bin, "../cmd/quarry")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build quarry: %v\n%s", err, out)
	}
	docs := t.TempDir()
	if err := os.WriteFile(filepath.Join(docs, "guide.md"), []byte("# Volcanoes\n\nMagma rises and erupts as lava from a volcano.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", "client.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "QUARRY_BIN="+bin, "QUARRY_KB="+filepath.Join(t.TempDir(), "kb"), "QUARRY_DOCS="+docs)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil || !strings.Contains(string(out), " passed, 0 failed") {
		t.Fatalf("TypeScript client: %v", err)
	}
}
