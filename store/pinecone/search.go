package pinecone

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/internal/sparsebm25"
)

// tieSlack is how many results past k a search asks for, so documents
// tied at the k-th score are cut by id, as every store cuts them, and not
// by Pinecone's internal order.
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

// query runs one query and returns its matches.
func (b *Backend) query(ctx context.Context, host string, body map[string]any) ([]vector, error) {
	var res struct {
		Matches []vector `json:"matches"`
	}
	if err := b.call(ctx, http.MethodPost, host+"/query", body, &res); err != nil {
		if isStatus(err, http.StatusNotFound) {
			return nil, nil // a namespace never written holds nothing
		}
		return nil, err
	}
	return res.Matches, nil
}

// ranked turns matches into documents, scored by Pinecone, in the stores'
// order, cut at k.
func ranked(ms []vector, vectors bool, k int) ([]*document.Document, error) {
	out := make([]*document.Document, 0, len(ms))
	for _, m := range ms {
		d, err := decode(m, vectors)
		if err != nil {
			return nil, err
		}
		d.SetScore(m.Score)
		out = append(out, d)
	}
	store.SortDocuments(out)
	if len(out) > k {
		out = out[:k]
	}
	return out, nil
}

// vector is one query of the dense index under the filter; Pinecone's
// score under cosine is the similarity.
func (b *Backend) vector(ctx context.Context, c *collection, req store.SearchRequest, w any) ([]*document.Document, error) {
	body := map[string]any{"namespace": c.ns(), "vector": req.Embedding, "topK": min(req.TopK+tieSlack, maxTopK), "includeMetadata": true}
	if w != nil {
		body["filter"] = w
	}
	ms, err := b.query(ctx, c.dense, body)
	if err != nil {
		return nil, err
	}
	return ranked(ms, req.Vectors, req.TopK)
}

// parallelTerms bounds the document-frequency queries in flight for one
// search.
const parallelTerms = 4

// keyword is BM25 through the sparse index: each distinct query term's
// document frequency in the whole collection, as the embedded store
// counts it, is the number of records one sparse query of that term alone
// finds (at most 10,000); the query's sparse vector then holds each held
// term's idf, and Pinecone's dot product with the records' term weights is
// their BM25 score. Embeddings, when asked for, are read from the dense
// index.
func (b *Backend) keyword(ctx context.Context, c *collection, req store.SearchRequest, w any) ([]*document.Document, error) {
	dims := sparsebm25.Query(c.analyzer, req.Query)
	if len(dims) == 0 {
		return nil, nil
	}
	n, dfs, err := b.termCounts(ctx, c, dims)
	if err != nil || n == 0 {
		return nil, err
	}
	q := &sparse{}
	for i, dim := range dims {
		if df := float64(dfs[i]); df > 0 {
			q.Indices = append(q.Indices, dim)
			q.Values = append(q.Values, float32(math.Log(1+(float64(max(n, dfs[i]))-df+0.5)/(df+0.5))))
		}
	}
	if len(q.Indices) == 0 {
		return nil, nil
	}
	body := map[string]any{"namespace": c.ns(), "sparseVector": q, "topK": min(req.TopK+tieSlack, maxTopK), "includeMetadata": true}
	if w != nil {
		body["filter"] = w
	}
	ms, err := b.query(ctx, c.sparse, body)
	if err != nil {
		return nil, err
	}
	ms = slices.DeleteFunc(ms, func(m vector) bool { return m.Score <= 0 })
	out, err := ranked(ms, false, req.TopK)
	if err != nil || !req.Vectors || len(out) == 0 {
		return out, err
	}
	ids := make([]string, len(out))
	for i, d := range out {
		ids[i] = d.ID
	}
	withVec, err := b.Get(ctx, c.cfg.Name, ids)
	if err != nil {
		return nil, err
	}
	emb := make(map[string][]float32, len(withVec))
	for _, d := range withVec {
		emb[d.ID] = d.Embedding
	}
	for _, d := range out {
		d.Embedding = emb[d.ID]
	}
	return out, nil
}

// statsTTL is how long keyword search trusts the counts it made: other
// processes' writes change them too, and this one's forget them at once.
const statsTTL = time.Minute

// termStats are a collection's chunk count and the document frequencies
// of the dimensions queried, as counted at a time.
type termStats struct {
	at time.Time
	n  int
	df map[uint32]int
}

// termCounts is the collection's chunk count and each dimension's
// document frequency, from the counts of the last minute where they
// are.
func (b *Backend) termCounts(ctx context.Context, c *collection, dims []uint32) (int, []int, error) {
	b.mu.Lock()
	gen := b.writes[c.cfg.Name]
	st := b.stats[c.cfg.Name]
	if st == nil || time.Since(st.at) > statsTTL {
		st = nil
		delete(b.stats, c.cfg.Name)
	}
	dfs := make([]int, len(dims))
	var missing []uint32
	var at []int
	for i, d := range dims {
		if df, ok := st.lookup(d); ok {
			dfs[i] = df
		} else {
			missing, at = append(missing, d), append(at, i)
		}
	}
	b.mu.Unlock()
	n := 0
	if st != nil {
		n = st.n
	} else {
		var err error
		if n, err = b.count(ctx, c); err != nil {
			return 0, nil, err
		}
	}
	counted, err := b.docFreqs(ctx, c, missing)
	if err != nil {
		return 0, nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for j, i := range at {
		dfs[i] = counted[j]
	}
	if b.writes[c.cfg.Name] != gen {
		return n, dfs, nil // written meanwhile: these counts may be old
	}
	if st == nil {
		st = &termStats{at: time.Now(), n: n, df: map[uint32]int{}}
		b.stats[c.cfg.Name] = st
	}
	for j := range at {
		st.df[missing[j]] = counted[j]
	}
	return n, dfs, nil
}

func (st *termStats) lookup(d uint32) (int, bool) {
	if st == nil {
		return 0, false
	}
	df, ok := st.df[d]
	return df, ok
}

// wrote forgets a collection's counts after this process writes to it;
// counts being made meanwhile are not kept.
func (b *Backend) wrote(coll string) {
	b.mu.Lock()
	delete(b.stats, coll)
	b.writes[coll]++
	b.mu.Unlock()
}

// docFreqs counts each dimension's records in the collection, a sparse
// query each, parallelTerms at a time.
func (b *Backend) docFreqs(ctx context.Context, c *collection, dims []uint32) ([]int, error) {
	dfs := make([]int, len(dims))
	errs := make([]error, len(dims))
	sem := make(chan struct{}, parallelTerms)
	var wg sync.WaitGroup
	for i, dim := range dims {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			body := map[string]any{"namespace": c.ns(), "topK": maxTopK,
				"sparseVector": &sparse{Indices: []uint32{dim}, Values: []float32{1}}}
			ms, err := b.query(ctx, c.sparse, body)
			for _, m := range ms {
				if m.Score > 0 {
					dfs[i]++
				}
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("pinecone: document frequency: %w", err)
		}
	}
	return dfs, nil
}

// SearchHybrid implements store.HybridSearcher: both branches at once,
// 2·k each with the filter inside, fused as every store fuses them.
// Pinecone's sparse-dense records, the one-index hybrid, need a
// dot-product dense index and weight the two scores by hand; its own
// advice is the two indexes Quarry keeps.
func (b *Backend) SearchHybrid(ctx context.Context, coll string, req store.SearchRequest) ([]store.Hit, error) {
	return store.FuseBranches(ctx, req, func(ctx context.Context, r store.SearchRequest) ([]*document.Document, error) {
		return b.SearchRequest(ctx, coll, r)
	})
}
