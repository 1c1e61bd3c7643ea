package embedded

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quarry-rag/quarry/store"
)

// AppendTurns implements store.ThreadStore. The single writer connection
// serialises appends, so sequence numbers never collide.
func (b *Backend) AppendTurns(ctx context.Context, thread string, turns []store.Turn) (err error) {
	if err := store.CheckThreadID(thread); err != nil {
		return err
	}
	if len(turns) == 0 {
		return nil
	}
	tx, err := b.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("thread %s: %w", thread, err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, tx.Rollback())
		}
	}()
	var last int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM threads WHERE thread = ?`, thread).Scan(&last); err != nil {
		return fmt.Errorf("thread %s: %w", thread, err)
	}
	for i, t := range turns {
		var data any
		if t.Data != nil {
			data = []byte(t.Data)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO threads(thread, seq, role, content, data, created) VALUES (?, ?, ?, ?, ?, ?)`,
			thread, last+i+1, t.Role, t.Content, data, t.Created.UnixNano()); err != nil {
			return fmt.Errorf("thread %s: append: %w", thread, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("thread %s: commit: %w", thread, err)
	}
	return nil
}

// Turns implements store.ThreadStore.
func (b *Backend) Turns(ctx context.Context, thread string, limit int) ([]store.Turn, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := b.r.QueryContext(ctx, `SELECT seq, role, content, data, created FROM
		(SELECT * FROM threads WHERE thread = ? ORDER BY seq DESC LIMIT ?) ORDER BY seq`, thread, limit)
	if err != nil {
		return nil, fmt.Errorf("thread %s: %w", thread, err)
	}
	defer rows.Close()
	var out []store.Turn
	for rows.Next() {
		var (
			t       store.Turn
			data    []byte
			created int64
		)
		if err := rows.Scan(&t.Seq, &t.Role, &t.Content, &data, &created); err != nil {
			return nil, fmt.Errorf("thread %s: %w", thread, err)
		}
		if data != nil {
			t.Data = data
		}
		t.Created = time.Unix(0, created).UTC()
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("thread %s: %w", thread, err)
	}
	if len(out) == 0 {
		return nil, store.ErrThreadNotFound
	}
	return out, nil
}

// DeleteThread implements store.ThreadStore.
func (b *Backend) DeleteThread(ctx context.Context, thread string) error {
	if _, err := b.w.ExecContext(ctx, `DELETE FROM threads WHERE thread = ?`, thread); err != nil {
		return fmt.Errorf("delete thread %s: %w", thread, err)
	}
	return nil
}

// ThreadIDs implements store.ThreadStore.
func (b *Backend) ThreadIDs(ctx context.Context) ([]string, error) {
	rows, err := b.r.QueryContext(ctx, `SELECT DISTINCT thread FROM threads ORDER BY thread`)
	if err != nil {
		return nil, fmt.Errorf("list threads: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("list threads: %w", err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list threads: %w", err)
	}
	return out, nil
}

var _ store.ThreadStore = (*Backend)(nil)
