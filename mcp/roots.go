package mcp

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// confine resolves a path from a tool call and checks it lies inside one of
// the roots. Relative paths are taken from the first root. The check runs
// on the real path, so neither ".." nor a symlink can lead outside.
func (s *Server) confine(p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("an empty path")
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(s.roots[0], p)
	}
	p = filepath.Clean(p)
	outside := fmt.Errorf("path %s is outside the allowed roots (%s)", p, strings.Join(s.roots, ", "))
	real, err := filepath.EvalSymlinks(p)
	switch {
	case err != nil && !s.inRoots(p):
		return "", outside // say nothing of what exists out there
	case os.IsNotExist(err):
		return "", fmt.Errorf("path %s does not exist", p)
	case err != nil:
		return "", fmt.Errorf("path %s: %w", p, err)
	case !s.inRoots(real) && s.inRoots(p):
		return "", fmt.Errorf("path %s leads outside the allowed roots through a symlink", p)
	case !s.inRoots(real):
		return "", outside
	}
	return real, nil
}

func (s *Server) inRoots(p string) bool {
	for _, r := range s.roots {
		rel, err := filepath.Rel(r, p)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) {
			return true
		}
	}
	return false
}
