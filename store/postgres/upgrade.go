package postgres

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// v1Tables are the tables of schema version 1, the layout before
// quarry_meta recorded a version: a store holding only some of them is
// partial, and is refused.
var v1Tables = []string{"quarry_collections", "quarry_documents", "quarry_sources", "quarry_embedding_cache", "quarry_jobs", "quarry_threads"}

// v1DocumentColumns are quarry_documents' columns in version 1: today's
// without search_id, which pg_search's BM25 index keys on.
func v1DocumentColumns() map[string]string {
	cols := maps.Clone(documentColumns)
	delete(cols, "search_id")
	return cols
}

// Upgrade brings the quarry_* tables an older Quarry set up to this
// Quarry's layout (SchemaVersion), in place, in one transaction that
// holds the documents table exclusively; it returns the version the store
// had. A store already at this version is left unchanged, and tables that
// are partial or not Quarry's are refused before anything changes.
func Upgrade(ctx context.Context, url string) (int, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return 0, fmt.Errorf("postgres: %w", err)
	}
	defer pool.Close()
	return upgrade(ctx, pool)
}

// UpgradeTx upgrades inside a caller's transaction, as a savepoint: the
// caller's commit decides.
func UpgradeTx(ctx context.Context, tx pgx.Tx) (int, error) { return upgrade(ctx, tx) }

func upgrade(ctx context.Context, db conn) (from int, err error) {
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7412031)`); err != nil {
			return err
		}
		if from, err = storedVersion(ctx, tx); err != nil || from == SchemaVersion {
			return err
		}
		if from != 1 {
			return fmt.Errorf("postgres: schema version %d has no upgrade to %d", from, SchemaVersion)
		}
		if err := checkV1(ctx, tx); err != nil {
			return err
		}
		for _, stmt := range []string{
			`LOCK TABLE quarry_documents IN ACCESS EXCLUSIVE MODE`,
			`ALTER TABLE quarry_documents ADD COLUMN search_id bigint GENERATED ALWAYS AS IDENTITY UNIQUE`,
			setupSQL + hierarchySQL + settingsSQL, // the tables version 1 lacked, and its version
			`ALTER TABLE quarry_sources ADD COLUMN IF NOT EXISTS origin text NOT NULL DEFAULT ''`,
		} {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("postgres: upgrade from version 1: %w", err)
			}
		}
		return checkColumns(ctx, tx)
	})
	return from, err
}

// storedVersion is the layout the tables have: quarry_meta's version, or
// 1 for Quarry's tables from before it recorded one.
func storedVersion(ctx context.Context, tx pgx.Tx) (int, error) {
	var meta, docs bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass('quarry_meta') IS NOT NULL, to_regclass('quarry_documents') IS NOT NULL`).Scan(&meta, &docs); err != nil {
		return 0, fmt.Errorf("postgres: %w", err)
	}
	if !meta {
		if !docs {
			return 0, errors.New("postgres: no Quarry store here to upgrade: `quarry setup --store URL` creates one")
		}
		return 1, nil
	}
	var v string
	if err := tx.QueryRow(ctx, `SELECT value FROM quarry_meta WHERE key = 'schema_version'`).Scan(&v); err != nil {
		return 0, fmt.Errorf("postgres: quarry_meta has no schema version: these tables are not Quarry's: %w", err)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("postgres: schema version %q is not a number: the quarry_* tables are not Quarry's", v)
	}
	return n, nil
}

// checkV1 refuses a version 1 store that is partial (a table missing) or
// whose documents table is not Quarry's.
func checkV1(ctx context.Context, tx pgx.Tx) error {
	var missing []string
	if err := tx.QueryRow(ctx, `SELECT coalesce(array_agg(t), '{}') FROM unnest($1::text[]) t WHERE to_regclass(t) IS NULL`, v1Tables).Scan(&missing); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	if len(missing) > 0 {
		return fmt.Errorf("postgres: the store is partial (it has no %v): not upgraded; copy what it holds with quarry migrate into a new schema", missing)
	}
	got, err := documentTableColumns(ctx, tx)
	if err != nil {
		return err
	}
	if want := v1DocumentColumns(); !maps.Equal(got, want) {
		return fmt.Errorf("postgres: table quarry_documents is not a Quarry table of version 1 (columns %v, want %v): not upgraded", got, want)
	}
	return nil
}
