package cli_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/store/chroma/chromatest"
)

// TestMigrateToChroma: quarry migrate --leave-hierarchy copies an embedded
// knowledge base into a real Chroma server (every exchange checked against
// Chroma's own API document), and the copy answers keyword and vector
// searches and skips unchanged files on the next ingestion.
func TestMigrateToChroma(t *testing.T) {
	srv := chromatest.New(t)
	to := srv.StoreURL("")
	docs := t.TempDir()
	kb := filepath.Join(t.TempDir(), "kb")
	writeFiles(t, docs, map[string]string{"a.md": "# A\n\nAlpha text that is long enough to keep.\n", "b.md": "# B\n\nBeta text that is long enough to keep.\n"})
	if code, _, errOut := run(t, "", "ingest", docs, "--kb", kb); code != 0 {
		t.Fatalf("ingest: %q", errOut)
	}
	// Chroma keeps no knowledge hierarchy: refused until the operator
	// says to leave it, before anything is written.
	code, out, errOut := run(t, "", "migrate", "--from", kb, "--to", to, "--all")
	if code == 0 || !strings.Contains(errOut, "--leave-hierarchy") || srv.Calls()["POST upsert"] != 0 {
		t.Fatalf("migrate without --leave-hierarchy: %d %q %q, calls %v", code, out, errOut, srv.Calls())
	}
	code, out, errOut = run(t, "", "migrate", "--from", kb, "--to", to, "--all", "--leave-hierarchy")
	if code != 0 || !strings.Contains(out, "default: 2 documents, 2 sources copied") || !strings.Contains(out, "1 hierarchy nodes left behind") {
		t.Fatalf("migrate: %d %q %q", code, out, errOut)
	}
	for _, mode := range []string{"keyword", "hybrid"} {
		code, out, errOut = run(t, "", "search", "beta", "--kb", kb, "--store", to, "--mode", mode)
		if code != 0 || !strings.Contains(out, "b.md") {
			t.Errorf("%s search of the copy: %d %q %q", mode, code, out, errOut)
		}
	}
	code, out, errOut = run(t, "", "ingest", docs, "--kb", kb, "--store", to)
	if code != 0 || !strings.Contains(out, "0 written, 2 unchanged") {
		t.Errorf("ingest into the copy: %d %q %q", code, out, errOut)
	}
}
