package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store/internal/sqlexpr"
)

const docColumns = `id, content, source_type, source_name, metadata::text, embedding, provenance::text`

// docRow is one row as scanned, before decoding.
type docRow struct {
	id, content, sourceType, sourceName, metadata, provenance string
	embedding                                                 pgvector.Vector
	score                                                     float64
}

// dest returns scan destinations for docColumns, plus the score when scored.
func (r *docRow) dest(scored bool) []any {
	d := []any{&r.id, &r.content, &r.sourceType, &r.sourceName, &r.metadata, &r.embedding, &r.provenance}
	if scored {
		d = append(d, &r.score)
	}
	return d
}

func (r *docRow) document() (*document.Document, error) {
	d := &document.Document{ID: r.id, Content: r.content, SourceType: r.sourceType, SourceName: r.sourceName}
	v, err := document.DecodeJSONValue([]byte(r.metadata))
	if err != nil {
		return nil, fmt.Errorf("document %s: metadata: %w", d.ID, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("document %s: stored metadata is not an object", d.ID)
	}
	for k := range m {
		if document.IsReserved(k) {
			return nil, fmt.Errorf("document %s: stored metadata field %q is reserved by Quarry: the row is corrupt", d.ID, k)
		}
	}
	d.Metadata = m
	if err := json.Unmarshal([]byte(r.provenance), &d.Provenance); err != nil {
		return nil, fmt.Errorf("document %s: provenance: %w", d.ID, err)
	}
	d.Embedding = r.embedding.Slice()
	return d, nil
}

// Get implements store.Backend.
func (b *Backend) Get(ctx context.Context, name string, ids []string) ([]*document.Document, error) {
	ci, err := b.info(ctx, name)
	if err != nil {
		return nil, err
	}
	rows, err := b.db.Query(ctx, `SELECT `+docColumns+` FROM quarry_documents WHERE collection_id = $1 AND id = ANY($2)`, ci.id, ids)
	if err != nil {
		return nil, fmt.Errorf("read documents: %w", err)
	}
	defer rows.Close()
	byID := map[string]*document.Document{}
	for rows.Next() {
		var r docRow
		if err := rows.Scan(r.dest(false)...); err != nil {
			return nil, fmt.Errorf("read documents: %w", err)
		}
		d, err := r.document()
		if err != nil {
			return nil, err
		}
		byID[d.ID] = d
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read documents: %w", err)
	}
	out := make([]*document.Document, 0, len(byID))
	for _, id := range ids {
		if d, ok := byID[id]; ok {
			out = append(out, d)
			delete(byID, id)
		}
	}
	return out, nil
}

// where builds the WHERE clause of a collection and a filter. It always
// starts with "collection_id = N", the filter following after " AND ":
// bm25CTE relies on that shape. A filter with raw fragments is guarded
// (sqlexpr.Guarded) and marked to run fenced (Backend.read).
func where(cid int, f filter.Expr, argBase int) (clause, error) {
	lead := "collection_id = " + strconv.Itoa(cid) // inlined so partial indexes apply
	w := clause{sql: lead, cid: cid, f: f}
	if f == nil {
		return w, nil
	}
	if sqlexpr.HasRaw(f) {
		c, err := compileGuarded(f, lead, argBase)
		if err != nil {
			return clause{}, err
		}
		w.sql, w.args, w.fenced = c.sql, c.args, true
		return w, nil
	}
	c, err := compileFilter(f, argBase)
	if err != nil {
		return clause{}, err
	}
	w.sql, w.args = lead+" AND "+c.sql, c.args
	return w, nil
}

// Delete implements store.Backend. A filter with raw fragments selects
// the rows to delete under the fence, in a savepoint that is rolled back;
// they are then deleted by id, the rest of the filter tested again, as
// Quarry's own role.
func (b *Backend) Delete(ctx context.Context, name string, f filter.Expr) (int, error) {
	ci, err := b.info(ctx, name)
	if err != nil {
		return 0, err
	}
	w, err := where(ci.id, f, 0)
	if err != nil {
		return 0, err
	}
	if w.fenced {
		return b.deleteFenced(ctx, ci.id, w)
	}
	var n int
	err = pgx.BeginFunc(ctx, b.db, func(tx pgx.Tx) error {
		var err error
		n, err = deleteWhere(ctx, tx, ci.id, w.sql, w.args)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// deleteWhere deletes the rows under w and forgets their sources' hashes.
func deleteWhere(ctx context.Context, tx pgx.Tx, cid int, w string, args []any) (int, error) {
	// A source that loses chunks no longer matches its recorded hash.
	if _, err := tx.Exec(ctx, `DELETE FROM quarry_sources s USING (SELECT DISTINCT source_type, source_name FROM quarry_documents WHERE `+w+`) d
		WHERE s.collection_id = `+strconv.Itoa(cid)+` AND s.source_type = d.source_type AND s.source_name = d.source_name`, args...); err != nil {
		return 0, fmt.Errorf("forget sources: %w", err)
	}
	tag, err := tx.Exec(ctx, `DELETE FROM quarry_documents WHERE `+w, args...)
	if err != nil {
		return 0, fmt.Errorf("delete documents: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

func (b *Backend) deleteFenced(ctx context.Context, cid int, w clause) (int, error) {
	if !b.fence {
		return 0, errNoFence
	}
	release, err := b.acquireFence(ctx)
	if err != nil {
		return 0, err
	}
	defer release()
	safe, err := where(cid, sqlexpr.WithoutRaw(w.f), 1)
	if err != nil {
		return 0, err
	}
	var n int
	err = pgx.BeginFunc(ctx, b.db, func(tx pgx.Tx) error {
		sp, err := tx.Begin(ctx)
		if err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		if err := enterFence(ctx, sp, w); err != nil {
			_ = sp.Rollback(ctx)
			return err
		}
		rows, err := sp.Query(ctx, `SELECT id FROM quarry_documents WHERE `+w.sql, w.args...)
		var ids []string
		if err == nil {
			ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
		}
		// Whatever the fragment did goes with the savepoint, the role
		// switch and timeout with it.
		if rerr := sp.Rollback(ctx); err == nil && rerr != nil {
			err = fmt.Errorf("leave the fence: %w", rerr)
		}
		if err != nil {
			return fencedError(err)
		}
		if len(ids) == 0 {
			return nil
		}
		n, err = deleteWhere(ctx, tx, cid, safe.sql+" AND id = ANY($1)", append([]any{ids}, safe.args...))
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// Count implements store.Backend.
func (b *Backend) Count(ctx context.Context, name string, f filter.Expr) (int, error) {
	ci, err := b.info(ctx, name)
	if err != nil {
		return 0, err
	}
	w, err := where(ci.id, f, 0)
	if err != nil {
		return 0, err
	}
	var n int
	if !w.fenced {
		if err := b.db.QueryRow(ctx, `SELECT count(*) FROM quarry_documents WHERE `+w.sql, w.args...).Scan(&n); err != nil {
			return 0, fmt.Errorf("count documents: %w", err)
		}
		return n, nil
	}
	err = b.read(ctx, w, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT count(*) FROM quarry_documents WHERE `+w.sql, w.args...).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("count documents: %w", err)
	}
	return n, nil
}

// Scan implements store.Scanner.
func (b *Backend) Scan(ctx context.Context, name string, after string, limit int) ([]*document.Document, error) {
	ci, err := b.info(ctx, name)
	if err != nil {
		return nil, err
	}
	rows, err := b.db.Query(ctx, `SELECT `+docColumns+` FROM quarry_documents WHERE collection_id = $1 AND id > $2 ORDER BY id COLLATE "C" LIMIT $3`, ci.id, after, limit)
	if err != nil {
		return nil, fmt.Errorf("scan documents: %w", err)
	}
	defer rows.Close()
	var out []*document.Document
	for rows.Next() {
		var r docRow
		if err := rows.Scan(r.dest(false)...); err != nil {
			return nil, fmt.Errorf("scan documents: %w", err)
		}
		d, err := r.document()
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}
