package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/quarry-rag/quarry/store"
)

// AppendTurns implements store.ThreadStore. A transaction-scoped advisory
// lock on the thread serialises concurrent appends, so two writers never
// pick the same sequence number.
func (b *Backend) AppendTurns(ctx context.Context, thread string, turns []store.Turn) error {
	if err := store.CheckThreadID(thread); err != nil {
		return err
	}
	if len(turns) == 0 {
		return nil
	}
	err := pgx.BeginFunc(ctx, b.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7412032, hashtext($1))`, thread); err != nil {
			return err
		}
		var last int
		if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(seq), 0) FROM quarry_threads WHERE thread = $1`, thread).Scan(&last); err != nil {
			return err
		}
		batch := &pgx.Batch{}
		for i, t := range turns {
			var data *string
			if t.Data != nil {
				s := string(t.Data)
				data = &s
			}
			batch.Queue(`INSERT INTO quarry_threads(thread, seq, role, content, data, created) VALUES ($1, $2, $3, $4, $5, $6)`,
				thread, last+i+1, t.Role, t.Content, data, t.Created)
		}
		return tx.SendBatch(ctx, batch).Close()
	})
	if err != nil {
		return fmt.Errorf("thread %s: append: %w", thread, err)
	}
	return nil
}

// Turns implements store.ThreadStore.
func (b *Backend) Turns(ctx context.Context, thread string, limit int) ([]store.Turn, error) {
	var lim any // NULL: no limit
	if limit > 0 {
		lim = limit
	}
	rows, err := b.db.Query(ctx, `SELECT seq, role, content, data, created FROM
		(SELECT * FROM quarry_threads WHERE thread = $1 ORDER BY seq DESC LIMIT $2) t ORDER BY seq`, thread, lim)
	if err != nil {
		return nil, fmt.Errorf("thread %s: %w", thread, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Turn, error) {
		var (
			t    store.Turn
			data *string
		)
		if err := r.Scan(&t.Seq, &t.Role, &t.Content, &data, &t.Created); err != nil {
			return t, err
		}
		if data != nil {
			t.Data = []byte(*data)
		}
		return t, nil
	})
	if err != nil {
		return nil, fmt.Errorf("thread %s: %w", thread, err)
	}
	if len(out) == 0 {
		return nil, store.ErrThreadNotFound
	}
	return out, nil
}

// DeleteThread implements store.ThreadStore.
func (b *Backend) DeleteThread(ctx context.Context, thread string) error {
	if _, err := b.db.Exec(ctx, `DELETE FROM quarry_threads WHERE thread = $1`, thread); err != nil {
		return fmt.Errorf("delete thread %s: %w", thread, err)
	}
	return nil
}

// ThreadIDs implements store.ThreadStore.
func (b *Backend) ThreadIDs(ctx context.Context) ([]string, error) {
	rows, err := b.db.Query(ctx, `SELECT DISTINCT thread FROM quarry_threads ORDER BY thread`)
	if err != nil {
		return nil, fmt.Errorf("list threads: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list threads: %w", err)
	}
	return out, nil
}

var _ store.ThreadStore = (*Backend)(nil)
