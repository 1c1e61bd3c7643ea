package postgres

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/store"
)

// SearchHybrid implements store.HybridSearcher: one statement runs both
// branches, each with the collection and filter applied before its own
// ranking and limit of 2·k; the candidates are fused with store.Fuse (the
// same rule as every store) and only the top k rows are read.
func (b *Backend) SearchHybrid(ctx context.Context, name string, req store.SearchRequest) ([]store.Hit, error) {
	ci, err := b.info(ctx, name)
	if err != nil {
		return nil, err
	}
	w, args, err := where(ci.id, req.Filter, 3)
	if err != nil {
		return nil, err
	}
	dim := strconv.Itoa(ci.cfg.Model.Dimension)
	branch := strconv.Itoa(2 * req.TopK)
	dist := `embedding::vector(` + dim + `) <=> $3::vector(` + dim + `)`
	sql := `WITH q AS (SELECT NULLIF(replace(plainto_tsquery($1::regconfig, $2)::text, '&', '|'), '')::tsquery AS tq),
		v AS (SELECT id, 1 - d AS s FROM (SELECT id, ` + dist + ` AS d FROM quarry_documents WHERE ` + w + `
			ORDER BY ` + dist + ` LIMIT ` + branch + `) v0),
		k AS (SELECT id, ts_rank(tsv, q.tq, 1) AS s FROM quarry_documents, q
			WHERE q.tq IS NOT NULL AND tsv @@ q.tq AND ` + w + ` ORDER BY s DESC, id LIMIT ` + branch + `)
		SELECT 'v', id, s FROM v UNION ALL SELECT 'k', id, s FROM k`
	qargs := append([]any{languages[ci.cfg.Language], req.Query, pgvector.NewVector(req.Embedding)}, args...)
	var vec, kw []*document.Document
	err = pgx.BeginFunc(ctx, b.db, func(tx pgx.Tx) error {
		ef := max(64, 2*(2*req.TopK))
		if _, err := tx.Exec(ctx, `SET LOCAL hnsw.iterative_scan = relaxed_order; SET LOCAL hnsw.ef_search = `+strconv.Itoa(min(ef, 1000))); err != nil {
			return fmt.Errorf("configure search: %w", err)
		}
		rows, err := tx.Query(ctx, sql, qargs...)
		if err != nil {
			return err
		}
		var branchName, id string
		var score float64
		_, err = pgx.ForEachRow(rows, []any{&branchName, &id, &score}, func() error {
			d := &document.Document{ID: id, Score: score, Scored: true}
			if branchName == "v" {
				vec = append(vec, d)
			} else {
				kw = append(kw, d)
			}
			return nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("hybrid search: %w", err)
	}
	// Each branch is ranked by score, ties by id, as every store ranks.
	store.SortDocuments(vec)
	store.SortDocuments(kw)
	fused := store.Fuse(vec, kw, req.Fusion, req.Explain)
	if len(fused) > req.TopK {
		fused = fused[:req.TopK]
	}
	ids := make([]string, len(fused))
	for i, h := range fused {
		ids[i] = h.Doc.ID
	}
	docs, err := b.Get(ctx, name, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*document.Document, len(docs))
	for _, d := range docs {
		byID[d.ID] = d
	}
	out := fused[:0]
	for _, h := range fused {
		d, ok := byID[h.Doc.ID]
		if !ok {
			continue // deleted between the two statements
		}
		d.SetScore(h.Doc.Score)
		h.Doc = d
		out = append(out, h)
	}
	return out, nil
}
