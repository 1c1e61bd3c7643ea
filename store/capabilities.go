package store

import (
	"context"

	"github.com/quarry-rag/quarry/embed"
)

// The optional capabilities below are named so their callers (ingestion,
// the health audit, the knowledge base) ask the Store for them instead of
// asserting anonymous interfaces on the backend.

// Checkpointer is implemented by backends that keep derived state beside
// their source of truth (the embedded store's indexes) and can write it
// down now, so the next open replays nothing.
type Checkpointer interface {
	Checkpoint(ctx context.Context) error
}

// Analyzer is implemented by backends whose planner wants fresh statistics
// after a large write (PostgreSQL's ANALYZE).
type Analyzer interface {
	Analyze(ctx context.Context) error
}

// EmbeddingCacher is implemented by backends that keep embeddings by
// content hash and model, so unchanged text is never embedded twice.
type EmbeddingCacher interface {
	EmbeddingCache() embed.Cache
}

// Installer is implemented by backends that create their schema,
// extensions and indexes in a step of its own (`quarry setup`), run with
// an administrator's rights so the runtime needs only DML grants.
type Installer interface {
	Setup(ctx context.Context) error
}

// Engine says what a store runs on, for people checking an installation.
type Engine struct {
	// Name is the engine ("sqlite", "postgresql", "memory"); Version its
	// version as the engine reports it; Extensions the versions of what it
	// uses beside (pgvector, pg_search).
	Name       string            `json:"name"`
	Version    string            `json:"version,omitempty"`
	Extensions map[string]string `json:"extensions,omitempty"`
}

// Describer is implemented by backends that can say what engine they run
// on; asking reaches the engine, so it also shows the store answers.
type Describer interface {
	Describe(ctx context.Context) (Engine, error)
}

// Describe reports the backend's engine; one that cannot say is named by
// its dialect, or "unknown".
func (s *Store) Describe(ctx context.Context) (Engine, error) {
	if d, ok := s.b.(Describer); ok {
		return d.Describe(ctx)
	}
	name := s.b.Dialect()
	if name == "" {
		name = "unknown"
	}
	return Engine{Name: name}, nil
}

// Checkpoint writes the backend's derived state down when it keeps any;
// a backend without it has nothing to do.
func (s *Store) Checkpoint(ctx context.Context) error {
	if c, ok := s.b.(Checkpointer); ok {
		return c.Checkpoint(ctx)
	}
	return nil
}

// Analyze refreshes the backend's planner statistics when it keeps any.
func (s *Store) Analyze(ctx context.Context) error {
	if a, ok := s.b.(Analyzer); ok {
		return a.Analyze(ctx)
	}
	return nil
}

// EmbeddingCache returns the backend's embedding cache; false when it has
// none.
func (s *Store) EmbeddingCache() (embed.Cache, bool) {
	if c, ok := s.b.(EmbeddingCacher); ok {
		return c.EmbeddingCache(), true
	}
	return nil, false
}

// Setup runs the backend's installation step; false when it has none.
func (s *Store) Setup(ctx context.Context) (bool, error) {
	if i, ok := s.b.(Installer); ok {
		return true, i.Setup(ctx)
	}
	return false, nil
}

// IndexMaintainer returns the backend's index maintenance; false when it
// has none.
func (s *Store) IndexMaintainer() (IndexMaintainer, bool) {
	im, ok := s.b.(IndexMaintainer)
	return im, ok
}

// Privileges is what a server store's connection may do, judged against
// what Quarry needs at run time (quarry doctor reports it).
type Privileges struct {
	// Role is the connection's role or account.
	Role string `json:"role"`
	// Excess names what the role holds beyond Quarry's run-time needs
	// (superuser, server files, other databases): each is something a
	// defect in Quarry, or a fragment that got past its parser, could use.
	Excess []string `json:"excess,omitempty"`
	// Fragments is set when raw filter fragments can run fenced, as the
	// store's least-privileged role; without it they are refused.
	Fragments bool `json:"fragments"`
}

// PrivilegeAuditor is implemented by server stores that can judge their
// connection's privileges and say what a separate run-time role needs.
type PrivilegeAuditor interface {
	Privileges(ctx context.Context) (Privileges, error)
	// RuntimeGrants are the statements a DBA runs so that role can run
	// Quarry on a store set up by its owner (quarry setup --runtime-role).
	RuntimeGrants(ctx context.Context, role string) ([]string, error)
}

// PrivilegeAuditor returns the backend's privilege audit; false when it
// has none (stores without roles: embedded, memory, or an engine whose
// credentials are a single key).
func (s *Store) PrivilegeAuditor() (PrivilegeAuditor, bool) {
	pa, ok := s.b.(PrivilegeAuditor)
	return pa, ok
}
