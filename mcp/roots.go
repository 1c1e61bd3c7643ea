package mcp

// confine resolves a path from a tool call and checks it lies inside one of
// the roots (load.Roots.Confine).
func (s *Server) confine(p string) (string, error) { return s.roots.Confine(p) }
