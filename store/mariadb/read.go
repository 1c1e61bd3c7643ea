package mariadb

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/internal/sqlexpr"
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
	return queryDocs(ctx, b.db, score, q, args...)
}

// queryWhere is query for a statement under where: fenced when it holds a
// raw fragment.
func (b *Backend) queryWhere(ctx context.Context, where compiled, score bool, q string, args ...any) ([]*document.Document, error) {
	if !where.fenced {
		return b.query(ctx, score, q, args...)
	}
	var out []*document.Document
	err := b.fenced(ctx, func(db querier) error {
		var err error
		out, err = queryDocs(ctx, db, score, fenceStatement+q, args...)
		return err
	})
	return out, err
}

func queryDocs(ctx context.Context, db querier, score bool, q string, args ...any) ([]*document.Document, error) {
	rows, err := db.QueryContext(ctx, q, args...)
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
	q := `SELECT COUNT(*) FROM ` + table(ci.cfg.Name) + where.sql
	if where.fenced {
		err = b.fenced(ctx, func(db querier) error { return db.QueryRowContext(ctx, fenceStatement+q, where.args...).Scan(&n) })
	} else {
		err = b.db.QueryRowContext(ctx, q, where.args...).Scan(&n)
	}
	if err != nil {
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
		return b.searchKeyword(ctx, ci, req, where)
	}
	v := sqlexpr.VectorText(req.Embedding)
	args := append([]any{v}, where.args...)
	if where.sql != "" || req.TopK > maxIndexK {
		// The vector index finds the nearest neighbours first and filters
		// them after, so a filtered search could come back short: it is
		// an exact scan of the rows the filter leaves, as the reference.
		return b.queryWhere(ctx, where, true, `SELECT `+cols+`, 1 - VEC_DISTANCE_COSINE(embedding, VEC_FromText(?)) AS score FROM `+table(ci.cfg.Name)+
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
// candidate list four times k (at least 64, at most MariaDB's 10000: twice
// k lost a point of nDCG@10 on SciFact against an exact search, four times
// a third of one, in the same time), and tieSlack rows beyond k are read to
// order ties at the cut.
const (
	maxIndexK = 1000
	tieSlack  = 16
)

func efSearch(k int) int { return min(max(4*(k+tieSlack), 64), 10000) }

// BM25's parameters and idf are the embedded store's (index/bm25), so a
// collection ranks alike on both.
const (
	bm25K1 = bm25.DefaultK1
	bm25B  = bm25.DefaultB
)

// searchKeyword scores by BM25 in SQL: the query's terms' document
// frequencies and the collection's size and mean length are read first,
// then one aggregate over the postings of those terms (joined to the
// documents only to apply the filter) ranks the top k, whose rows are read
// last.
func (b *Backend) searchKeyword(ctx context.Context, ci *collInfo, req store.SearchRequest, where compiled) ([]*document.Document, error) {
	terms := queryTerms(ci.analyzer, req.Query)
	if len(terms) == 0 {
		return nil, nil
	}
	var (
		n      int
		sumLen sql.NullFloat64
	)
	if err := b.db.QueryRowContext(ctx, `SELECT COUNT(*), SUM(kwlen) FROM `+table(ci.cfg.Name)).Scan(&n, &sumLen); err != nil {
		return nil, fmt.Errorf("mariadb: keyword search %q: %w", ci.cfg.Name, err)
	}
	if n == 0 {
		return nil, nil
	}
	avg := sumLen.Float64 / float64(n)
	if avg <= 0 {
		avg = 1
	}
	names := make([]any, 0, len(terms))
	for t := range terms {
		names = append(names, t)
	}
	rows, err := b.db.QueryContext(ctx, `SELECT term, COUNT(*) FROM `+postings(ci.cfg.Name)+` WHERE term IN (`+placeholders(len(names))+`) GROUP BY term`, names...)
	if err != nil {
		return nil, fmt.Errorf("mariadb: keyword search %q: %w", ci.cfg.Name, err)
	}
	weights := map[string]float64{}
	for rows.Next() {
		var (
			t  string
			df float64
		)
		if err := rows.Scan(&t, &df); err != nil {
			rows.Close()
			return nil, fmt.Errorf("mariadb: keyword search %q: %w", ci.cfg.Name, err)
		}
		idf := math.Log(1 + (float64(n)-df+0.5)/(df+0.5))
		weights[t] = float64(terms[t]) * idf * (bm25K1 + 1)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("mariadb: keyword search %q: %w", ci.cfg.Name, err)
	}
	if len(weights) == 0 {
		return nil, nil
	}
	// The weights travel as a derived table of bound (term, weight) rows.
	k0, kl := bm25K1*(1-bm25B), bm25K1*bm25B/avg
	args := []any{k0, kl} // the placeholders in the select list come first
	var w strings.Builder
	for _, t := range slices.Sorted(maps.Keys(weights)) { // one text per query
		if len(args) > 2 {
			w.WriteString(" UNION ALL ")
		}
		w.WriteString("SELECT ? AS term, ? AS w")
		args = append(args, t, weights[t])
	}
	join, cond := "", ""
	if where.sql != "" {
		join = ` JOIN ` + table(ci.cfg.Name) + ` d ON d.pk = p.pk`
		cond = where.sql
		args = append(args, where.args...)
	}
	args = append(args, req.TopK)
	top := `SELECT p.pk, SUM(q.w * p.tf / (p.tf + ? + ? * p.len)) AS score FROM ` + postings(ci.cfg.Name) + ` p JOIN (` + w.String() + `) q ON q.term = p.term` +
		join + cond + ` GROUP BY p.pk ORDER BY score DESC LIMIT ?`
	// Ties at the cut are broken by id below; reading a few more rows than
	// k lets the order hold there too.
	args[len(args)-1] = req.TopK + tieSlack
	docs, err := b.queryWhere(ctx, where, true, `SELECT `+qualified(columns(req.Vectors))+`, t.score FROM (`+top+`) t JOIN `+table(ci.cfg.Name)+` d ON d.pk = t.pk`, args...)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(docs, func(i, j int) bool { return store.Less(docs[i], docs[j]) })
	return docs[:min(len(docs), req.TopK)], nil
}

// qualified prefixes columns(…) with the documents' alias.
func qualified(cols string) string {
	parts := strings.Split(cols, ", ")
	for i, c := range parts {
		if c != "NULL" {
			parts[i] = "d." + c
		}
	}
	return strings.Join(parts, ", ")
}

// SearchHybrid implements store.HybridSearcher: the two branches, 2·k
// each with the filter inside both, run at once on two connections and
// are fused as on every store (store.Fuse); embeddings are read only when
// the request asks for them.
func (b *Backend) SearchHybrid(ctx context.Context, coll string, req store.SearchRequest) ([]store.Hit, error) {
	return store.FuseBranches(ctx, req, func(ctx context.Context, r store.SearchRequest) ([]*document.Document, error) {
		return b.SearchRequest(ctx, coll, r)
	})
}
