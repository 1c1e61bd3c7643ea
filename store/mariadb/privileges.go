package mariadb

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/quarry-rag/quarry/store"
)

// Privileges implements store.PrivilegeAuditor: what the account holds
// beyond the privileges on its own database that Quarry needs (each
// collection is a table, so those include CREATE and DROP) — anything
// granted ON *.* but USAGE, or on another database.
func (b *Backend) Privileges(ctx context.Context) (store.Privileges, error) {
	b.mu.Lock()
	p := store.Privileges{Fragments: b.fence != nil}
	b.mu.Unlock()
	var database string
	if err := b.db.QueryRowContext(ctx, `SELECT CURRENT_USER(), DATABASE()`).Scan(&p.Role, &database); err != nil {
		return p, fmt.Errorf("mariadb: read the account: %w", err)
	}
	rows, err := b.db.QueryContext(ctx, `SHOW GRANTS FOR CURRENT_USER`)
	if err != nil {
		return p, fmt.Errorf("mariadb: read the account's grants: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			return p, fmt.Errorf("mariadb: read the account's grants: %w", err)
		}
		if excess := grantExcess(g, database); excess != "" {
			p.Excess = append(p.Excess, excess)
		}
	}
	return p, rows.Err()
}

var grantLine = regexp.MustCompile(`^GRANT (.+) ON (\S+) TO `)

// grantExcess names what one SHOW GRANTS line gives beyond the account's
// own database, or "".
func grantExcess(line, database string) string {
	m := grantLine.FindStringSubmatch(line)
	if m == nil {
		return ""
	}
	privs, on := m[1], strings.ReplaceAll(m[2], "`", "")
	switch {
	case on == "*.*" && privs == "USAGE":
		return ""
	case on == "*.*":
		return privs + " on every database (*.*)"
	case strings.HasPrefix(on, database+"."):
		return ""
	}
	return privs + " on " + on
}

// RuntimeGrants implements store.PrivilegeAuditor: Quarry's privileges on
// its database for a separate account (each collection is a table, made
// and dropped at run time; GRANT OPTION lets a new collection be read by
// the fragment account).
func (b *Backend) RuntimeGrants(ctx context.Context, role string) ([]string, error) {
	var database string
	if err := b.db.QueryRowContext(ctx, `SELECT DATABASE()`).Scan(&database); err != nil {
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	if strings.ContainsAny(role, "'`\\") {
		return nil, fmt.Errorf("%w: account name %q holds a quote", store.ErrInvalidRequest, role)
	}
	return []string{
		"GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, INDEX, ALTER, REFERENCES ON `" + database + "`.* TO '" + role + "'@'%' WITH GRANT OPTION;",
	}, nil
}
