package opensearch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
)

// searchHit is one hit of a search answer.
type searchHit struct {
	ID     string          `json:"_id"`
	Score  *float64        `json:"_score"`
	Source json.RawMessage `json:"_source"`
	Sort   []any           `json:"sort"`
}

type searchAnswer struct {
	Hits struct {
		Hits []searchHit `json:"hits"`
	} `json:"hits"`
}

// chunk is a chunk's _source as Quarry reads it back.
type chunk struct {
	ID         string    `json:"id"`
	SourceType string    `json:"sourceType"`
	SourceName string    `json:"sourceName"`
	Embedding  []float32 `json:"embedding"`
	Stored     string    `json:"metadata"`
}

func (h *searchHit) document() (*document.Document, error) {
	var c chunk
	if err := json.Unmarshal(h.Source, &c); err != nil {
		return nil, fmt.Errorf("opensearch: chunk %s: %w", h.ID, err)
	}
	var st stored
	if err := json.Unmarshal([]byte(c.Stored), &st); err != nil {
		return nil, fmt.Errorf("opensearch: chunk %s: stored fields: %w", c.ID, err)
	}
	md, err := document.DecodeJSONValue(st.Metadata)
	if err != nil {
		return nil, fmt.Errorf("opensearch: chunk %s: metadata: %w", c.ID, err)
	}
	m, _ := md.(map[string]any)
	return &document.Document{ID: c.ID, Content: st.Content, Embedding: c.Embedding, SourceType: c.SourceType,
		SourceName: c.SourceName, Metadata: m, Provenance: st.Provenance}, nil
}

// tieSlack is how many results past k a search asks for, so documents
// tied at the k-th score are cut by id, as every store cuts them, and not
// by the engine's internal order.
const tieSlack = 8

// maxSize bounds one search's size: index.max_result_window's default on
// both engines, which refuse a larger from + size.
const maxSize = 10000

// candidates is how many neighbours Elasticsearch's HNSW walk keeps for a
// k-NN search of k (num_candidates, at most 10,000): twice k, and at least
// 100, so a filtered walk keeps looking after k.
func candidates(k int) int { return min(max(2*k, 100), maxSize) }

// without is the _source filter that leaves the embedding out unless a
// caller asked for vectors.
func without(vectors bool) any {
	if vectors {
		return true
	}
	return map[string]any{"excludes": []string{fieldEmbedding}}
}

// Get implements store.Searcher.
func (b *Backend) Get(ctx context.Context, coll string, ids []string) ([]*document.Document, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, nil
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = docID(id)
	}
	var res struct {
		Docs []struct {
			searchHit
			Found bool `json:"found"`
		} `json:"docs"`
	}
	if err := b.request(ctx, c, http.MethodPost, "/_mget", map[string]any{"ids": keys}, &res); err != nil {
		return nil, err
	}
	byID := map[string]*document.Document{}
	for i := range res.Docs {
		if !res.Docs[i].Found {
			continue
		}
		d, err := res.Docs[i].document()
		if err != nil {
			return nil, err
		}
		byID[d.ID] = d
	}
	var out []*document.Document
	for _, id := range ids {
		if d := byID[id]; d != nil {
			out = append(out, d)
			delete(byID, id) // an id asked twice is returned once
		}
	}
	return out, nil
}

// Count implements store.Searcher.
func (b *Backend) Count(ctx context.Context, coll string, f filter.Expr) (int, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return 0, err
	}
	q, ok, err := c.visible(f)
	if err != nil || !ok {
		return 0, err
	}
	var res struct {
		Count int `json:"count"`
	}
	if err := b.request(ctx, c, http.MethodPost, "/_count", map[string]any{"query": q}, &res); err != nil {
		return 0, err
	}
	return res.Count, nil
}

// SearchVector implements store.Searcher.
func (b *Backend) SearchVector(ctx context.Context, coll string, vec []float32, f filter.Expr, k int) ([]*document.Document, error) {
	return b.SearchRequest(ctx, coll, store.SearchRequest{Mode: store.ModeVector, Embedding: vec, Filter: f, TopK: k})
}

