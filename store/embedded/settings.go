package embedded

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// settingsDDL keeps store.SettingsKeeper values; dropping a collection
// drops them with it.
const settingsDDL = `
CREATE TABLE IF NOT EXISTS collection_settings (
	collection_id INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
	key           TEXT NOT NULL,
	value         TEXT NOT NULL,
	PRIMARY KEY (collection_id, key)
) WITHOUT ROWID;
`

// Setting implements store.SettingsKeeper.
func (b *Backend) Setting(ctx context.Context, coll, key string) (json.RawMessage, error) {
	cid, err := collectionID(ctx, b.r, coll)
	if err != nil {
		return nil, err
	}
	var v string
	err = b.r.QueryRowContext(ctx, `SELECT value FROM collection_settings WHERE collection_id = ? AND key = ?`, cid, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read setting: %w", err)
	}
	return json.RawMessage(v), nil
}

// PutSetting implements store.SettingsKeeper.
func (b *Backend) PutSetting(ctx context.Context, coll, key string, value json.RawMessage) error {
	cid, err := collectionID(ctx, b.w, coll)
	if err != nil {
		return err
	}
	if value == nil {
		_, err = b.w.ExecContext(ctx, `DELETE FROM collection_settings WHERE collection_id = ? AND key = ?`, cid, key)
	} else {
		_, err = b.w.ExecContext(ctx, `INSERT INTO collection_settings(collection_id, key, value) VALUES (?, ?, ?)
			ON CONFLICT(collection_id, key) DO UPDATE SET value = excluded.value`, cid, key, string(value))
	}
	if err != nil {
		return fmt.Errorf("write setting: %w", err)
	}
	return nil
}

// Settings implements store.SettingsKeeper.
func (b *Backend) Settings(ctx context.Context, coll string) (map[string]json.RawMessage, error) {
	cid, err := collectionID(ctx, b.r, coll)
	if err != nil {
		return nil, err
	}
	rows, err := b.r.QueryContext(ctx, `SELECT key, value FROM collection_settings WHERE collection_id = ?`, cid)
	if err != nil {
		return nil, fmt.Errorf("read settings: %w", err)
	}
	defer rows.Close()
	out := map[string]json.RawMessage{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("read settings: %w", err)
		}
		out[k] = json.RawMessage(v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read settings: %w", err)
	}
	return out, nil
}
