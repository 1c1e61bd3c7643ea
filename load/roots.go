package load

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Roots are the folders a server may read files from when a client names
// a path (the MCP server's ingest tool, the HTTP API's ingest endpoint).
// Containment is checked on real paths, so neither ".." nor a symlink leads
// outside.
type Roots struct {
	dirs []string // absolute, symlinks resolved
}

// NewRoots resolves each folder; empty means the current directory.
func NewRoots(dirs []string) (*Roots, error) {
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	r := &Roots{}
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("root %s: %w", d, err)
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return nil, fmt.Errorf("root %s: %w", d, err)
		}
		st, err := os.Stat(real)
		if err != nil {
			return nil, fmt.Errorf("root %s: %w", d, err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("root %s is not a directory", d)
		}
		r.dirs = append(r.dirs, real)
	}
	return r, nil
}

// Dirs returns the resolved folders.
func (r *Roots) Dirs() []string { return append([]string(nil), r.dirs...) }

// Confine resolves a path a client gave and checks it lies inside one of
// the roots; a relative path starts at the first root. It returns the real
// path. A path outside is refused without saying whether it exists.
func (r *Roots) Confine(p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("an empty path")
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(r.dirs[0], p)
	}
	p = filepath.Clean(p)
	outside := fmt.Errorf("path %s is outside the allowed roots (%s)", p, strings.Join(r.dirs, ", "))
	real, err := filepath.EvalSymlinks(p)
	switch {
	case err != nil && !r.Contains(p):
		return "", outside // say nothing of what exists out there
	case os.IsNotExist(err):
		return "", fmt.Errorf("path %s does not exist", p)
	case err != nil:
		return "", fmt.Errorf("path %s: %w", p, err)
	case !r.Contains(real) && r.Contains(p):
		return "", fmt.Errorf("path %s leads outside the allowed roots through a symlink", p)
	case !r.Contains(real):
		return "", outside
	}
	return real, nil
}

// Contains reports whether the clean absolute path p lies inside a root.
func (r *Roots) Contains(p string) bool {
	for _, d := range r.dirs {
		rel, err := filepath.Rel(d, p)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) {
			return true
		}
	}
	return false
}

// ConfineAll confines every path (Confine), in order; the first path
// refused is the error.
func (r *Roots) ConfineAll(paths []string) ([]string, error) {
	out := make([]string, len(paths))
	for i, p := range paths {
		real, err := r.Confine(p)
		if err != nil {
			return nil, err
		}
		out[i] = real
	}
	return out, nil
}
