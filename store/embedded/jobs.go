package embedded

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/quarry-rag/quarry/store"
)

// PutJob implements store.JobStore.
func (b *Backend) PutJob(ctx context.Context, j store.Job) error {
	raw, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("encode job: %w", err)
	}
	_, err = b.w.ExecContext(ctx, `INSERT INTO jobs(id, started, body) VALUES (?, ?, ?)
		ON CONFLICT(id) DO UPDATE SET body = excluded.body`, j.ID, j.Started.UnixNano(), string(raw))
	if err != nil {
		return fmt.Errorf("record job %s: %w", j.ID, err)
	}
	return nil
}

// GetJob implements store.JobStore.
func (b *Backend) GetJob(ctx context.Context, id string) (store.Job, error) {
	var raw string
	err := b.r.QueryRowContext(ctx, `SELECT body FROM jobs WHERE id = ?`, id).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
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
	rows, err := b.r.QueryContext(ctx, `SELECT body FROM jobs ORDER BY started DESC, id DESC LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	defer rows.Close()
	var out []store.Job
	for rows.Next() {
		var raw string
		if err := rows.Scan(&raw); err != nil {
			return nil, fmt.Errorf("list jobs: %w", err)
		}
		var j store.Job
		if err := json.Unmarshal([]byte(raw), &j); err != nil {
			return nil, fmt.Errorf("a job record is corrupt: %w", err)
		}
		out = append(out, j)
	}
	return out, rows.Err()
}
