package load

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSymlinkSwapAfterWalk replaces listed files and folders with links to
// a file outside the root between the listing and the read: the read must
// refuse them, never return the outside text.
func TestSymlinkSwapAfterWalk(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.md")
	if err := os.WriteFile(secret, []byte("# Secret\n\nthe outside secret text\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(outside, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "sub", "b.md"), []byte("the outside secret text\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := tree(t, map[string]string{"a.md": "# A\n\ninside text a\n", "sub/b.md": "inside text b\n", "c.md": "inside text c\n"})
	l := New(Options{})
	defer l.Close()
	entries, err := l.Files([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	single, err := l.Files([]string{filepath.Join(root, "c.md")})
	if err != nil {
		t.Fatal(err)
	}
	// The swaps: a file, a folder above a file, and a file root.
	swap := func(p, target string) {
		t.Helper()
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	swap(filepath.Join(root, "a.md"), secret)
	swap(filepath.Join(root, "sub"), filepath.Join(outside, "sub"))
	swap(filepath.Join(root, "c.md"), secret)
	for _, e := range append(entries, single...) {
		res, _ := l.ReadIf(context.Background(), e, nil)
		if res.Err == nil {
			t.Errorf("%s: read after the swap", e.Source.Name)
		}
		for _, d := range res.Docs {
			if strings.Contains(d.Content, "outside secret") {
				t.Errorf("%s: read the file outside the root: %q", e.Source.Name, d.Content)
			}
		}
	}
}

// TestLinksInsideRootStillRead: a link that stays inside the root is read
// as before.
func TestLinksInsideRootStillRead(t *testing.T) {
	root := tree(t, map[string]string{"real.md": "inside text\n"})
	if err := os.Symlink("real.md", filepath.Join(root, "alias.md")); err != nil {
		t.Fatal(err)
	}
	l := New(Options{})
	defer l.Close()
	var got []string
	err := l.Walk(context.Background(), []string{root}, func(r Result) error {
		if r.Err != nil {
			t.Errorf("%s: %v", r.Source.Name, r.Err)
		}
		got = append(got, r.Source.Name)
		return nil
	})
	if err != nil || len(got) != 2 {
		t.Fatalf("walk: %v %v", got, err)
	}
}
