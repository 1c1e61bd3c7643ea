package mariadb

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/quarry-rag/quarry/store"
)

const threadsSQL = `CREATE TABLE IF NOT EXISTS quarry_threads (
	thread  VARBINARY(255) NOT NULL,
	seq     INT NOT NULL,
	role    VARBINARY(32) NOT NULL,
	content LONGTEXT NOT NULL,
	data    LONGTEXT NULL,
	created DATETIME(6) NOT NULL,
	PRIMARY KEY (thread, seq)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`

// AppendTurns implements store.ThreadStore. Two writers that pick the same
// sequence number collide on the primary key; the later one's transaction
// is rolled back and runs again after the other's turns.
func (b *Backend) AppendTurns(ctx context.Context, thread string, turns []store.Turn) error {
	if err := store.CheckThreadID(thread); err != nil {
		return err
	}
	if len(turns) == 0 {
		return nil
	}
	err := b.inTx(ctx, func(tx *sql.Tx) error {
		var last int
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM quarry_threads WHERE thread = ? FOR UPDATE`, thread).Scan(&last); err != nil {
			return err
		}
		for i, t := range turns {
			var data any
			if t.Data != nil {
				data = string(t.Data)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO quarry_threads (thread, seq, role, content, data, created) VALUES (?, ?, ?, ?, ?, ?)`,
				thread, last+i+1, t.Role, t.Content, data, t.Created.UTC()); err != nil {
				return err
			}
		}
		return nil
	}, duplicate)
	if err != nil {
		return fmt.Errorf("mariadb: thread %s: append: %w", thread, err)
	}
	return nil
}

// Turns implements store.ThreadStore.
func (b *Backend) Turns(ctx context.Context, thread string, limit int) ([]store.Turn, error) {
	lim := int64(1) << 62
	if limit > 0 {
		lim = int64(limit)
	}
	rows, err := b.db.QueryContext(ctx, `SELECT seq, role, content, data, created FROM
	(SELECT * FROM quarry_threads WHERE thread = ? ORDER BY seq DESC LIMIT ?) t ORDER BY seq`, thread, lim)
	if err != nil {
		return nil, fmt.Errorf("mariadb: thread %s: %w", thread, err)
	}
	defer rows.Close()
	var out []store.Turn
	for rows.Next() {
		var (
			t    store.Turn
			data sql.NullString
		)
		if err := rows.Scan(&t.Seq, &t.Role, &t.Content, &data, &t.Created); err != nil {
			return nil, fmt.Errorf("mariadb: thread %s: %w", thread, err)
		}
		if data.Valid {
			t.Data = []byte(data.String)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("mariadb: thread %s: %w", thread, err)
	}
	if len(out) == 0 {
		return nil, store.ErrThreadNotFound
	}
	return out, nil
}

// DeleteThread implements store.ThreadStore.
func (b *Backend) DeleteThread(ctx context.Context, thread string) error {
	if _, err := b.db.ExecContext(ctx, `DELETE FROM quarry_threads WHERE thread = ?`, thread); err != nil {
		return fmt.Errorf("mariadb: delete thread %s: %w", thread, err)
	}
	return nil
}

// ThreadIDs implements store.ThreadStore.
func (b *Backend) ThreadIDs(ctx context.Context) ([]string, error) {
	rows, err := b.db.QueryContext(ctx, `SELECT DISTINCT thread FROM quarry_threads ORDER BY thread`)
	if err != nil {
		return nil, fmt.Errorf("mariadb: threads: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("mariadb: threads: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}
