package scaffold_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/internal/scaffold"
)

func TestNewRefuses(t *testing.T) {
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, opt := range []scaffold.Options{
		{Kind: "agent", Dir: filepath.Join(t.TempDir(), "a")},
		{Kind: "", Dir: filepath.Join(t.TempDir(), "a")},
		{Kind: "rag", Dir: full},
		{Kind: "rag", Dir: filepath.Join(t.TempDir(), "a"), Module: "bad module"},
	} {
		if _, err := scaffold.New(opt); err == nil {
			t.Errorf("New(%+v) wrote a program", opt)
		}
	}
}

// TestNewRAGBuildsAndPasses writes the program, points it at this
// checkout of Quarry, and runs its test with the go command, offline.
func TestNewRAGBuildsAndPasses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "support-bot")
	files, err := scaffold.New(scaffold.Options{Kind: "rag", Dir: dir, QuarryVersion: "v1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"go.mod", "main.go", "main_test.go", "docs/refunds.md", "README.md", ".gitignore"} {
		if !slices.Contains(files, want) {
			t.Errorf("files %v lack %s", files, want)
		}
	}
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil || !strings.Contains(string(mod), "module support-bot\n") || !strings.Contains(string(mod), "require github.com/quarry-rag/quarry v1.2.3") {
		t.Fatalf("go.mod: %q %v", mod, err)
	}
	if testing.Short() {
		t.Skip("-short: the program is not built")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the program with")
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	mod = append(mod, []byte("replace github.com/quarry-rag/quarry => "+repo+"\n")...)
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), mod, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"vet", "./..."}, {"test", "-count=1", "./..."}} {
		cmd := exec.Command(goBin, args...)
		cmd.Dir = dir
		// Everything comes from this checkout and the module cache.
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
