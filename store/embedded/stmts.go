package embedded

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
)

// stmts keeps the read path's statements prepared on the reader pool. A
// search runs two queries — the collection's sequence number, then its
// hits' rows — and modernc's SQLite parses and compiles a query text anew
// on every call: for statements this small that was a third of their
// cost. database/sql re-prepares a Stmt on each pooled connection itself.
type stmts struct {
	db *sql.DB

	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// maxCachedStmts bounds the cache: hit reads differ by their number of
// ids, so the texts are few (one per top-k a caller uses) but unbounded.
const maxCachedStmts = 64

func newStmts(db *sql.DB) *stmts { return &stmts{db: db, m: map[string]*sql.Stmt{}} }

// query runs the query text through its prepared statement, preparing it
// on first use; past maxCachedStmts texts it runs unprepared.
func (s *stmts) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := s.prepared(ctx, query)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return s.db.QueryContext(ctx, query, args...)
	}
	return st.QueryContext(ctx, args...)
}

// queryRow is query for one row.
func (s *stmts) queryRow(ctx context.Context, query string, args ...any) (*sql.Row, error) {
	st, err := s.prepared(ctx, query)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return s.db.QueryRowContext(ctx, query, args...), nil
	}
	return st.QueryRowContext(ctx, args...), nil
}

func (s *stmts) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.m[query]; ok {
		return st, nil
	}
	if s.m == nil || len(s.m) >= maxCachedStmts {
		return nil, nil
	}
	st, err := s.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	s.m[query] = st
	return st, nil
}

// close closes every statement; later calls run unprepared.
func (s *stmts) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var first error
	for _, st := range s.m {
		if err := st.Close(); err != nil && first == nil {
			first = err
		}
	}
	s.m = nil
	return first
}
