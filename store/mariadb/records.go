package mariadb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/store"
)

const recordsSQL = `CREATE TABLE IF NOT EXISTS quarry_jobs (
	id      VARBINARY(255) NOT NULL PRIMARY KEY,
	started DATETIME(6) NOT NULL,
	body    LONGTEXT NOT NULL,
	KEY started (started)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE IF NOT EXISTS quarry_settings (
	collection VARBINARY(64) NOT NULL,
	name       VARBINARY(255) NOT NULL,
	value      LONGTEXT NOT NULL,
	PRIMARY KEY (collection, name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`

// PutJob implements store.JobStore.
func (b *Backend) PutJob(ctx context.Context, j store.Job) error {
	raw, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("mariadb: encode job: %w", err)
	}
	if _, err := b.db.ExecContext(ctx, `INSERT INTO quarry_jobs (id, started, body) VALUES (?, ?, ?)
	ON DUPLICATE KEY UPDATE body = VALUES(body)`, j.ID, j.Started.UTC(), string(raw)); err != nil {
		return fmt.Errorf("mariadb: record job %s: %w", j.ID, err)
	}
	return nil
}

// GetJob implements store.JobStore.
func (b *Backend) GetJob(ctx context.Context, id string) (store.Job, error) {
	var raw string
	err := b.db.QueryRowContext(ctx, `SELECT body FROM quarry_jobs WHERE id = ?`, id).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Job{}, store.ErrJobNotFound
	}
	if err != nil {
		return store.Job{}, fmt.Errorf("mariadb: read job %s: %w", id, err)
	}
	var j store.Job
	if err := json.Unmarshal([]byte(raw), &j); err != nil {
		return store.Job{}, fmt.Errorf("mariadb: job %s is corrupt: %w", id, err)
	}
	return j, nil
}

// ListJobs implements store.JobStore.
func (b *Backend) ListJobs(ctx context.Context, limit int) ([]store.Job, error) {
	rows, err := b.db.QueryContext(ctx, `SELECT body FROM quarry_jobs ORDER BY started DESC, id DESC LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("mariadb: list jobs: %w", err)
	}
	defer rows.Close()
	var out []store.Job
	for rows.Next() {
		var raw string
		if err := rows.Scan(&raw); err != nil {
			return nil, fmt.Errorf("mariadb: list jobs: %w", err)
		}
		var j store.Job
		if err := json.Unmarshal([]byte(raw), &j); err != nil {
			return nil, fmt.Errorf("mariadb: a job record is corrupt: %w", err)
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// Setting implements store.SettingsKeeper.
func (b *Backend) Setting(ctx context.Context, coll, key string) (json.RawMessage, error) {
	if _, err := b.info(ctx, coll); err != nil {
		return nil, err
	}
	var raw string
	err := b.db.QueryRowContext(ctx, `SELECT value FROM quarry_settings WHERE collection = ? AND name = ?`, coll, key).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mariadb: setting %s of %q: %w", key, coll, err)
	}
	return json.RawMessage(raw), nil
}

// PutSetting implements store.SettingsKeeper.
func (b *Backend) PutSetting(ctx context.Context, coll, key string, value json.RawMessage) error {
	if _, err := b.info(ctx, coll); err != nil {
		return err
	}
	var err error
	if value == nil {
		_, err = b.db.ExecContext(ctx, `DELETE FROM quarry_settings WHERE collection = ? AND name = ?`, coll, key)
	} else {
		_, err = b.db.ExecContext(ctx, `REPLACE INTO quarry_settings (collection, name, value) VALUES (?, ?, ?)`, coll, key, string(value))
	}
	if err != nil {
		return fmt.Errorf("mariadb: setting %s of %q: %w", key, coll, err)
	}
	return nil
}

// Settings implements store.SettingsKeeper.
func (b *Backend) Settings(ctx context.Context, coll string) (map[string]json.RawMessage, error) {
	if _, err := b.info(ctx, coll); err != nil {
		return nil, err
	}
	rows, err := b.db.QueryContext(ctx, `SELECT name, value FROM quarry_settings WHERE collection = ?`, coll)
	if err != nil {
		return nil, fmt.Errorf("mariadb: settings of %q: %w", coll, err)
	}
	defer rows.Close()
	out := map[string]json.RawMessage{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("mariadb: settings of %q: %w", coll, err)
		}
		out[k] = json.RawMessage(v)
	}
	return out, rows.Err()
}

// Scan implements store.Scanner.
func (b *Backend) Scan(ctx context.Context, coll string, after string, limit int) ([]*document.Document, error) {
	ci, err := b.info(ctx, coll)
	if err != nil {
		return nil, err
	}
	return b.query(ctx, false, `SELECT `+columns(true)+` FROM `+table(ci.cfg.Name)+` WHERE id > ? ORDER BY id LIMIT ?`, after, limit)
}