// SearchKeyword implements store.Searcher.
func (b *Backend) SearchKeyword(ctx context.Context, coll string, query string, f filter.Expr, k int) ([]*document.Document, error) {
	return b.SearchRequest(ctx, coll, store.SearchRequest{Mode: store.ModeKeyword, Query: query, Filter: f, TopK: k})
}

// branch is the query clause of one branch, k deep with the filter
// inside; nil when it can find nothing.
func (c *collection) branch(req store.SearchRequest, k int) (clause, error) {
	q, ok, err := c.visible(req.Filter)
	if err != nil || !ok {
		return nil, err
	}
	size := min(k+tieSlack, maxSize)
	if req.Mode == store.ModeKeyword {
		if strings.TrimSpace(req.Query) == "" {
			return nil, nil
		}
		return clause{"bool": clause{
			"must":   []any{clause{"match": clause{fieldContent: clause{"query": req.Query}}}},
			"filter": []any{q},
		}}, nil
	}
	_, all := q["match_all"]
	if c.dialect == DialectElasticsearch {
		knn := clause{"field": fieldEmbedding, "query_vector": req.Embedding, "k": size, "num_candidates": candidates(size)}
		if !all {
			knn["filter"] = q
		}
		return clause{"knn": knn}, nil
	}
	knn := clause{"vector": req.Embedding, "k": size}
	if !all {
		knn["filter"] = q
	}
	return clause{"knn": clause{fieldEmbedding: knn}}, nil
}

// body is a search body for one branch.
func body(q clause, req store.SearchRequest, k int) map[string]any {
	return map[string]any{"query": q, "size": min(k+tieSlack, maxSize), "_source": without(req.Vectors)}
}

// SearchRequest implements store.RequestSearcher.
func (b *Backend) SearchRequest(ctx context.Context, coll string, req store.SearchRequest) ([]*document.Document, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return nil, err
	}
	q, err := c.branch(req, req.TopK)
	if err != nil || q == nil {
		return nil, err
	}
	var res searchAnswer
	if err := b.request(ctx, c, http.MethodPost, "/_search", body(q, req, req.TopK), &res); err != nil {
		return nil, err
	}
	return ranked(res.Hits.Hits, req.Mode == store.ModeVector, req.TopK)
}

// ranked turns hits into documents in the stores' order, cut at k. The
// k-NN plugin scores cosine similarity as (1 + cos)/2; Quarry reports the
// cosine.
func ranked(hits []searchHit, vector bool, k int) ([]*document.Document, error) {
	out := make([]*document.Document, 0, len(hits))
	for i := range hits {
		d, err := hits[i].document()
		if err != nil {
			return nil, err
		}
		if s := hits[i].Score; s != nil {
			if vector {
				d.SetScore(2**s - 1)
			} else {
				d.SetScore(*s)
			}
		}
		out = append(out, d)
	}
	store.SortDocuments(out)
	if len(out) > k {
		out = out[:k]
	}
	return out, nil
}

