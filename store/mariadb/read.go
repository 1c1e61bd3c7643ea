package mariadb

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
)

// columns are a document's columns, the embedding as its stored bytes
// (little-endian float32s) only when asked for.
func columns(vectors bool) string {
	c := `id, content, source_type, source_name, metadata, provenance`
	if vectors {
		return c + `, embedding`
	}
	return c + `, NULL`
}

// scan reads a row of columns(…) and, when score is set, its score.
func scan(rows *sql.Rows, score bool) (*document.Document, error) {
	var (
		d        document.Document
		md, prov string
		vec      []byte
		s        float64
	)
	dest := []any{&d.ID, &d.Content, &d.SourceType, &d.SourceName, &md, &prov, &vec}
	if score {
		dest = append(dest, &s)
	}
	if err := rows.Scan(dest...); err != nil {
		return nil, fmt.Errorf("mariadb: read a document: %w", err)
	}
	v, err := document.DecodeJSONValue([]byte(md))
	if err != nil {
		return nil, fmt.Errorf("mariadb: document %s: metadata: %w", d.ID, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("mariadb: document %s: stored metadata is not an object", d.ID)
	}
	d.Metadata = m
	if err := json.Unmarshal([]byte(prov), &d.Provenance); err != nil {
		return nil, fmt.Errorf("mariadb: document %s: provenance: %w", d.ID, err)
	}
	if vec != nil {
		if len(vec)%4 != 0 {
			return nil, fmt.Errorf("mariadb: document %s: a vector of %d bytes", d.ID, len(vec))
		}
		d.Embedding = make([]float32, len(vec)/4)
		for i := range d.Embedding {
			d.Embedding[i] = math.Float32frombits(binary.LittleEndian.Uint32(vec[4*i:]))
		}
	}
	if score {
		d.SetScore(s)
	}
	return &d, nil
}

func (b *Backend) query(ctx context.Context, score bool, q string, args ...any) ([]*document.Document, error) {
	rows, err := b.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	defer rows.Close()
	var out []*document.Document
	for rows.Next() {
		d, err := scan(rows, score)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	return out, nil
}

// Get implements store.Searcher.
func (b *Backend) Get(ctx context.Context, coll string, ids []string) ([]*document.Document, error) {
	ci, err := b.info(ctx, coll)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	docs, err := b.query(ctx, false, `SELECT `+columns(true)+` FROM `+table(ci.cfg.Name)+` WHERE id IN (?`+strings.Repeat(", ?", len(ids)-1)+`)`, args...)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*document.Document, len(docs))
	for _, d := range docs {
		byID[d.ID] = d
	}
	out := make([]*document.Document, 0, len(docs))
	for _, id := range ids {
		if d, ok := byID[id]; ok {
			out = append(out, d)
			delete(byID, id)
		}
	}
	return out, nil
}

// Count implements store.Searcher.
func (b *Backend) Count(ctx context.Context, coll string, f filter.Expr) (int, error) {
	ci, err := b.info(ctx, coll)
	if err != nil {
		return 0, err
	}
	where, err := compileWhere(f)
	if err != nil {
		return 0, err
	}
	var n int
	if err := b.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+table(ci.cfg.Name)+where.sql, where.args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("mariadb: count %q: %w", coll, err)
	}
	return n, nil
}

// SearchVector implements store.Searcher.
func (b *Backend) SearchVector(ctx context.Context, coll string, vec []float32, f filter.Expr, k int) ([]*document.Document, error) {
	return b.SearchRequest(ctx, coll, store.SearchRequest{Embedding: vec, Filter: f, TopK: k, Mode: store.ModeVector, Vectors: true})
}

// SearchKeyword implements store.Searcher.
func (b *Backend) SearchKeyword(ctx context.Context, coll string, query string, f filter.Expr, k int) ([]*document.Document, error) {
	return b.SearchRequest(ctx, coll, store.SearchRequest{Query: query, Filter: f, TopK: k, Mode: store.ModeKeyword, Vectors: true})
}

// SearchRequest implements store.RequestSearcher: the vector branch by
// cosine distance through the collection's vector index, the keyword
// branch by full-text relevance, each with the filter inside.
func (b *Backend) SearchRequest(ctx context.Context, coll string, req store.SearchRequest) ([]*document.Document, error) {
	ci, err := b.info(ctx, coll)
	if err != nil {
		return nil, err
	}
	where, err := compileWhere(req.Filter)
	if err != nil {
		return nil, err
	}
	cols := columns(req.Vectors)
	if req.Mode == store.ModeKeyword {
		q := queryTokens(ci.analyzer, req.Query)
		if q == "" {
			return nil, nil
		}
		match := `MATCH(keywords) AGAINST (? IN NATURAL LANGUAGE MODE)`
		cond := ` WHERE ` + match + ` > 0`
		args := []any{q, q}
		if where.sql != "" {
			cond += ` AND ` + strings.TrimPrefix(where.sql, " WHERE ")
			args = append(args, where.args...)
		}
		args = append(args, req.TopK)
		return b.query(ctx, true, `SELECT `+cols+`, `+match+` AS score FROM `+table(ci.cfg.Name)+cond+` ORDER BY score DESC, id LIMIT ?`, args...)
	}
	v := vectorText(req.Embedding)
	args := append([]any{v}, where.args...)
	if where.sql != "" || req.TopK > maxIndexK {
		// The vector index finds the nearest neighbours first and filters
		// them after, so a filtered search could come back short: it is
		// an exact scan of the rows the filter leaves, as the reference.
		return b.query(ctx, true, `SELECT `+cols+`, 1 - VEC_DISTANCE_COSINE(embedding, VEC_FromText(?)) AS score FROM `+table(ci.cfg.Name)+
			` IGNORE INDEX (embedding)`+where.sql+` ORDER BY score DESC, id LIMIT ?`, append(args, req.TopK)...)
	}
	// Unfiltered, the index serves ORDER BY VEC_DISTANCE_COSINE(…) LIMIT,
	// searching a candidate list of efSearch(k); a few more rows than k
	// let ties at the cut be broken by id, as every store orders them.
	args = append(args, v, req.TopK+tieSlack)
	docs, err := b.query(ctx, true, fmt.Sprintf(`SET STATEMENT mhnsw_ef_search = %d FOR `, efSearch(req.TopK))+
		`SELECT `+cols+`, 1 - VEC_DISTANCE_COSINE(embedding, VEC_FromText(?)) AS score FROM `+table(ci.cfg.Name)+
		` ORDER BY VEC_DISTANCE_COSINE(embedding, VEC_FromText(?)) LIMIT ?`, args...)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(docs, func(i, j int) bool { return store.Less(docs[i], docs[j]) })
	return docs[:min(len(docs), req.TopK)], nil
}

// Vector index settings: up to maxIndexK results come from the index, its
// candidate list twice k (at least 64, at most MariaDB's 10000), and
// tieSlack rows beyond k are read to order ties at the cut.
const (
	maxIndexK = 1000
	tieSlack  = 16
)

func efSearch(k int) int { return min(max(2*(k+tieSlack), 64), 10000) }
