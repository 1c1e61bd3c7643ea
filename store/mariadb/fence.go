package mariadb

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/internal/sqlexpr"
)

// A statement that holds a raw fragment runs fenced. sqlfrag's parse keeps
// the fragment to the row's own columns and pure functions, the CASE guard
// of sqlexpr.Guarded keeps it off rows outside the filter's scope, and the
// database keeps it where it can, so that a parser defect alone can change
// nothing and read no other table:
//
//   - it runs as the database's fragment account (fragmentUser), which
//     holds SELECT on the collections' own tables and nothing else: no
//     other table, no FILE privilege (LOAD_FILE reads nothing), no writes;
//   - in a read-only transaction that is rolled back, on connections of
//     its own (at most fragmentConns, the account's MAX_USER_CONNECTIONS
//     besides), so fragments cannot take the pool plain searches use;
//   - with max_statement_time (FragmentTimeout), set on the account and on
//     each statement.
//
// MariaDB has no row-level security: within a collection's table, the
// tenant's rows are kept by the parse and the guard alone.

// FragmentTimeout bounds one fenced statement.
const FragmentTimeout = 2 * time.Second

// fragmentConns bounds the fragment account's connections from one store.
const fragmentConns = 4

// fragmentUser is the fragment account of a database: one per database,
// since accounts are the server's and each database's Quarry keeps its
// own password for it.
func fragmentUser(database string) string {
	sum := sha256.Sum256([]byte(database))
	return "qf_" + hex.EncodeToString(sum[:8])
}

// errNoFence refuses a raw fragment on a store without the fence.
var errNoFence = fmt.Errorf("%w: raw SQL fragments need Quarry's fragment account on this database, which is missing: run `quarry setup --store URL` as a user that may create users and grant SELECT",
	store.ErrUnsupported)

const fragmentTableSQL = `CREATE TABLE IF NOT EXISTS quarry_fragment_account (
	name     VARBINARY(80) NOT NULL PRIMARY KEY,
	password VARBINARY(128) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`

// setupFence creates (or re-keys) the fragment account, records it, and
// grants it SELECT on every collection's tables.
func (b *Backend) setupFence(ctx context.Context) error {
	if _, err := b.db.ExecContext(ctx, fragmentTableSQL); err != nil {
		return fmt.Errorf("mariadb: fragment account: %w", err)
	}
	var database string
	if err := b.db.QueryRowContext(ctx, `SELECT DATABASE()`).Scan(&database); err != nil {
		return fmt.Errorf("mariadb: fragment account: %w", err)
	}
	user := fragmentUser(database)
	key := make([]byte, 24)
	if _, err := rand.Read(key); err != nil {
		return fmt.Errorf("mariadb: fragment account: %w", err)
	}
	password := hex.EncodeToString(key) // hex: safe inside the quotes below
	limits := fmt.Sprintf(" WITH MAX_USER_CONNECTIONS %d MAX_STATEMENT_TIME %g", 2*fragmentConns, FragmentTimeout.Seconds())
	for _, stmt := range []string{
		`CREATE USER IF NOT EXISTS '` + user + `'@'%' IDENTIFIED BY '` + password + `'` + limits,
		`ALTER USER '` + user + `'@'%' IDENTIFIED BY '` + password + `'` + limits,
	} {
		if _, err := b.db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("mariadb: fragment account %s (setup needs CREATE USER): %w", user, err)
		}
	}
	if _, err := b.db.ExecContext(ctx, `REPLACE INTO quarry_fragment_account (name, password) VALUES (?, ?)`, user, password); err != nil {
		return fmt.Errorf("mariadb: fragment account: %w", err)
	}
	rows, err := b.db.QueryContext(ctx, `SELECT name FROM quarry_collections`)
	if err != nil {
		return fmt.Errorf("mariadb: fragment account: %w", err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return fmt.Errorf("mariadb: fragment account: %w", err)
		}
		names = append(names, n)
	}
	rows.Close()
	for _, n := range names {
		if err := b.grantFragment(ctx, n); err != nil {
			return err
		}
	}
	return b.openFence(ctx)
}

// grantFragment lets the fragment account read one collection's tables.
func (b *Backend) grantFragment(ctx context.Context, coll string) error {
	var database string
	if err := b.db.QueryRowContext(ctx, `SELECT DATABASE()`).Scan(&database); err != nil {
		return fmt.Errorf("mariadb: fragment account: %w", err)
	}
	user := fragmentUser(database)
	for _, t := range []string{table(coll), postings(coll)} {
		if _, err := b.db.ExecContext(ctx, `GRANT SELECT ON `+t+` TO '`+user+`'@'%'`); err != nil {
			return fmt.Errorf("mariadb: let the fragment account read %s: %w", t, err)
		}
	}
	return nil
}

