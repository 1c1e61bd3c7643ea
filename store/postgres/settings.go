package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/quarry-rag/quarry/store"
)

// settingsSQL keeps store.SettingsKeeper values; dropping a collection
// drops them with it. It is part of setup, and is run again on the first
// write to a store set up before it existed.
const settingsSQL = `
CREATE TABLE IF NOT EXISTS quarry_collection_settings (
	collection_id integer NOT NULL REFERENCES quarry_collections(id) ON DELETE CASCADE,
	key           text NOT NULL,
	value         jsonb NOT NULL,
	PRIMARY KEY (collection_id, key)
);
`

// undefinedTable is PostgreSQL's SQLSTATE for a missing relation.
const undefinedTable = "42P01"

func isUndefinedTable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == undefinedTable
}

// Setting implements store.SettingsKeeper. A store set up before settings
// existed has none. Searches read it, so it is one statement; bound to a
// caller's transaction it runs under a savepoint, so a missing table does
// not abort that transaction.
func (b *Backend) Setting(ctx context.Context, coll, key string) (json.RawMessage, error) {
	var v []byte
	read := func(q interface {
		QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	}) error {
		return q.QueryRow(ctx, `SELECT s.value::text FROM quarry_collections c
			LEFT JOIN quarry_collection_settings s ON s.collection_id = c.id AND s.key = $2
			WHERE c.name = $1`, coll, key).Scan(&v)
	}
	var err error
	if b.pool != nil {
		err = read(b.db)
	} else {
		err = pgx.BeginFunc(ctx, b.db, func(tx pgx.Tx) error { return read(tx) })
	}
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, store.ErrCollectionNotFound
	case isUndefinedTable(err):
		// A store set up before settings: the collection must still exist.
		_, err = b.hierCollectionID(ctx, b.db, coll)
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("read setting: %w", err)
	case v == nil:
		return nil, nil
	}
	return json.RawMessage(v), nil
}

// PutSetting implements store.SettingsKeeper. Each attempt runs in its
// own transaction (a savepoint inside a caller's), so a store that lacks
// the table can still add it after the first attempt failed.
func (b *Backend) PutSetting(ctx context.Context, coll, key string, value json.RawMessage) error {
	put := func(tx pgx.Tx) error {
		cid, err := b.hierCollectionID(ctx, tx, coll)
		if err != nil {
			return err
		}
		if value == nil {
			_, err = tx.Exec(ctx, `DELETE FROM quarry_collection_settings WHERE collection_id = $1 AND key = $2`, cid, key)
		} else {
			_, err = tx.Exec(ctx, `INSERT INTO quarry_collection_settings(collection_id, key, value) VALUES ($1, $2, $3::jsonb)
				ON CONFLICT (collection_id, key) DO UPDATE SET value = excluded.value`, cid, key, string(value))
		}
		return err
	}
	err := pgx.BeginFunc(ctx, b.db, put)
	if isUndefinedTable(err) {
		if _, cerr := b.db.Exec(ctx, settingsSQL); cerr != nil {
			return fmt.Errorf("write setting: the store predates collection settings and this role may not add their table (run `quarry setup` as its owner): %w", cerr)
		}
		err = pgx.BeginFunc(ctx, b.db, put)
	}
	if err != nil {
		return fmt.Errorf("write setting: %w", err)
	}
	return nil
}

// Settings implements store.SettingsKeeper. A store set up before settings
// existed has none.
func (b *Backend) Settings(ctx context.Context, coll string) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	err := pgx.BeginFunc(ctx, b.db, func(tx pgx.Tx) error {
		cid, err := b.hierCollectionID(ctx, tx, coll)
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT key, value::text FROM quarry_collection_settings WHERE collection_id = $1`, cid)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k string
			var v []byte
			if err := rows.Scan(&k, &v); err != nil {
				return err
			}
			out[k] = json.RawMessage(v)
		}
		return rows.Err()
	})
	switch {
	case isUndefinedTable(err):
		return map[string]json.RawMessage{}, nil
	case err != nil:
		return nil, fmt.Errorf("read settings: %w", err)
	}
	return out, nil
}
