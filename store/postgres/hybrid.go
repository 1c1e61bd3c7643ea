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
	lead := append(keywordArgs(b.bm25, languages[ci.cfg.Language], req.Query), pgvector.NewVector(req.Embedding))
	w, err := where(ci.id, req.Filter, len(lead))
	if err != nil {
		return nil, err
	}
	sql := hybridSQL(b.bm25, strconv.Itoa(ci.cfg.Model.Dimension), w.sql, 2*req.TopK)
	qargs := append(lead, w.args...)
	var vec, kw []*document.Document
	err = b.read(ctx, w, func(tx pgx.Tx) error {
		ef := max(hnswMinEf, 2*(2*req.TopK))
		if !b.bm25 {
			if _, err := tx.Exec(ctx, keywordSettings); err != nil {
				return fmt.Errorf("configure search: %w", err)
			}
		}
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

// hybridSQL runs both branches in one statement, each under the WHERE
// clause w and limited to branch rows, and returns (branch, id, score)
// rows for store.Fuse. The arguments are keywordArgs' followed by the query
// vector: $2 with BM25, $3 otherwise.
func hybridSQL(bm25 bool, dim, w string, branch int) string {
	vec, lim := "$3", strconv.Itoa(branch)
	if bm25 {
		vec = "$2"
	}
	dist := `embedding::vector(` + dim + `) <=> ` + vec + `::vector(` + dim + `)`
	v := `v AS (SELECT id, 1 - d AS s FROM (SELECT id, ` + dist + ` AS d FROM quarry_documents WHERE ` + w + `
			ORDER BY ` + dist + ` LIMIT ` + lim + `) v0)`
	if bm25 {
		return `WITH ` + v + `,
		k AS (SELECT id, pdb.score(search_id) AS s FROM quarry_documents
			WHERE content ||| $1 AND ` + w + ` ORDER BY s DESC, id LIMIT ` + lim + `)
		SELECT 'v', id, s FROM v UNION ALL SELECT 'k', id, s FROM k`
	}
	return `WITH ` + bm25CTE(w, branch) + `,
		` + v + `
		SELECT 'v', id, s FROM v UNION ALL SELECT 'k', id, s FROM kw`
}
