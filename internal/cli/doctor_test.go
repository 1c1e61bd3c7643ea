package cli_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func TestDoctor(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("QUARRY_KB", "")
	code, out, errOut := run(t, "", "doctor", "--json")
	if code != 0 {
		t.Fatalf("doctor: %d %s", code, errOut)
	}
	var d struct {
		OK     bool `json:"ok"`
		Checks []struct{ Name, State, Detail string }
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil || !d.OK || len(d.Checks) != 7 || d.Checks[0].Name != "knowledge base" {
		t.Fatalf("doctor --json: %v %s", err, out)
	}
	// A knowledge base holding one short chunk a person wrote: a warning,
	// and the doctor passes.
	kb := filepath.Join(t.TempDir(), "kb")
	writeFiles(t, "docs", map[string]string{"a.md": "# A\n\nhi\n"})
	if code, _, errOut := run(t, "", "ingest", "docs", "--kb", kb); code != 0 {
		t.Fatalf("ingest: %d %s", code, errOut)
	}
	code, out, _ = run(t, "", "doctor", "--kb", kb)
	if code != 0 || !strings.Contains(out, "warn  collection") || !strings.Contains(out, "ok    store") {
		t.Errorf("doctor on a knowledge base with a short chunk: %d\n%s", code, out)
	}
	// One without a letter or digit: health's serious finding fails it.
	writeFiles(t, "docs", map[string]string{"b.txt": "*** --- !!! ... ***\n"})
	if code, _, errOut := run(t, "", "ingest", "docs", "--kb", kb); code != 0 {
		t.Fatalf("ingest: %d %s", code, errOut)
	}
	code, out, _ = run(t, "", "doctor", "--kb", kb)
	if code != 1 || !strings.Contains(out, "fail  collection") || !strings.Contains(out, "ok    store") {
		t.Errorf("doctor on a knowledge base with an empty chunk: %d\n%s", code, out)
	}
}
