package mariadb

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/internal/sqlexpr"
)

// maxTerm is the longest term kept (the postings' term column); a longer
// one is kept as a prefix of its hash, on writes and queries alike.
const maxTerm = 255

func term(t string) string {
	if len(t) <= maxTerm {
		return t
	}
	sum := sha256.Sum256([]byte(t))
	return "\xff" + hex.EncodeToString(sum[:]) // 0xff never starts UTF-8
}

// analyzed is a document's keyword postings: each term's count, and the
// length BM25 divides by (terms only: code pairs add counts, not length).
type analyzed struct {
	tf  map[string]int
	len int
}

func analyze(a *bm25.Analyzer, d *document.Document) analyzed {
	text := d.Content
	if t := store.Title(d); t != "" {
		text = t + "\n" + text
	}
	terms, pairs := a.AnalyzeDocument(text, store.Code(d))
	out := analyzed{tf: make(map[string]int, len(terms)), len: len(terms)}
	for _, t := range terms {
		out.tf[term(t)]++
	}
	for _, p := range pairs {
		out.tf[term(p)]++
	}
	return out
}

// queryTerms is a query's terms with their counts, as the index scores
// them.
func queryTerms(a *bm25.Analyzer, q string) map[string]int {
	terms, pairs := a.AnalyzeQuery(q)
	out := map[string]int{}
	for _, t := range append(terms, pairs...) {
		out[term(t)]++
	}
	return out
}

// insertBatch bounds the rows of one INSERT.
const insertBatch = 200

// Upsert implements store.Writer: every document or none.
func (b *Backend) Upsert(ctx context.Context, coll string, docs []*document.Document) error {
	ci, err := b.info(ctx, coll)
	if err != nil {
		return err
	}
	return b.inTx(ctx, func(tx *sql.Tx) error { return upsert(ctx, tx, ci, docs) })
}

// inTx runs fn in a transaction, again when InnoDB chose it as a deadlock
// victim or its lock wait timed out (then it was rolled back whole), or
// when retry accepts its error.
func (b *Backend) inTx(ctx context.Context, fn func(*sql.Tx) error, retry ...func(error) bool) error {
	var err error
	for attempt := range 8 {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(attempt*attempt) * 5 * time.Millisecond):
			}
		}
		if err = b.tryTx(ctx, fn); err == nil || !(transient(err) || (len(retry) > 0 && retry[0](err))) {
			return err
		}
	}
	return err
}

func (b *Backend) tryTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("mariadb: %w", err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("mariadb: commit: %w", err)
	}
	return nil
}

// transient reports a deadlock (1213) or a lock wait timeout (1205).
func transient(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205)
}

// duplicate reports a duplicate key (1062).
func duplicate(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1062
}

func upsert(ctx context.Context, tx *sql.Tx, ci *collInfo, docs []*document.Document) error {
	for start := 0; start < len(docs); start += insertBatch {
		part := docs[start:min(start+insertBatch, len(docs))]
		ids := make([]any, len(part))
		kws := make(map[string]analyzed, len(part))
		for i, d := range part {
			ids[i] = d.ID
			kws[d.ID] = analyze(ci.analyzer, d)
		}
		// A replaced document's postings go; its row keeps its key.
		if _, err := tx.ExecContext(ctx, `DELETE p FROM `+postings(ci.cfg.Name)+` p JOIN `+table(ci.cfg.Name)+` d ON d.pk = p.pk WHERE d.id IN (`+
			placeholders(len(ids))+`)`, ids...); err != nil {
			return fmt.Errorf("mariadb: write %d documents to %q: %w", len(part), ci.cfg.Name, err)
		}
		var q strings.Builder
		q.WriteString(`INSERT INTO ` + table(ci.cfg.Name) + ` (id, content, source_type, source_name, metadata, provenance, kwlen, embedding) VALUES `)
		args := make([]any, 0, 8*len(part))
		for i, d := range part {
			if i > 0 {
				q.WriteByte(',')
			}
			q.WriteString(`(?, ?, ?, ?, ?, ?, ?, VEC_FromText(?))`)
			md := []byte("{}")
			if d.Metadata != nil {
				var err error
				if md, err = document.MarshalValue(d.Metadata); err != nil {
					return fmt.Errorf("document %s: metadata: %w", d.ID, err)
				}
			}
			prov, err := json.Marshal(d.Provenance)
			if err != nil {
				return fmt.Errorf("document %s: provenance: %w", d.ID, err)
			}
			args = append(args, d.ID, d.Content, d.SourceType, d.SourceName, string(md), string(prov), kws[d.ID].len, sqlexpr.VectorText(d.Embedding))
		}
		q.WriteString(` ON DUPLICATE KEY UPDATE content = VALUES(content), source_type = VALUES(source_type), source_name = VALUES(source_name),
	metadata = VALUES(metadata), provenance = VALUES(provenance), kwlen = VALUES(kwlen), embedding = VALUES(embedding)`)
		if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("mariadb: write %d documents to %q: %w", len(part), ci.cfg.Name, err)
		}
		if err := writePostings(ctx, tx, ci, ids, kws); err != nil {
			return err
		}
	}
	return nil
}

// postingsBatch bounds the rows of one postings INSERT.
const postingsBatch = 2000

