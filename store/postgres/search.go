package postgres

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
)

// hnswMinEf is the floor of hnsw.ef_search. The embedded store's floor is
// 128 (hnsw.DefaultMinEfSearch); here 128 makes pgvector's cost model
// prefer a sequential scan on collections of a few thousand rows, which ran
// 31 ms against 2.6 ms at 64 on SciFact (BenchmarkSciFactStores).
const hnswMinEf = 64

// tieSlack extra rows let ties at the k-th place be ordered by id.
const tieSlack = 8

// SearchVector implements store.Backend. Iterative index scans keep a
// selective filter from starving the result: pgvector keeps walking the
// graph until k rows pass the filter.
func (b *Backend) SearchVector(ctx context.Context, name string, q []float32, f filter.Expr, k int) ([]*document.Document, error) {
	ci, err := b.info(ctx, name)
	if err != nil {
		return nil, err
	}
	w, err := where(ci.id, f, 1)
	if err != nil {
		return nil, err
	}
	sql := vectorSQL(strconv.Itoa(ci.cfg.Model.Dimension), w.sql, k+tieSlack)
	var out []*document.Document
	err = b.read(ctx, w, func(tx pgx.Tx) error {
		ef := max(hnswMinEf, 2*(k+tieSlack))
		if _, err := tx.Exec(ctx, `SET LOCAL hnsw.iterative_scan = relaxed_order; SET LOCAL hnsw.ef_search = `+strconv.Itoa(min(ef, 1000))); err != nil {
			return fmt.Errorf("configure search: %w", err)
		}
		out, err = queryScored(ctx, tx, sql, append([]any{pgvector.NewVector(q)}, w.args...)...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("vector search: %w", err)
	}
	return topK(out, k), nil
}

// SearchKeyword implements store.Backend. With ParadeDB's pg_search it
// ranks by pg_search's BM25 over content; otherwise by Okapi BM25 computed
// in SQL over the generated tsvector of title and content (see bm25CTE),
// with query terms ORed as BM25 matches.
func (b *Backend) SearchKeyword(ctx context.Context, name string, query string, f filter.Expr, k int) ([]*document.Document, error) {
	ci, err := b.info(ctx, name)
	if err != nil {
		return nil, err
	}
	lead := keywordArgs(b.bm25, languages[ci.cfg.Language], query)
	w, err := where(ci.id, f, len(lead))
	if err != nil {
		return nil, err
	}
	var out []*document.Document
	err = b.read(ctx, w, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, keywordSettings); err != nil {
			return fmt.Errorf("configure search: %w", err)
		}
		out, err = queryScored(ctx, tx, keywordSQL(b.bm25, w.sql, k), append(lead, w.args...)...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("keyword search: %w", err)
	}
	return topK(out, k), nil
}

// keywordSettings keep BM25's term conditions on the GIN index (see
// bm25CTE): with fresh statistics the planner chose a sequential scan per
// term (11 ms each on SciFact, 0.3 ms through the index).
const keywordSettings = `SET LOCAL enable_seqscan = off`

// keywordArgs are the leading arguments of keywordSQL: the query, and the
// text search configuration unless BM25 ranks.
func keywordArgs(bm25 bool, lang, query string) []any {
	if bm25 {
		return []any{query}
	}
	return []any{lang, query}
}

// keywordSQL selects the top k documents matching the query under the
// WHERE clause w. With bm25, $1 is the query and pg_search's ||| matches
// any of its terms (disjunction, as BM25 does); otherwise $1 is the text
// search configuration and $2 the query.
func keywordSQL(bm25 bool, w string, k int) string {
	if bm25 {
		return `SELECT ` + docColumns + `, pdb.score(search_id) AS score
		FROM quarry_documents WHERE content ||| $1 AND ` + w + `
		ORDER BY score DESC, id LIMIT ` + strconv.Itoa(k)
	}
	return `WITH ` + bm25CTE(w, k) + `
		SELECT ` + docColumns + `, kw.s AS score FROM kw JOIN quarry_documents USING (id) WHERE ` + w + `
		ORDER BY score DESC, id`
}

// bm25CTE defines kw(id, s): the top k documents under w by Okapi BM25
// (k1 0.9, b 0.4, as the embedded store) computed in SQL; $1 is the text
// search configuration and $2 the query. Document frequencies are counted
// over the collection through the GIN index. Scoring reads each candidate's
// tsvector, so candidates are first cut to the best max(100, 10·k) by
// ts_rank; a document's length is its number of distinct lexemes and the
// average is taken over the candidates. On SciFact this keeps the cost of
// ts_rank alone and moves keyword overlap@10 with the embedded store's BM25
// from 0.58 (ts_rank) to 0.79; see docs/stores.md for nDCG.
func bm25CTE(w string, k int) string {
	coll := w
	if i := strings.Index(w, " AND "); i >= 0 {
		coll = w[:i]
	}
	// "collection_id + 0" cannot use the primary key, which leaves the GIN
	// index on tsv for the term conditions: the terms are values the
	// planner cannot see, and it otherwise walked the whole collection by
	// its key for every term (12.7 ms a term on SciFact against 0.3 ms).
	noKey := strings.Replace(coll, "collection_id", "collection_id + 0", 1)
	wNoKey := noKey + strings.TrimPrefix(w, coll)
	return `terms AS MATERIALIZED (SELECT lexeme, quote_literal(lexeme)::tsquery AS tq FROM unnest(to_tsvector($1::regconfig, $2))),
		nd AS (SELECT count(*)::float8 AS n FROM quarry_documents WHERE ` + coll + `),
		idf AS MATERIALIZED (SELECT t.lexeme, ln(1 + (nd.n - d.df + 0.5) / (d.df + 0.5)) AS idf FROM terms t, nd,
			LATERAL (SELECT count(*)::float8 AS df FROM quarry_documents WHERE ` + noKey + ` AND tsv @@ t.tq) d),
		cand AS MATERIALIZED (SELECT id, tsv, length(tsv)::float8 AS dl FROM quarry_documents, (SELECT string_agg(tq::text, ' | ')::tsquery AS q FROM terms) tq
			WHERE tsv @@ tq.q AND ` + wNoKey + ` ORDER BY ts_rank(tsv, tq.q, 1) DESC LIMIT ` + strconv.Itoa(max(100, 10*k)) + `),
		avgdl AS (SELECT avg(dl) AS a FROM cand),
		tl AS (SELECT array_agg(lexeme) AS l FROM terms),
		tf AS MATERIALIZED (SELECT c.id, c.dl, u.lexeme, array_length(u.positions, 1)::float8 AS tf
			FROM cand c, tl, LATERAL (SELECT * FROM unnest(c.tsv) WHERE lexeme = ANY(tl.l)) u),
		kw AS (SELECT tf.id, sum(idf.idf * tf.tf * 1.9 / (tf.tf + 0.9 * (0.6 + 0.4 * tf.dl / avgdl.a))) AS s
			FROM tf JOIN idf USING (lexeme) CROSS JOIN avgdl
			GROUP BY tf.id ORDER BY s DESC, tf.id LIMIT ` + strconv.Itoa(k) + `)`
}

// vectorSQL selects the k nearest documents to $1 under w by cosine
// distance on the collection's dimension, which the partial index covers.
func vectorSQL(dim, w string, k int) string {
	return `SELECT ` + docColumns + `, 1 - (embedding::vector(` + dim + `) <=> $1::vector(` + dim + `)) AS score
		FROM quarry_documents WHERE ` + w + `
		ORDER BY embedding::vector(` + dim + `) <=> $1::vector(` + dim + `) LIMIT ` + strconv.Itoa(k)
}

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func queryScored(ctx context.Context, q querier, sql string, args ...any) ([]*document.Document, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*document.Document
	for rows.Next() {
		var r docRow
		if err := rows.Scan(r.dest(true)...); err != nil {
			return nil, err
		}
		d, err := r.document()
		if err != nil {
			return nil, err
		}
		d.SetScore(r.score)
		out = append(out, d)
	}
	return out, rows.Err()
}

func topK(docs []*document.Document, k int) []*document.Document {
	sort.SliceStable(docs, func(i, j int) bool { return store.Less(docs[i], docs[j]) })
	if len(docs) > k {
		docs = docs[:k]
	}
	return docs
}