// SearchHybrid implements store.HybridSearcher: both branches, 2·k each
// with the filter inside, in one _msearch, fused as every store fuses
// them. With hybrid=opensearch, an unweighted RRF without explanations is
// OpenSearch's hybrid query through a search pipeline whose score-ranker
// processor uses Quarry's rank constant, so the scores are Quarry's; with
// hybrid=elasticsearch it is Elasticsearch's rrf retriever.
func (b *Backend) SearchHybrid(ctx context.Context, coll string, req store.SearchRequest) ([]store.Hit, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return nil, err
	}
	vreq, kreq := req, req
	vreq.Mode, kreq.Mode = store.ModeVector, store.ModeKeyword
	vq, err := c.branch(vreq, 2*req.TopK)
	if err != nil || vq == nil {
		return nil, err
	}
	kq, err := c.branch(kreq, 2*req.TopK)
	if err != nil {
		return nil, err
	}
	if b.native && kq != nil && req.PlainRRF() {
		if b.elastic() {
			return b.rrfRetriever(ctx, c, req, vq, kq)
		}
		return b.nativeHybrid(ctx, c, req, vq, kq)
	}
	var nd bulk
	for _, q := range []clause{vq, kq} {
		if q == nil {
			continue
		}
		j, err := json.Marshal(body(q, req, 2*req.TopK))
		if err != nil {
			return nil, fmt.Errorf("opensearch: encode a search: %w", err)
		}
		nd.buf.WriteString("{}\n")
		nd.buf.Write(j)
		nd.buf.WriteByte('\n')
	}
	var res struct {
		Responses []struct {
			searchAnswer
			Status int `json:"status"`
			Error  *struct {
				Type   string `json:"type"`
				Reason string `json:"reason"`
			} `json:"error"`
		} `json:"responses"`
	}
	if err := b.request(ctx, c, http.MethodPost, "/_msearch", &nd.buf, &res); err != nil {
		return nil, err
	}
	want := 1
	if kq != nil {
		want = 2
	}
	if len(res.Responses) != want {
		return nil, fmt.Errorf("opensearch: msearch answered %d of %d searches", len(res.Responses), want)
	}
	for _, r := range res.Responses {
		if r.Error != nil {
			return nil, &apiError{Engine: b.flavor, Status: r.Status, Type: r.Error.Type, Msg: r.Error.Reason}
		}
	}
	vec, err := ranked(res.Responses[0].Hits.Hits, true, 2*req.TopK)
	if err != nil {
		return nil, err
	}
	var kw []*document.Document
	if kq != nil {
		if kw, err = ranked(res.Responses[1].Hits.Hits, false, 2*req.TopK); err != nil {
			return nil, err
		}
	}
	return store.Fuse(vec, kw, req.Fusion, req.Explain), nil
}

// pipeline is the name of the search pipeline fusing by RRF with rank
// constant k.
func (b *Backend) pipeline(k int) string { return fmt.Sprintf("%s-rrf-%d", b.prefix, k) }

// ensurePipeline creates the RRF pipeline once per backend.
func (b *Backend) ensurePipeline(ctx context.Context, k int) error {
	b.mu.Lock()
	ok := b.pipelines[k]
	b.mu.Unlock()
	if ok {
		return nil
	}
	body := map[string]any{
		"description": "Quarry's hybrid search: reciprocal rank fusion",
		"phase_results_processors": []any{map[string]any{"score-ranker-processor": map[string]any{
			"combination": map[string]any{"technique": "rrf", "rank_constant": k},
		}}},
	}
	if err := b.call(ctx, http.MethodPut, "/_search/pipeline/"+esc(b.pipeline(k)), body, nil); err != nil {
		return fmt.Errorf("opensearch: search pipeline: %w", err)
	}
	b.mu.Lock()
	b.pipelines[k] = true
	b.mu.Unlock()
	return nil
}

func (b *Backend) nativeHybrid(ctx context.Context, c *collection, req store.SearchRequest, vq, kq clause) ([]store.Hit, error) {
	if err := b.ensurePipeline(ctx, req.Fusion.K); err != nil {
		return nil, err
	}
	q := clause{"hybrid": clause{"queries": []any{kq, vq}}}
	var res searchAnswer
	// Each sub-query of a hybrid query finds size hits; 2·k, as Quarry's
	// own fusion reads, so both fuse the same lists.
	err := b.request(ctx, c, http.MethodPost, "/_search?search_pipeline="+esc(b.pipeline(req.Fusion.K)), body(q, req, 2*req.TopK), &res)
	if err != nil {
		return nil, err
	}
	return fused(res.Hits.Hits, req.TopK)
}

// fused are the hits of an engine's fusion, with its scores.
func fused(hs []searchHit, k int) ([]store.Hit, error) {
	docs, err := ranked(hs, false, k)
	if err != nil {
		return nil, err
	}
	hits := make([]store.Hit, len(docs))
	for i, d := range docs {
		hits[i] = store.Hit{Doc: d}
	}
	return hits, nil
}

