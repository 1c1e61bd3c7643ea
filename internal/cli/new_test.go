package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/internal/pgtest"
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

func TestImportCommand(t *testing.T) {
	kb := filepath.Join(t.TempDir(), "kb")
	for i, want := range []string{`"vault": 3 nodes (4 new), 3 chunks placed (3 embedded`, `"vault": 3 nodes (0 new), 3 chunks placed (0 embedded`} {
		code, out, errOut := run(t, "", "import", "../../testdata/import.yaml", "--kb", kb)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("import %d: %d %q %q", i+1, code, out, errOut)
		}
	}
	code, out, _ := run(t, "", "tree", "--kb", kb, "-c", "vault")
	if code != 0 || !strings.Contains(out, "Gift cards") {
		t.Errorf("tree after import:\n%s", out)
	}
	if code, _, errOut := run(t, "nodes:\n  - name: A\n    trigers: [x]\n", "import", "-", "--kb", kb); code != 2 || !strings.Contains(errOut, "trigers") {
		t.Errorf("a typo in the file: %d %q", code, errOut)
	}
}

func TestMigrateUpgrade(t *testing.T) {
	if code, _, errOut := run(t, "", "migrate", "--upgrade"); code != 2 || !strings.Contains(errOut, "--store") {
		t.Errorf("--upgrade without a store: %d %q", code, errOut)
	}
	if code, _, errOut := run(t, "", "migrate", "--upgrade", "--store", "embedded:"+t.TempDir()); code != 2 || !strings.Contains(errOut, "only PostgreSQL") {
		t.Errorf("--upgrade of an embedded store: %d %q", code, errOut)
	}
	dsn := pgtest.FreshDSN(t) // skips without a server
	if code, out, errOut := run(t, "", "migrate", "--upgrade", "--store", dsn); code != 1 || !strings.Contains(errOut, "no Quarry store here") {
		t.Errorf("--upgrade of an empty schema: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := run(t, "", "setup", "--store", dsn); code != 0 {
		t.Fatalf("setup: %d %q", code, errOut)
	}
	if code, out, errOut := run(t, "", "migrate", "--upgrade", "--store", dsn); code != 0 || !strings.Contains(out, "nothing to do") {
		t.Errorf("--upgrade of a current store: %d %q %q", code, out, errOut)
	}
}

func TestObjectsCommand(t *testing.T) {
	kb := filepath.Join(t.TempDir(), "kb")
	if code, out, errOut := run(t, `[{"id":"p-1","title":"Kettle"},{"id":"p-2","title":"Toaster"}]`, "objects", "put", "-", "--kb", kb); code != 0 || !strings.Contains(out, "2 objects stored") {
		t.Fatalf("objects put: %d %q %q", code, out, errOut)
	}
	if code, out, _ := run(t, "", "search", "kettle", "--kb", kb, "--filter", "sourceType = 'object'"); code != 0 || !strings.Contains(out, "Kettle") {
		t.Errorf("search objects: %d %q", code, out)
	}
	if code, out, _ := run(t, "", "objects", "delete", "p-2", "--kb", kb); code != 0 || !strings.Contains(out, "deleted object") {
		t.Errorf("objects delete: %d %q", code, out)
	}
	if code, _, _ := run(t, "", "objects", "delete", "p-2", "--kb", kb); code != 1 {
		t.Errorf("deleting a missing object: exit %d, want 1", code)
	}
	if code, _, _ := run(t, `"text"`, "objects", "put", "-", "--kb", kb); code != 2 {
		t.Errorf("putting a string: exit %d, want 2", code)
	}
}
