// Package scaffold writes the starting point of a program built on Quarry
// (`quarry new rag NAME`): a module with a main that opens a knowledge
// base, ingests a folder, searches and asks it, a test built on the
// quarrytest fakes, and a sample document — the way `neuron make:rag`
// starts one.
package scaffold

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"

	"github.com/quarry-rag/quarry/internal/buildinfo"
)

//go:embed all:rag
var templates embed.FS

// Kinds are the programs New can write.
var Kinds = []string{"rag"}

// Options say what New writes.
type Options struct {
	// Kind is one of Kinds.
	Kind string
	// Dir is the folder to create; it must not exist or be empty.
	Dir string
	// Module is the new module's path (default: the folder's name).
	Module string
	// QuarryVersion is the Quarry module version to require ("v1.2.0");
	// empty leaves the requirement to `go mod tidy`. ReleaseVersion is the
	// running Quarry's.
	QuarryVersion string
}

// ReleaseVersion is the running Quarry's module version when it is a
// release, else "": a build from a checkout names a commit no program can
// require, so `go mod tidy` picks the latest release instead.
func ReleaseVersion() string {
	if v := buildinfo.Version(); strings.HasPrefix(v, "v") {
		return v
	}
	return ""
}

// modulePath is what go.mod accepts as a module path, kept simple.
var modulePath = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._~/-]*$`)

// New writes the program and returns the files written, relative to Dir.
func New(opt Options) ([]string, error) {
	root := opt.Kind
	if _, err := fs.Stat(templates, root); opt.Kind == "" || err != nil {
		return nil, fmt.Errorf("new %q: give one of %s", opt.Kind, strings.Join(Kinds, ", "))
	}
	if opt.Module == "" {
		opt.Module = filepath.Base(filepath.Clean(opt.Dir))
	}
	if !modulePath.MatchString(opt.Module) || strings.Contains(opt.Module, "..") {
		return nil, fmt.Errorf("new: %q is not a module path: use letters, digits and . _ ~ / -", opt.Module)
	}
	if entries, err := os.ReadDir(opt.Dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("new: %s exists and is not empty", opt.Dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("new: %w", err)
	}
	var written []string
	err := fs.WalkDir(templates, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel := strings.TrimSuffix(strings.TrimPrefix(p, root+"/"), ".tmpl")
		if rel == "gitignore" { // a dot-file would be hidden from go:embed's patterns
			rel = ".gitignore"
		}
		body, err := fs.ReadFile(templates, p)
		if err != nil {
			return err
		}
		t, err := template.New(rel).Delims("[[", "]]").Parse(string(body))
		if err != nil {
			return fmt.Errorf("template %s: %w", rel, err)
		}
		var b bytes.Buffer
		if err := t.Execute(&b, opt); err != nil {
			return fmt.Errorf("template %s: %w", rel, err)
		}
		out := filepath.Join(opt.Dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
			return err
		}
		written = append(written, path.Clean(rel))
		return nil
	})
	if err != nil {
		return written, fmt.Errorf("new: %w", err)
	}
	return written, nil
}
