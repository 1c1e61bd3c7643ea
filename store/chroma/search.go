package chroma

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
)

// tieSlack is how many results past k a search asks for, so documents
// tied at the k-th score are cut by id, as every store cuts them, and not
// by Chroma's internal order.
const tieSlack = 8

// SearchVector implements store.Searcher.
func (b *Backend) SearchVector(ctx context.Context, coll string, vec []float32, f filter.Expr, k int) ([]*document.Document, error) {
	return b.SearchRequest(ctx, coll, store.SearchRequest{Mode: store.ModeVector, Embedding: vec, Filter: f, TopK: k})
}

// SearchKeyword implements store.Searcher.
func (b *Backend) SearchKeyword(ctx context.Context, coll string, query string, f filter.Expr, k int) ([]*document.Document, error) {
	return b.SearchRequest(ctx, coll, store.SearchRequest{Mode: store.ModeKeyword, Query: query, Filter: f, TopK: k})
}

// SearchRequest implements store.RequestSearcher.
func (b *Backend) SearchRequest(ctx context.Context, coll string, req store.SearchRequest) ([]*document.Document, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return nil, err
	}
	w, ok, err := c.visible(req.Filter)
	if err != nil || !ok {
		return nil, err
	}
	if req.Mode == store.ModeKeyword {
		return b.keyword(ctx, c, req, w)
	}
	return b.vector(ctx, c, req, w)
}

// vector is one query of Chroma's HNSW index under the filter; scores are
// cosine similarity.
//
// A query can come back short: Chroma's single-node server, while it moves
// freshly written records from its log into the index, answers for a
// moment without some of them, and HNSW under a selective filter can miss
// some records as any approximate index can. When fewer records come back
// than were asked for, the records the filter holds are counted, and if
// there are more, at most exactVector of them, they are ranked exactly by
// Quarry from their stored embeddings instead.
func (b *Backend) vector(ctx context.Context, c *collection, req store.SearchRequest, w any) ([]*document.Document, error) {
	want := min(req.TopK+tieSlack, store.MaxTopK+tieSlack)
	body := map[string]any{"query_embeddings": [][]float32{req.Embedding}, "n_results": want,
		"where": w, "include": []string{"metadatas", "distances"}}
	var res struct {
		IDs       [][]string         `json:"ids"`
		Metadatas [][]map[string]any `json:"metadatas"`
		Distances [][]float64        `json:"distances"`
	}
	if err := b.read(ctx, b.path(c, "/query"), body, &res); err != nil {
		return nil, b.collErr(c, err)
	}
	if len(res.IDs) != 1 || len(res.Metadatas) != 1 || len(res.Distances) != 1 || len(res.Metadatas[0]) != len(res.IDs[0]) || len(res.Distances[0]) != len(res.IDs[0]) {
		return nil, fmt.Errorf("chroma: query of %s: answer's lists do not match", c.name)
	}
	var out []*document.Document
	if len(res.IDs[0]) < want && b.holdsMore(ctx, c, w, len(res.IDs[0])) {
		ids, err := b.ids(ctx, c, w)
		if err != nil {
			return nil, err
		}
		if len(ids) > len(res.IDs[0]) && len(ids) <= exactVector {
			if out, err = b.exact(ctx, c, ids, req); err != nil {
				return nil, err
			}
		}
	}
	if out == nil {
		out = make([]*document.Document, 0, len(res.IDs[0]))
		for i, id := range res.IDs[0] {
			d, err := decode(id, res.Metadatas[0][i], req.Vectors)
			if err != nil {
				return nil, err
			}
			d.SetScore(1 - res.Distances[0][i]) // cosine distance
			out = append(out, d)
		}
	}
	store.SortDocuments(out)
	if len(out) > req.TopK {
		out = out[:req.TopK]
	}
	return out, nil
}

// holdsMore reports whether more than n records match w: without a
// filter the collection's count tells, cheaply; with one, yes, and the
// caller lists them.
func (b *Backend) holdsMore(ctx context.Context, c *collection, w any, n int) bool {
	if w != nil {
		return true
	}
	total, err := b.count(ctx, c)
	return err != nil || total > n
}

// exactVector bounds the records a short vector query ranks exactly.
const exactVector = 20000

// exact ranks records by cosine similarity to the query, from the
// embeddings they were written with.
func (b *Backend) exact(ctx context.Context, c *collection, ids []string, req store.SearchRequest) ([]*document.Document, error) {
	byID, err := b.fetch(ctx, c, ids, nil, true)
	if err != nil {
		return nil, err
	}
	out := make([]*document.Document, 0, len(byID))
	for _, d := range byID {
		sim, err := document.Cosine(d.Embedding, req.Embedding)
		if err != nil {
			continue // written with another dimension
		}
		d.SetScore(sim)
		if !req.Vectors {
			d.Embedding = nil
		}
		out = append(out, d)
	}
	return out, nil
}

// SearchHybrid implements store.HybridSearcher: both branches at once,
// 2·k each with the filter inside and the embeddings when asked for,
// fused as every store fuses them.
func (b *Backend) SearchHybrid(ctx context.Context, coll string, req store.SearchRequest) ([]store.Hit, error) {
	return store.FuseBranches(ctx, req, func(ctx context.Context, r store.SearchRequest) ([]*document.Document, error) {
		return b.SearchRequest(ctx, coll, r)
	})
}

