package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
)

// A statement that holds a raw fragment runs fenced: a parse against
// sqlfrag's allow-list keeps the fragment to the row's own columns and pure
// functions, and the database keeps it there too, so that a defect in the
// parser alone can neither leak nor change anything.
//
//   - It runs as FragmentRole, a role that may only SELECT from
//     quarry_documents (and read its own scope row), under a
//     transaction-local role switch.
//   - Row-level security on quarry_documents limits that role to the
//     collection and the filter's top-level equalities (the tenant of a
//     scoped key), as recorded for this one transaction in
//     quarry_fragment_scope, which the role cannot write.
//   - statement_timeout bounds it (FragmentTimeout), and the search path is
//     pinned to the schemas Quarry resolved.
//   - The transaction is always rolled back, so nothing the statement did
//     — a setting changed for the session, a large object — outlives it on
//     the pooled connection; a delete first collects the ids under the
//     fence in a savepoint that is rolled back, then deletes them as
//     Quarry's own role.
//   - At most half the pool runs fenced statements at once, so fragments
//     cannot take every connection from plain searches.

// FragmentRole is the role fenced statements run as. `quarry setup` creates
// it (NOLOGIN) with SELECT on quarry_documents alone, and makes the setup
// role a member; a separate runtime role needs GRANT quarry_fragment TO it
// (RuntimeGrants).
const FragmentRole = "quarry_fragment"

// FragmentTimeout bounds one fenced statement.
const FragmentTimeout = 2 * time.Second

// fragmentSQL is the setup of fenced statements; it is idempotent and run
// by Setup (and by an open whose role may, for stores set up before it).
const fragmentSQL = `
DO $$ BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'quarry_fragment') THEN
		CREATE ROLE quarry_fragment NOLOGIN NOINHERIT;
	END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; -- a concurrent setup made it
END $$;
CREATE TABLE IF NOT EXISTS quarry_fragment_scope (
	pid           integer NOT NULL,
	collection_id integer NOT NULL,
	metadata      jsonb NOT NULL,
	source_type   text,
	source_name   text
);
REVOKE ALL ON quarry_fragment_scope FROM PUBLIC;
GRANT SELECT ON quarry_documents, quarry_fragment_scope TO quarry_fragment;
DO $$ BEGIN
	EXECUTE format('GRANT USAGE ON SCHEMA %I TO quarry_fragment',
		(SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = 'quarry_documents'::regclass));
	BEGIN
		-- A member switches to the role; it must not inherit it, or the
		-- role's row-level security would hold its own statements too.
		IF current_setting('server_version_num')::int >= 160000 THEN
			EXECUTE 'GRANT quarry_fragment TO CURRENT_USER WITH INHERIT FALSE';
		ELSE
			GRANT quarry_fragment TO CURRENT_USER;
		END IF;
	EXCEPTION WHEN insufficient_privilege OR invalid_grant_operation THEN
		RAISE NOTICE 'quarry: grant quarry_fragment to the runtime role by hand';
	END;
END $$;
ALTER TABLE quarry_documents ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS quarry_all ON quarry_documents;
CREATE POLICY quarry_all ON quarry_documents USING (true) WITH CHECK (true);
DROP POLICY IF EXISTS quarry_fragment_scope ON quarry_documents;
CREATE POLICY quarry_fragment_scope ON quarry_documents AS RESTRICTIVE FOR ALL TO quarry_fragment USING (
	collection_id = (SELECT s.collection_id FROM quarry_fragment_scope s WHERE s.pid = pg_backend_pid())
	AND metadata @> (SELECT s.metadata FROM quarry_fragment_scope s WHERE s.pid = pg_backend_pid())
	AND source_type = coalesce((SELECT s.source_type FROM quarry_fragment_scope s WHERE s.pid = pg_backend_pid()), source_type)
	AND source_name = coalesce((SELECT s.source_name FROM quarry_fragment_scope s WHERE s.pid = pg_backend_pid()), source_name)
);
`

// errNoFence refuses a raw fragment on a store without the fence.
var errNoFence = fmt.Errorf("%w: raw SQL fragments need Quarry's fragment role on this store (%s), which is missing or not granted to this role: run `quarry setup --store URL` as the store's owner",
	store.ErrUnsupported, FragmentRole)

// detectFence reports whether fenced statements can run: the role and
// scope table exist, the role may read the documents, row-level security
// is on, and this connection's role may switch to it. When the setup role
// opens a store set up before the fence existed, the fence is added.
func (b *Backend) detectFence(ctx context.Context) bool {
	if b.fenceReady(ctx) {
		return true
	}
	if _, err := b.db.Exec(ctx, fragmentSQL); err != nil {
		return false
	}
	return b.fenceReady(ctx)
}

func (b *Backend) fenceReady(ctx context.Context) bool {
	var ok bool
	err := b.db.QueryRow(ctx, `SELECT CASE WHEN EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'quarry_fragment')
			AND to_regclass('quarry_fragment_scope') IS NOT NULL
		THEN pg_has_role(current_user, 'quarry_fragment', 'MEMBER')
			AND has_table_privilege('quarry_fragment', 'quarry_documents', 'SELECT')
			AND has_table_privilege(current_user, 'quarry_fragment_scope', 'INSERT')
			AND (SELECT relrowsecurity FROM pg_class WHERE oid = 'quarry_documents'::regclass)
			AND EXISTS (SELECT 1 FROM pg_policy WHERE polrelid = 'quarry_documents'::regclass AND polname = 'quarry_fragment_scope')
		ELSE false END`).Scan(&ok)
	return err == nil && ok
}

