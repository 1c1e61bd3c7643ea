package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRoughEdges holds the command line to what a new user expects of it:
// a bad mode is a usage error, a setting's error names where the setting
// came from, a changed embedder still allows keyword search, an init
// --schema that does not fit the collection is refused, a delete that
// matches nothing says so, and help renders flag names.
func TestRoughEdges(t *testing.T) {
	kb := ingestCorpus(t)

	if code, _, errOut := run(t, "", "search", "refunds", "--kb", kb, "--mode", "semantic"); code != 2 || !strings.Contains(errOut, `mode "semantic"`) {
		t.Errorf("--mode semantic: %d %q", code, errOut)
	}
	t.Setenv("QUARRY_SEARCH_MODE", "semantic")
	if code, _, errOut := run(t, "", "search", "refunds", "--kb", kb); code != 2 || !strings.Contains(errOut, "QUARRY_SEARCH_MODE") || strings.Contains(errOut, "config.toml") {
		t.Errorf("QUARRY_SEARCH_MODE=semantic: %d %q", code, errOut)
	}
	os.Unsetenv("QUARRY_SEARCH_MODE")

	t.Setenv("QUARRY_EMBEDDER", "hash:256")
	if code, out, errOut := run(t, "", "search", "refunds", "--kb", kb, "--mode", "keyword"); code != 0 || !strings.Contains(out, "refunds") {
		t.Errorf("keyword search with another embedder: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := run(t, "", "search", "refunds", "--kb", kb, "--mode", "vector"); code != 1 || !strings.Contains(errOut, "QUARRY_EMBEDDER") || strings.Contains(errOut, "config.toml") {
		t.Errorf("vector search with another embedder: %d %q", code, errOut)
	}
	os.Unsetenv("QUARRY_EMBEDDER")

	schema := filepath.Join(t.TempDir(), "schema.json")
	if err := os.WriteFile(schema, []byte(`{"fields":[{"name":"tenant","type":"string","filterable":true}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := run(t, "", "init", "--kb", kb, "--schema", schema); code == 0 || !strings.Contains(errOut, "schema") {
		t.Errorf("init --schema on a collection with another schema: %d %q", code, errOut)
	}

	if code, _, errOut := run(t, "", "delete", "--kb", kb, "--source", "nope.md"); code != 1 || !strings.Contains(errOut, "nothing matched") {
		t.Errorf("delete of nothing: %d %q", code, errOut)
	}
	code, out, _ := run(t, "", "delete", "--kb", kb, "--source", "nope.md", "--json")
	var del struct{ Deleted *int }
	if code != 0 || json.Unmarshal([]byte(out), &del) != nil || del.Deleted == nil || *del.Deleted != 0 {
		t.Errorf("delete --json of nothing: %d %q", code, out)
	}

	code, out, _ = run(t, "", "keys", "create", "--kb", kb, "--json")
	var key struct{ ID, Token string }
	if code != 0 || json.Unmarshal([]byte(out), &key) != nil || key.ID == "" || key.Token == "" {
		t.Errorf("keys create --json: %d %q", code, out)
	}
	if code, out, _ := run(t, "", "keys", "list", "--kb", kb, "--json"); code != 0 || !strings.Contains(out, key.ID) || strings.Contains(out, key.Token) {
		t.Errorf("keys list --json: %d %q", code, out)
	}

	for _, c := range []string{"ask", "chat"} {
		if _, out, _ := run(t, "", c, "--help"); strings.Contains(out, "--model quarry") {
			t.Errorf("%s --help names a flag's value after a backticked word:\n%s", c, out)
		}
	}
}

// TestIngestNotices checks a file that holds nothing to index is a notice
// and exit 0, and the summary counts each outcome apart.
func TestIngestNotices(t *testing.T) {
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	if err := os.MkdirAll(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(docs, "guide.md"), []byte("# Guide\n\nRun the installer.\n"), 0o644)
	os.WriteFile(filepath.Join(docs, "logo.png"), append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 64)...), 0o644)
	os.WriteFile(filepath.Join(docs, "empty.md"), nil, 0o644)
	code, out, errOut := run(t, "", "ingest", docs, "--kb", filepath.Join(dir, "kb"))
	if code != 0 || !strings.Contains(out, "3 files: 1 written, 0 unchanged, 0 pruned, 1 not read, 1 without text, 0 failed") ||
		!strings.Contains(errOut, "note: ") || !strings.Contains(errOut, "logo.png") {
		t.Errorf("ingest: %d\n%s\n%s", code, out, errOut)
	}
}