// writePostings inserts the postings of the documents with these ids.
func writePostings(ctx context.Context, tx *sql.Tx, ci *collInfo, ids []any, kws map[string]analyzed) error {
	rows, err := tx.QueryContext(ctx, `SELECT pk, id FROM `+table(ci.cfg.Name)+` WHERE id IN (`+placeholders(len(ids))+`)`, ids...)
	if err != nil {
		return fmt.Errorf("mariadb: index %q: %w", ci.cfg.Name, err)
	}
	pks := make(map[string]int64, len(ids))
	for rows.Next() {
		var (
			pk int64
			id string
		)
		if err := rows.Scan(&pk, &id); err != nil {
			rows.Close()
			return fmt.Errorf("mariadb: index %q: %w", ci.cfg.Name, err)
		}
		pks[id] = pk
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("mariadb: index %q: %w", ci.cfg.Name, err)
	}
	var args []any
	flush := func() error {
		if len(args) == 0 {
			return nil
		}
		n := len(args) / 4
		q := `INSERT INTO ` + postings(ci.cfg.Name) + ` (term, pk, tf, len) VALUES (?, ?, ?, ?)` + strings.Repeat(`, (?, ?, ?, ?)`, n-1)
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("mariadb: index %q: %w", ci.cfg.Name, err)
		}
		args = args[:0]
		return nil
	}
	for id, kw := range kws {
		pk, ok := pks[id]
		if !ok {
			return fmt.Errorf("mariadb: index %q: document %s was not written", ci.cfg.Name, id)
		}
		for t, tf := range kw.tf {
			args = append(args, t, pk, tf, kw.len)
			if len(args) >= 4*postingsBatch {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	return flush()
}

// Delete implements store.Writer.
func (b *Backend) Delete(ctx context.Context, coll string, f filter.Expr) (int, error) {
	if _, err := b.info(ctx, coll); err != nil {
		return 0, err
	}
	where, err := compileWhere(f)
	if err != nil {
		return 0, err
	}
	if where.fenced {
		if where, err = b.fencedSelection(ctx, coll, f, where); err != nil {
			return 0, err
		}
		if where.sql == "" {
			return 0, nil
		}
	}
	var n int64
	err = b.inTx(ctx, func(tx *sql.Tx) error {
		// A source that loses chunks loses its hash, so the next sync
		// rewrites it instead of skipping it.
		args := append(append([]any{}, where.args...), coll)
		if _, err := tx.ExecContext(ctx, `DELETE s FROM quarry_sources s JOIN (SELECT DISTINCT source_type, source_name FROM `+table(coll)+where.sql+`) d
	ON s.source_type = d.source_type AND s.source_name = d.source_name WHERE s.collection = ?`, args...); err != nil {
			return fmt.Errorf("mariadb: delete from %q: %w", coll, err)
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM `+table(coll)+where.sql, where.args...)
		if err != nil {
			return fmt.Errorf("mariadb: delete from %q: %w", coll, err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

// Sources implements store.SourceSyncer.
func (b *Backend) Sources(ctx context.Context, coll string) ([]store.SourceState, error) {
	if _, err := b.info(ctx, coll); err != nil {
		return nil, err
	}
	rows, err := b.db.QueryContext(ctx, `SELECT source_type, source_name, hash, chunks, origin FROM quarry_sources
	WHERE collection = ? ORDER BY source_type, source_name`, coll)
	if err != nil {
		return nil, fmt.Errorf("mariadb: sources of %q: %w", coll, err)
	}
	defer rows.Close()
	var out []store.SourceState
	for rows.Next() {
		var s store.SourceState
		if err := rows.Scan(&s.Source.Type, &s.Source.Name, &s.Hash, &s.Chunks, &s.Origin); err != nil {
			return nil, fmt.Errorf("mariadb: sources of %q: %w", coll, err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// ReplaceSources implements store.SourceSyncer: one transaction for all
// updates.
func (b *Backend) ReplaceSources(ctx context.Context, coll string, updates []store.SourceUpdate) error {
	ci, err := b.info(ctx, coll)
	if err != nil {
		return err
	}
	return b.inTx(ctx, func(tx *sql.Tx) error {
		var docs []*document.Document
		for _, u := range updates {
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+table(coll)+` WHERE source_type = ? AND source_name = ?`, u.Source.Type, u.Source.Name); err != nil {
				return fmt.Errorf("mariadb: replace source %s: %w", u.Source.Name, err)
			}
			if u.Hash == "" {
				if _, err := tx.ExecContext(ctx, `DELETE FROM quarry_sources WHERE collection = ? AND source_type = ? AND source_name = ?`,
					coll, u.Source.Type, u.Source.Name); err != nil {
					return fmt.Errorf("mariadb: forget source %s: %w", u.Source.Name, err)
				}
				continue
			}
			if _, err := tx.ExecContext(ctx, `REPLACE INTO quarry_sources (collection, source_type, source_name, hash, chunks, origin) VALUES (?, ?, ?, ?, ?, ?)`,
				coll, u.Source.Type, u.Source.Name, u.Hash, len(u.Docs), u.Origin); err != nil {
				return fmt.Errorf("mariadb: record source %s: %w", u.Source.Name, err)
			}
			docs = append(docs, u.Docs...)
		}
		return upsert(ctx, tx, ci, docs)
	})
}
