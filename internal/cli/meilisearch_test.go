package cli_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/store/meilisearch/meilisearchtest"
)

// TestMigrateToMeilisearch: quarry migrate --leave-hierarchy copies an
// embedded knowledge base into Meilisearch (the fake, which checks every request against
// Meilisearch's API), and the copy answers searches and skips unchanged
// files on the next ingestion.
func TestMigrateToMeilisearch(t *testing.T) {
	srv := meilisearchtest.New(t)
	srv.Key = "k"
	to := srv.StoreURL("prefix=copy")
	docs := t.TempDir()
	kb := filepath.Join(t.TempDir(), "kb")
	writeFiles(t, docs, map[string]string{"a.md": "# A\n\nAlpha text that is long enough to keep.\n", "b.md": "# B\n\nBeta text that is long enough to keep.\n"})
	if code, _, errOut := run(t, "", "ingest", docs, "--kb", kb); code != 0 {
		t.Fatalf("ingest: %q", errOut)
	}
	// The knowledge base has a hierarchy (its folder's node), which
	// Meilisearch cannot keep: refused until the operator says to leave it,
	// before anything is written.
	code, out, errOut := run(t, "", "migrate", "--from", kb, "--to", to, "--all")
	if code == 0 || !strings.Contains(errOut, "--leave-hierarchy") || srv.Calls()["POST /indexes"] != 0 {
		t.Fatalf("migrate without --leave-hierarchy: %d %q %q, calls %v", code, out, errOut, srv.Calls())
	}
	code, out, errOut = run(t, "", "migrate", "--from", kb, "--to", to, "--all", "--leave-hierarchy")
	if code != 0 || !strings.Contains(out, "default: 2 documents, 2 sources copied") || !strings.Contains(out, "1 hierarchy nodes left behind") {
		t.Fatalf("migrate: %d %q %q", code, out, errOut)
	}
	code, out, errOut = run(t, "", "search", "beta", "--kb", kb, "--store", to, "--mode", "keyword")
	if code != 0 || !strings.Contains(out, "b.md") {
		t.Errorf("search the copy: %d %q %q", code, out, errOut)
	}
	code, out, errOut = run(t, "", "ingest", docs, "--kb", kb, "--store", to)
	if code != 0 || !strings.Contains(out, "0 written, 2 unchanged") {
		t.Errorf("ingest into the copy: %d %q %q", code, out, errOut)
	}
}
