package load_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/load"
)

func TestRoots(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	for _, p := range []string{filepath.Join(root, "docs", "a.md"), filepath.Join(outside, "secret.md")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("docs", filepath.Join(root, "inlink")); err != nil {
		t.Fatal(err)
	}
	r, err := load.NewRoots([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	realRoot, _ := filepath.EvalSymlinks(root)
	for _, tc := range []struct {
		path, want, err string
	}{
		{"docs/a.md", filepath.Join(realRoot, "docs", "a.md"), ""},
		{filepath.Join(root, "docs"), filepath.Join(realRoot, "docs"), ""},
		{"docs/../docs/a.md", filepath.Join(realRoot, "docs", "a.md"), ""},
		{"", "", "empty"},
		{"missing.md", "", "does not exist"},
		{"../" + filepath.Base(outside) + "/secret.md", "", "outside the allowed roots"},
		{filepath.Join(outside, "secret.md"), "", "outside the allowed roots"},
		{filepath.Join(outside, "nothing-here"), "", "outside the allowed roots"},
		{"link/secret.md", "", "through a symlink"},
		// A link named as the path is followed only to a real path inside.
		{"inlink", filepath.Join(realRoot, "docs"), ""},
		{"link", "", "through a symlink"},
		{"/etc/passwd", "", "outside the allowed roots"},
	} {
		got, err := r.Confine(tc.path)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Confine(%q) = %q, %v; want an error with %q", tc.path, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("Confine(%q) = %q, %v; want %q", tc.path, got, err, tc.want)
		}
	}
	for _, bad := range [][]string{{filepath.Join(root, "docs", "a.md")}, {filepath.Join(root, "nope")}} {
		if _, err := load.NewRoots(bad); err == nil {
			t.Errorf("NewRoots(%v) succeeded", bad)
		}
	}
	if d := r.Dirs(); len(d) != 1 || d[0] != realRoot {
		t.Errorf("Dirs() = %v", d)
	}
}