// rrfRetriever is Elasticsearch's own hybrid search: an rrf retriever over
// a standard retriever (BM25) and a knn retriever, each 2·k deep with the
// filter inside, fused with Quarry's rank constant, so the scores are
// Quarry's. The knn query's clause is the knn retriever's, property for
// property.
func (b *Backend) rrfRetriever(ctx context.Context, c *collection, req store.SearchRequest, vq, kq clause) ([]store.Hit, error) {
	window := min(2*req.TopK+tieSlack, maxSize)
	q := map[string]any{
		"retriever": clause{"rrf": clause{
			"retrievers":       []any{clause{"standard": clause{"query": kq}}, clause{"knn": vq["knn"]}},
			"rank_constant":    req.Fusion.K,
			"rank_window_size": window,
		}},
		"size":    min(req.TopK+tieSlack, maxSize),
		"_source": without(req.Vectors),
	}
	var res searchAnswer
	if err := b.request(ctx, c, http.MethodPost, "/_search", q, &res); err != nil {
		return nil, err
	}
	return fused(res.Hits.Hits, req.TopK)
}

// page is how many hits one scan request reads.
const page = 1000

// scan calls fn with every chunk matching q, in id order, reading the
// fields given.
func (b *Backend) scan(ctx context.Context, c *collection, q clause, fields []string, fn func(searchHit) error) error {
	return b.sorted(ctx, c.index, q, fieldID, map[string]any{"includes": fields}, "", 0, fn)
}

// all calls fn with every document of a side index, in key order.
func (b *Backend) all(ctx context.Context, index string, fn func(searchHit) error) error {
	err := b.sorted(ctx, index, nil, "key", true, "", 0, fn)
	if notFound(err) {
		return nil
	}
	return err
}

// sorted pages through the documents of an index matching q, ascending by
// a keyword field, after a value of it, at most limit (all when 0), with
// the _source filter given.
func (b *Backend) sorted(ctx context.Context, index string, q clause, by string, source any, after string, limit int, fn func(searchHit) error) error {
	n := 0
	for {
		size := page
		if limit > 0 {
			size = min(page, limit-n)
		}
		// A field's name alone sorts ascending.
		body := map[string]any{"size": size, "sort": []any{by}, "_source": source}
		if q != nil {
			body["query"] = q
		}
		if after != "" {
			body["search_after"] = []any{after}
		}
		var res searchAnswer
		if err := b.call(ctx, http.MethodPost, "/"+esc(index)+"/_search", body, &res); err != nil {
			return err
		}
		for _, h := range res.Hits.Hits {
			if err := fn(h); err != nil {
				return err
			}
		}
		n += len(res.Hits.Hits)
		if len(res.Hits.Hits) < size || (limit > 0 && n >= limit) {
			return nil
		}
		last := res.Hits.Hits[len(res.Hits.Hits)-1].Sort
		if len(last) != 1 {
			return fmt.Errorf("opensearch: a sorted page's last hit has no sort value")
		}
		s, ok := last[0].(string)
		if !ok {
			return fmt.Errorf("opensearch: sort value %v is not a string", last[0])
		}
		after = s
	}
}

// Scan implements store.Scanner: pages in id order through search_after,
// so each page costs one request however far the scan has gone.
func (b *Backend) Scan(ctx context.Context, coll string, after string, limit int) ([]*document.Document, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return nil, err
	}
	var out []*document.Document
	err = b.sorted(ctx, c.index, nil, fieldID, true, after, limit, func(h searchHit) error {
		d, err := h.document()
		if err != nil {
			return err
		}
		out = append(out, d)
		return nil
	})
	if notFound(err) {
		b.forget(coll)
		return nil, store.ErrCollectionNotFound
	}
	return out, err
}

var (
	_ store.Backend         = (*Backend)(nil)
	_ store.RequestSearcher = (*Backend)(nil)
	_ store.HybridSearcher  = (*Backend)(nil)
	_ store.SourceSyncer    = (*Backend)(nil)
	_ store.SettingsKeeper  = (*Backend)(nil)
	_ store.Scanner         = (*Backend)(nil)
	_ store.Describer       = (*Backend)(nil)
)