// openFence readies connections as the recorded fragment account; without
// one (a store set up before it, or by a user who may not create users)
// raw fragments are refused. The connections are made on first use: the
// account may enter the database only once it may read a collection.
func (b *Backend) openFence(ctx context.Context) error {
	var user, password string
	err := b.db.QueryRowContext(ctx, `SELECT name, password FROM quarry_fragment_account LIMIT 1`).Scan(&user, &password)
	if err != nil {
		return nil // no account: fragments are refused (errNoFence)
	}
	c, err := mysql.ParseDSN(b.dsn)
	if err != nil {
		return fmt.Errorf("mariadb: %w", err)
	}
	c.User, c.Passwd = user, password
	db, err := sql.Open("mysql", c.FormatDSN())
	if err != nil {
		return fmt.Errorf("mariadb: %w", err)
	}
	db.SetMaxOpenConns(fragmentConns)
	db.SetConnMaxIdleTime(time.Minute)
	b.mu.Lock()
	old := b.fence
	b.fence = db
	b.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return nil
}

// fenced runs fn on a fragment connection, in a read-only transaction that
// is rolled back.
func (b *Backend) fenced(ctx context.Context, fn func(q querier) error) error {
	b.mu.Lock()
	db := b.fence
	b.mu.Unlock()
	if db == nil {
		return errNoFence
	}
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("mariadb: begin a fenced read: %w", err)
	}
	defer tx.Rollback()
	return fencedError(fn(tx))
}

// querier is what a pool and a transaction both offer.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// fenceStatement is the prefix that bounds a fenced statement's time.
var fenceStatement = fmt.Sprintf("SET STATEMENT max_statement_time = %g FOR ", FragmentTimeout.Seconds())

// MariaDB's error numbers for a statement stopped by max_statement_time
// and for a command the account may not run.
const (
	errStatementTime = 1969
	errDenied        = 1142 // a table the account may not read
	errDBDenied      = 1044 // the account may enter the database only once it may read a collection
	errUserDenied    = 1045 // the account was re-keyed or dropped by another setup
	errLockWait      = 1205
	errDeadlock      = 1213
)

// fencedError names a fenced statement's timeout, and a fragment that
// reached past what the account may read, as requests that must change.
func fencedError(err error) error {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case errStatementTime:
			return fmt.Errorf("%w: the raw fragment took longer than %s", store.ErrInvalidRequest, FragmentTimeout)
		case errDenied, errDBDenied, errUserDenied:
			if me.Number != errDenied || strings.Contains(me.Message, "quarry_c_") || strings.Contains(me.Message, "quarry_p_") {
				return errNoFence // the account is gone, or was not granted this collection
			}
			return fmt.Errorf("%w: the raw fragment reached outside the collection", store.ErrInvalidRequest)
		case errLockWait, errDeadlock:
			return err
		}
		// Anything else the server refused in the statement is the
		// fragment's doing; its text can hold another row's values.
		return fmt.Errorf("%w: the raw fragment failed in the database (error %d): check its types and values", store.ErrInvalidRequest, me.Number)
	}
	return err
}

// maxDeleteKeys bounds the keys a fenced delete names in one statement.
const maxDeleteKeys = 10000

// fencedSelection turns a delete's clause with raw fragments into one
// Quarry compiles itself: the rows the fragment selects, read under the
// fence, by their keys, with the rest of the filter tested again when they
// are deleted. No rows give an empty clause.
func (b *Backend) fencedSelection(ctx context.Context, coll string, f filter.Expr, where compiled) (compiled, error) {
	var pks []any
	err := b.fenced(ctx, func(db querier) error {
		rows, err := db.QueryContext(ctx, fenceStatement+`SELECT pk FROM `+table(coll)+where.sql+` LIMIT `+strconv.Itoa(maxDeleteKeys+1), where.args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var pk int64
			if err := rows.Scan(&pk); err != nil {
				return err
			}
			pks = append(pks, pk)
		}
		return rows.Err()
	})
	if err != nil {
		return compiled{}, fmt.Errorf("mariadb: delete from %q: %w", coll, err)
	}
	if len(pks) > maxDeleteKeys {
		return compiled{}, fmt.Errorf("%w: a delete with a raw fragment selects over %d documents; narrow it, or delete in parts", store.ErrInvalidRequest, maxDeleteKeys)
	}
	if len(pks) == 0 {
		return compiled{}, nil
	}
	safe, err := compileWhere(sqlexpr.WithoutRaw(f))
	if err != nil {
		return compiled{}, err
	}
	join := " WHERE "
	if safe.sql != "" {
		join = " AND "
	}
	return compiled{sql: safe.sql + join + "pk IN (" + placeholders(len(pks)) + ")", args: append(safe.args, pks...)}, nil
}
