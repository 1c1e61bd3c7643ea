package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/quarry-rag/quarry/store"
)

// PutJob implements store.JobStore.
func (b *Backend) PutJob(ctx context.Context, j store.Job) error {
	raw, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("encode job: %w", err)
	}
	if _, err := b.db.Exec(ctx, `INSERT INTO quarry_jobs(id, started, body) VALUES ($1, $2, $3::text::jsonb)
		ON CONFLICT (id) DO UPDATE SET body = excluded.body`, j.ID, j.Started, string(raw)); err != nil {
		return fmt.Errorf("record job %s: %w", j.ID, err)
	}
	return nil
}

// GetJob implements store.JobStore.
func (b *Backend) GetJob(ctx context.Context, id string) (store.Job, error) {
	var raw string
	err := b.db.QueryRow(ctx, `SELECT body::text FROM quarry_jobs WHERE id = $1`, id).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Job{}, store.ErrJobNotFound
	}
	if err != nil {
		return store.Job{}, fmt.Errorf("read job %s: %w", id, err)
	}
	var j store.Job
	if err := json.Unmarshal([]byte(raw), &j); err != nil {
		return store.Job{}, fmt.Errorf("job %s is corrupt: %w", id, err)
	}
	return j, nil
}

// ListJobs implements store.JobStore.
func (b *Backend) ListJobs(ctx context.Context, limit int) ([]store.Job, error) {
	rows, err := b.db.Query(ctx, `SELECT body::text FROM quarry_jobs ORDER BY started DESC, id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	var out []store.Job
	var raw string
	_, err = pgx.ForEachRow(rows, []any{&raw}, func() error {
		var j store.Job
		if err := json.Unmarshal([]byte(raw), &j); err != nil {
			return fmt.Errorf("a job record is corrupt: %w", err)
		}
		out = append(out, j)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return out, nil
}
