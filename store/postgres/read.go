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
// bm25CTE relies on that shape.
func where(cid int, f filter.Expr, argBase int) (string, []any, error) {
	w := "collection_id = " + strconv.Itoa(cid) // inlined so partial indexes apply
	if f == nil {
		return w, nil, nil
	}
	c, err := compileFilter(f, argBase)
	if err != nil {
		return "", nil, err
	}
	return w + " AND " + c.sql, c.args, nil
}

// Delete implements store.Backend.
func (b *Backend) Delete(ctx context.Context, name string, f filter.Expr) (int, error) {
	ci, err := b.info(ctx, name)
	if err != nil {
		return 0, err
	}
	w, args, err := where(ci.id, f, 0)
	if err != nil {
		return 0, err
	}
	var n int
	err = pgx.BeginFunc(ctx, b.db, func(tx pgx.Tx) error {
		// A source that loses chunks no longer matches its recorded hash.
		if _, err := tx.Exec(ctx, `DELETE FROM quarry_sources s USING (SELECT DISTINCT source_type, source_name FROM quarry_documents WHERE `+w+`) d
			WHERE s.collection_id = `+strconv.Itoa(ci.id)+` AND s.source_type = d.source_type AND s.source_name = d.source_name`, args...); err != nil {
			return fmt.Errorf("forget sources: %w", err)
		}
		tag, err := tx.Exec(ctx, `DELETE FROM quarry_documents WHERE `+w, args...)
		if err != nil {
			return fmt.Errorf("delete documents: %w", err)
		}
		n = int(tag.RowsAffected())
		return nil
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
	w, args, err := where(ci.id, f, 0)
	if err != nil {
		return 0, err
	}
	var n int
	if err := b.db.QueryRow(ctx, `SELECT count(*) FROM quarry_documents WHERE `+w, args...).Scan(&n); err != nil {
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