// termHits are a query term's records in the whole collection.
type termHits struct {
	term string // its form, with a space each side
	ids  []string
	idf  float64
}

// parallelTerms bounds the $contains requests in flight for one search.
const parallelTerms = 4

// keyword is BM25 over Chroma's full-text index. Each distinct query term
// (and code pair) is one $contains request for its records' ids in the
// whole collection, whose number is its document frequency, as the
// embedded store counts it. The terms are then visited rarest first; the
// records of each not read yet are read under the filter and scored
// exactly from their terms, until the k-th best score reaches what a
// record holding only the terms left could score at most (each term's
// idf·(k1+1)), so no unread record can enter the top k (MaxScore). On a
// question of common words that reads many records; on rare words, few.
func (b *Backend) keyword(ctx context.Context, c *collection, req store.SearchRequest, w any) ([]*document.Document, error) {
	terms, pairs := c.analyzer.AnalyzeQuery(req.Query)
	var qs []*termHits
	seen := map[string]bool{}
	for _, t := range append(terms, pairs...) {
		s := " " + form(t) + " "
		if !seen[s] {
			seen[s] = true
			qs = append(qs, &termHits{term: s})
		}
	}
	if len(qs) == 0 {
		return nil, nil
	}
	n, err := b.count(ctx, c)
	if err != nil || n == 0 {
		return nil, err
	}
	if err := b.termIDs(ctx, c, qs); err != nil {
		return nil, err
	}
	qs = slices.DeleteFunc(qs, func(q *termHits) bool { return len(q.ids) == 0 })
	for _, q := range qs {
		df := float64(len(q.ids))
		q.idf = math.Log(1 + (float64(n)-df+0.5)/(df+0.5))
	}
	slices.SortStableFunc(qs, func(x, y *termHits) int { return cmp.Compare(len(x.ids), len(y.ids)) })
	p := c.bm25
	// rest[i] bounds the score of a record holding none of the terms
	// before i.
	rest := make([]float64, len(qs)+1)
	for i := len(qs) - 1; i >= 0; i-- {
		rest[i] = rest[i+1] + qs[i].idf*(p.K1+1)
	}
	want := min(req.TopK+tieSlack, store.MaxTopK+tieSlack)
	idf := make(map[string]float64, len(qs))
	for _, q := range qs {
		idf[q.term[1:len(q.term)-1]] = q.idf
	}
	type scored struct {
		id    string
		score float64
	}
	var top []scored // the best want so far, best first
	read := map[string]bool{}
	for i, q := range qs {
		if len(top) >= want && top[len(top)-1].score > rest[i] {
			break
		}
		var ids []string
		for _, id := range q.ids {
			if !read[id] {
				read[id] = true
				ids = append(ids, id)
			}
		}
		for start := 0; start < len(ids); start += b.maxBatch {
			body := map[string]any{"ids": ids[start:min(start+b.maxBatch, len(ids))], "include": []string{"documents"}}
			if w != nil {
				body["where"] = w
			}
			res, err := b.get(ctx, c, body)
			if err != nil {
				return nil, err
			}
			for j, id := range res.IDs {
				if j >= len(res.Documents) || res.Documents[j] == nil {
					continue
				}
				s := score(*res.Documents[j], idf, p)
				if len(top) < want || s > top[len(top)-1].score || (s == top[len(top)-1].score && id < top[len(top)-1].id) {
					at, _ := slices.BinarySearchFunc(top, scored{id, s}, func(x, y scored) int {
						return cmp.Or(cmp.Compare(y.score, x.score), strings.Compare(x.id, y.id))
					})
					top = slices.Insert(top, at, scored{id, s})
					if len(top) > want {
						top = top[:want]
					}
				}
			}
		}
	}
	if len(top) > req.TopK {
		top = top[:req.TopK]
	}
	ids := make([]string, len(top))
	for i, s := range top {
		ids[i] = s.id
	}
	byID, err := b.fetch(ctx, c, ids, nil, req.Vectors)
	if err != nil {
		return nil, err
	}
	out := make([]*document.Document, 0, len(top))
	for _, s := range top {
		if d := byID[s.id]; d != nil { // gone since it was scored
			d.SetScore(s.score)
			out = append(out, d)
		}
	}
	return out, nil
}

// termIDs reads each term's records in the whole collection, a few
// requests at a time.
func (b *Backend) termIDs(ctx context.Context, c *collection, qs []*termHits) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	sem := make(chan struct{}, parallelTerms)
	for _, q := range qs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			res, err := b.get(ctx, c, map[string]any{"where_document": map[string]any{"$contains": q.term}, "include": []string{}})
			if err != nil {
				once.Do(func() { first = err; cancel() })
				return
			}
			q.ids = res.IDs
		}()
	}
	wg.Wait()
	return first
}

// score is a record's BM25 from its Chroma document: the terms before
// pairMark count towards its length; idf holds the query's terms' forms.
func score(doc string, idf map[string]float64, p bm25Params) float64 {
	tf := map[string]float64{}
	length, pairs := 0, false
	for _, t := range strings.Fields(doc) {
		if t == pairMark {
			pairs = true
			continue
		}
		if !pairs {
			length++
		}
		if _, ok := idf[t]; ok {
			tf[t]++
		}
	}
	norm := p.K1 * (1 - p.B + p.B*float64(length)/p.AvgLen)
	s := 0.0
	for t, f := range tf {
		s += idf[t] * f * (p.K1 + 1) / (f + norm)
	}
	return s
}
