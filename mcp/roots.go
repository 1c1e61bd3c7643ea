package mcp

import (
	"fmt"

	"github.com/quarry-rag/quarry"
)

// confineAll confines a tool call's paths, refusing the call at the first
// outside the roots.
func (s *Server) confineAll(paths []string) ([]string, error) {
	out, err := s.roots.ConfineAll(paths)
	if err != nil {
		return nil, fmt.Errorf("%w: refused: %w", quarry.ErrForbidden, err)
	}
	return out, nil
}