// clause is the WHERE clause of a statement on one collection and its
// bound arguments.
type clause struct {
	sql  string
	args []any
	// fenced is set when the filter holds raw fragments: the statement
	// then runs through Backend.read's fence, and f is kept for its scope.
	fenced bool
	cid    int
	f      filter.Expr
}

// read runs fn in a transaction: a plain one, or for a clause with raw
// fragments a fenced one that is always rolled back.
func (b *Backend) read(ctx context.Context, w clause, fn func(pgx.Tx) error) error {
	if !w.fenced {
		return pgx.BeginFunc(ctx, b.db, fn)
	}
	if !b.fence {
		return errNoFence
	}
	release, err := b.acquireFence(ctx)
	if err != nil {
		return err
	}
	defer release()
	tx, err := b.db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := enterFence(ctx, tx, w); err != nil {
		return err
	}
	return fencedError(fn(tx))
}

// enterFence records the clause's scope for row-level security and switches
// tx to the fragment role, its statement timeout and a pinned search path.
// JIT is off: the scope row's sequential scans, priced as disabled under
// the keyword search's enable_seqscan = off, lifted the plan's cost past
// jit_above_cost, and compiling it took 1.1-1.8 s for a 2 ms query.
func enterFence(ctx context.Context, tx pgx.Tx, w clause) error {
	md, st, sn, err := fenceScope(w.f)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO quarry_fragment_scope (pid, collection_id, metadata, source_type, source_name)
		VALUES (pg_backend_pid(), $1, $2::text::jsonb, $3, $4)`, w.cid, md, st, sn); err != nil {
		return fmt.Errorf("fence a raw fragment: %w", err)
	}
	if _, err := tx.Exec(ctx, `SELECT set_config('search_path', coalesce((SELECT string_agg(quote_ident(s), ',') FROM unnest(current_schemas(false)) s), ''), true),
		set_config('statement_timeout', $1, true), set_config('jit', 'off', true), set_config('role', $2, true)`,
		strconv.FormatInt(FragmentTimeout.Milliseconds(), 10), FragmentRole); err != nil {
		return fmt.Errorf("fence a raw fragment: %w", err)
	}
	return nil
}

// queryCanceled is PostgreSQL's SQLSTATE for a statement stopped by
// statement_timeout (or a cancel request).
const queryCanceled = "57014"

// fencedError names what a fenced statement's fragment did wrong as a
// request that must change: its timeout, and the errors of data and of
// names and types it raised (SQLSTATE classes 22 and 42), by their code
// alone — the database's text can hold another row's values. A failure of
// the server or the connection stays the store's error.
func fencedError(err error) error {
	code := pgErrorCode(err)
	switch {
	case code == queryCanceled:
		return fmt.Errorf("%w: the raw fragment took longer than %s", store.ErrInvalidRequest, FragmentTimeout)
	case strings.HasPrefix(code, "22"), strings.HasPrefix(code, "42"):
		return fmt.Errorf("%w: the raw fragment failed in the database (SQLSTATE %s): check its types and values", store.ErrInvalidRequest, code)
	}
	return err
}

// pgErrorCode is the SQLSTATE of a PostgreSQL error, "" for another error.
func pgErrorCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// acquireFence takes one of the fenced statements' slots, half the pool's
// connections, waiting for one while ctx allows.
func (b *Backend) acquireFence(ctx context.Context) (func(), error) {
	if b.fenceSlots == nil {
		return func() {}, nil
	}
	select {
	case b.fenceSlots <- struct{}{}:
		return func() { <-b.fenceSlots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// fenceScope is what row-level security holds a fenced statement to: the
// filter's top-level equalities — on metadata as a jsonb object the row's
// metadata must contain, on the source columns as values — which every
// matching row has. A filter that narrows otherwise (or, ranges) is held
// to the collection alone by the database, and to the whole filter by the
// CASE guard of sqlexpr.Guarded.
func fenceScope(f filter.Expr) (md string, st, sn *string, err error) {
	m := map[string]any{}
	var conds []filter.Expr
	switch x := f.(type) {
	case *filter.Group:
		if x.Op == filter.OpAnd {
			conds = x.Conditions
		}
	case *filter.Condition:
		conds = []filter.Expr{x}
	}
	for _, e := range conds {
		c, ok := e.(*filter.Condition)
		if !ok || c.Op != filter.OpEq {
			continue
		}
		switch c.Field {
		case "sourceType", "sourceName":
			s, ok := c.Value.(string)
			if !ok {
				continue
			}
			if c.Field == "sourceType" {
				st = &s
			} else {
				sn = &s
			}
		default:
			if _, isList := c.Value.([]any); isList {
				continue
			}
			m[c.Field] = c.Value
		}
	}
	b, err := document.MarshalValue(m)
	if err != nil {
		return "", nil, nil, fmt.Errorf("fence a raw fragment: %w", err)
	}
	if !json.Valid(b) {
		return "", nil, nil, errors.New("fence a raw fragment: the scope is not JSON")
	}
	return string(b), st, sn, nil
}
