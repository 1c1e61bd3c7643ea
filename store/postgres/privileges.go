package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/quarry-rag/quarry/store"
)

// Privileges implements store.PrivilegeAuditor: what the connection's role
// holds beyond SELECT, INSERT, UPDATE and DELETE on Quarry's tables and
// membership in FragmentRole.
func (b *Backend) Privileges(ctx context.Context) (store.Privileges, error) {
	p := store.Privileges{Fragments: b.fence}
	var super, bypass, createRole, createDB, replication bool
	err := b.db.QueryRow(ctx, `SELECT current_user, rolsuper, rolbypassrls, rolcreaterole, rolcreatedb, rolreplication
		FROM pg_roles WHERE rolname = current_user`).Scan(&p.Role, &super, &bypass, &createRole, &createDB, &replication)
	if err != nil {
		return p, fmt.Errorf("postgres: read the role's attributes: %w", err)
	}
	for _, a := range []struct {
		has  bool
		what string
	}{
		{super, "SUPERUSER (reads and writes everything, runs server programs)"},
		{bypass, "BYPASSRLS"},
		{createRole, "CREATEROLE"},
		{createDB, "CREATEDB"},
		{replication, "REPLICATION"},
	} {
		if a.has {
			p.Excess = append(p.Excess, a.what)
		}
	}
	if !super {
		rows, err := b.db.Query(ctx, `SELECT r.rolname FROM pg_roles r
			WHERE r.rolname IN ('pg_read_server_files', 'pg_write_server_files', 'pg_execute_server_program', 'pg_read_all_data', 'pg_write_all_data', 'pg_signal_backend')
			AND pg_has_role(current_user, r.oid, 'MEMBER') ORDER BY 1`)
		if err != nil {
			return p, fmt.Errorf("postgres: read the role's memberships: %w", err)
		}
		roles, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return p, fmt.Errorf("postgres: read the role's memberships: %w", err)
		}
		for _, r := range roles {
			p.Excess = append(p.Excess, "member of "+r)
		}
	}
	return p, nil
}

// RuntimeGrants implements store.PrivilegeAuditor: DML on Quarry's tables,
// INSERT on the fence's scope table and membership in FragmentRole. The
// owner keeps CREATE: a new collection builds an index.
func (b *Backend) RuntimeGrants(ctx context.Context, role string) ([]string, error) {
	var schema string
	if err := b.db.QueryRow(ctx, `SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.oid = 'quarry_documents'::regclass`).Scan(&schema); err != nil {
		return nil, fmt.Errorf("postgres: find Quarry's schema: %w", err)
	}
	r := pgx.Identifier{role}.Sanitize()
	s := pgx.Identifier{schema}.Sanitize()
	all := append(append([]string{}, tables...), "quarry_collection_settings")
	for i, t := range all {
		all[i] = s + "." + t
	}
	// The role switches to FragmentRole and must not inherit it: its
	// row-level security would hold the role's own statements too.
	member := []string{"GRANT " + FragmentRole + " TO " + r + " WITH INHERIT FALSE;"}
	var version int
	if err := b.db.QueryRow(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&version); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if version < 160000 {
		member = []string{"GRANT " + FragmentRole + " TO " + r + ";", "ALTER ROLE " + r + " NOINHERIT;"}
	}
	return append([]string{
		"GRANT USAGE ON SCHEMA " + s + " TO " + r + ";",
		"GRANT SELECT, INSERT, UPDATE, DELETE ON " + strings.Join(all, ", ") + " TO " + r + ";",
		"GRANT USAGE ON ALL SEQUENCES IN SCHEMA " + s + " TO " + r + ";",
		"GRANT INSERT ON " + s + ".quarry_fragment_scope TO " + r + ";",
	}, member...), nil
}
