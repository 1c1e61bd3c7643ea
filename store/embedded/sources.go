package embedded

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/store"
)

// Sources implements store.SourceSyncer.
func (b *Backend) Sources(ctx context.Context, name string) ([]store.SourceState, error) {
	c, err := b.collection(ctx, name)
	if err != nil {
		return nil, err
	}
	rows, err := b.r.QueryContext(ctx, `SELECT source_type, source_name, hash, chunks, origin FROM sources WHERE collection_id = ? ORDER BY source_type, source_name`, c.cid)
	if err != nil {
		return nil, fmt.Errorf("read sources: %w", err)
	}
	defer rows.Close()
	var out []store.SourceState
	for rows.Next() {
		var s store.SourceState
		if err := rows.Scan(&s.Source.Type, &s.Source.Name, &s.Hash, &s.Chunks, &s.Origin); err != nil {
			return nil, fmt.Errorf("read sources: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// ReplaceSources implements store.SourceSyncer: one SQLite transaction
// deletes each source's old chunks, writes its new ones and records its
// hash; the indexes follow under the collection's lock.
func (b *Backend) ReplaceSources(ctx context.Context, name string, updates []store.SourceUpdate) error {
	c, err := b.collection(ctx, name)
	if err != nil {
		return err
	}
	type prepared struct {
		u    store.SourceUpdate
		rows []row
	}
	preps := make([]prepared, len(updates))
	for i, u := range updates {
		preps[i].u = u
		for _, d := range u.Docs {
			r, err := encodeRow(d)
			if err != nil {
				return err
			}
			preps[i].rows = append(preps[i].rows, r)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, p := range preps {
		n += len(p.rows)
	}
	if err := c.beforeWrite(ctx, n); err != nil {
		return err
	}
	var removed []string
	seq, err := b.inTx(ctx, c.cid, func(tx *sql.Tx, seq int64, w *writer) error {
		for _, p := range preps {
			old, err := sourceIDs(ctx, tx, c.cid, p.u.Source)
			if err != nil {
				return err
			}
			if err := w.delete(old); err != nil {
				return err
			}
			removed = append(removed, old...)
			if err := w.upsert(p.rows); err != nil {
				return err
			}
			if p.u.Hash == "" {
				_, err = tx.ExecContext(ctx, `DELETE FROM sources WHERE collection_id = ? AND source_type = ? AND source_name = ?`, c.cid, p.u.Source.Type, p.u.Source.Name)
			} else {
				_, err = tx.ExecContext(ctx, `INSERT INTO sources(collection_id, source_type, source_name, hash, chunks, origin) VALUES (?, ?, ?, ?, ?, ?)
					ON CONFLICT(collection_id, source_type, source_name) DO UPDATE SET hash = excluded.hash, chunks = excluded.chunks, origin = excluded.origin`,
					c.cid, p.u.Source.Type, p.u.Source.Name, p.u.Hash, len(p.u.Docs), p.u.Origin)
			}
			if err != nil {
				return fmt.Errorf("record source %s: %w", p.u.Source.Name, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return c.applied(ctx, seq, func() error {
		for _, id := range removed {
			c.remove(id)
		}
		var docs []*document.Document
		for _, p := range preps {
			for _, d := range p.u.Docs {
				docs = append(docs, d.Clone())
			}
		}
		return c.addAll(docs)
	})
}

func sourceIDs(ctx context.Context, tx *sql.Tx, cid int64, src document.Source) ([]string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id FROM documents WHERE collection_id = ? AND source_type = ? AND source_name = ?`, cid, src.Type, src.Name)
	if err != nil {
		return nil, fmt.Errorf("read chunks of %s: %w", src.Name, err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("read chunks of %s: %w", src.Name, err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
