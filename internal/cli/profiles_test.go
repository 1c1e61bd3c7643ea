package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProfiles: config.toml's profiles are listed, and search, ask and
// keys take --profile.
func TestProfiles(t *testing.T) {
	docs := t.TempDir()
	kb := filepath.Join(t.TempDir(), "kb")
	writeFiles(t, docs, map[string]string{
		"public/refunds.md":  "# Refunds\n\nRefunds are paid within five days of the return.\n",
		"internal/limits.md": "# Limits\n\nRefunds over a thousand euros need a manager's approval.\n",
	})
	if code, _, errOut := run(t, "", "ingest", docs, "--kb", kb); code != 0 {
		t.Fatalf("ingest: %d %s", code, errOut)
	}
	if code, _, errOut := run(t, "", "profiles", "--kb", kb); code != 0 || !strings.Contains(errOut, "No profiles") {
		t.Errorf("profiles with none: %d %q", code, errOut)
	}
	cfg, err := os.ReadFile(filepath.Join(kb, "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg = append(cfg, []byte("\n[profiles.public]\ndescription = \"What customers may read\"\nfilter = \"sourceName = 'public/refunds.md'\"\nmode = \"keyword\"\ntop_k = 3\n")...)
	if err := os.WriteFile(filepath.Join(kb, "config.toml"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "", "profiles", "--kb", kb)
	if code != 0 || !strings.Contains(out, "public") || !strings.Contains(out, "What customers may read") || !strings.Contains(out, "keyword") {
		t.Errorf("profiles: %d %q %q", code, out, errOut)
	}
	code, out, _ = run(t, "", "search", "refunds", "--kb", kb, "--json")
	if code != 0 || !strings.Contains(out, "limits.md") {
		t.Fatalf("search without a profile: %d %s", code, out)
	}
	code, out, errOut = run(t, "", "search", "refunds", "--kb", kb, "--profile", "public", "--json")
	hits, err := searchHits(out)
	if code != 0 || err != nil || len(hits) != 1 || hits[0]["source"] != "public/refunds.md" {
		t.Errorf("search --profile public: %d %s %s", code, out, errOut)
	}
	code, out, errOut = run(t, "", "ask", "When are refunds paid?", "--kb", kb, "--profile", "public", "--json")
	if code != 0 || strings.Contains(out, "limits.md") || !strings.Contains(out, "refunds.md") {
		t.Errorf("ask --profile public: %d %s %s", code, out, errOut)
	}
	if code, _, errOut := run(t, "", "search", "refunds", "--kb", kb, "--profile", "nope"); code != 2 || !strings.Contains(errOut, "public") {
		t.Errorf("an unknown profile: %d %q", code, errOut)
	}
	if code, _, errOut := run(t, "", "keys", "create", "--kb", kb, "--permission", "read", "--profile", "publik"); code != 2 || !strings.Contains(errOut, "public") {
		t.Errorf("a key limited to a profile that does not exist: %d %s", code, errOut)
	}
	if code, _, errOut := run(t, "", "keys", "create", "--kb", kb, "--permission", "read", "--profile", "public"); code != 0 {
		t.Fatalf("keys create --profile: %d %s", code, errOut)
	}
	code, out, _ = run(t, "", "keys", "list", "--kb", kb)
	if code != 0 || !strings.Contains(out, "PROFILES") || !strings.Contains(out, "public") {
		t.Errorf("keys list: %d %s", code, out)
	}
}

// TestUncollected: --collection _uncollected keeps documents apart from
// every named collection, and a search there sees only them.
func TestUncollected(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	kb := filepath.Join(t.TempDir(), "kb")
	writeFiles(t, a, map[string]string{"note.md": "# Note\n\nThe uncollected note says refunds take fourteen days.\n"})
	writeFiles(t, b, map[string]string{"note.md": "# Note\n\nTeam A's note says refunds take thirty days.\n"})
	if code, _, errOut := run(t, "", "ingest", a, "--kb", kb, "--collection", "_uncollected"); code != 0 {
		t.Fatalf("ingest uncollected: %d %s", code, errOut)
	}
	if code, _, errOut := run(t, "", "ingest", b, "--kb", kb, "--collection", "team-a"); code != 0 {
		t.Fatalf("ingest team-a: %d %s", code, errOut)
	}
	code, out, _ := run(t, "", "search", "refunds note", "--kb", kb, "--collection", "_uncollected", "--json")
	if code != 0 || !strings.Contains(out, "fourteen") || strings.Contains(out, "thirty") {
		t.Errorf("search the uncollected documents: %d %s", code, out)
	}
	if code, _, errOut := run(t, "", "ingest", b, "--kb", kb, "--collection", "_other"); code != 2 || !strings.Contains(errOut, "collection name") {
		t.Errorf("a reserved-looking name: %d %s", code, errOut)
	}
}
