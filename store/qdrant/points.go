package qdrant

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/internal/sparsebm25"
)

// sourceKey names a source in _quarry_source: its type and name, which
// cannot contain the separator.
func sourceKey(typ, name string) string { return typ + "\x1f" + name }

// point is a point as the REST API writes it.
type point struct {
	ID      string         `json:"id"`
	Vector  map[string]any `json:"vector"`
	Payload map[string]any `json:"payload,omitempty"`
}

// sparse is a sparse vector.
type sparse = sparsebm25.Vector

// docVector is a document's sparse vector of BM25 term weights.
func (c *collection) docVector(d *document.Document) *sparse {
	return sparsebm25.Doc(c.analyzer, d, c.bm25, 0)
}

// queryVector is a query's sparse vector: weight 1 per distinct term, so
// with the idf modifier a point scores Σ idf·weight over the terms it
// shares with the query, which is BM25.
func (c *collection) queryVector(query string) *sparse {
	dims := sparsebm25.Query(c.analyzer, query)
	if len(dims) == 0 {
		return nil
	}
	slices.Sort(dims)
	v := &sparse{Indices: dims, Values: make([]float32, len(dims))}
	for n := range v.Values {
		v.Values[n] = 1
	}
	return v
}

// chunkPoint makes a document's point.
func (c *collection) chunkPoint(d *document.Document) (point, error) {
	doc, err := store.EncodeDocument(d)
	if err != nil {
		return point{}, err
	}
	payload := map[string]any{
		keyKind:   kindChunk,
		keyID:     d.ID,
		keyDoc:    string(doc),
		keySource: sourceKey(d.SourceType, d.SourceName),
		keySType:  d.SourceType,
		keySName:  d.SourceName,
	}
	if c.cfg.Schema != nil {
		for _, f := range c.cfg.Schema.Fields {
			if v, ok := d.Metadata[f.Name]; f.Filterable && ok && v != nil {
				payload[f.Name] = v
			}
		}
	}
	vec := map[string]any{denseVector: d.Embedding, rawVector: d.Embedding}
	if sv := c.docVector(d); sv != nil {
		vec[sparseVector] = sv
	}
	return point{ID: pointID(kindChunk, d.ID), Vector: vec, Payload: payload}, nil
}

func (c *collection) chunkPoints(docs []*document.Document) ([]point, error) {
	out := make([]point, len(docs))
	for i, d := range docs {
		p, err := c.chunkPoint(d)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

// record is a point as the REST API returns it.
type record struct {
	ID      string  `json:"id"`
	Score   float64 `json:"score"`
	Payload struct {
		Kind   string `json:"_quarry_kind"`
		ID     string `json:"_quarry_id"`
		Source string `json:"_quarry_source"`
		Doc    string `json:"_quarry_doc"`
		State  string `json:"_quarry_state"`
		Key    string `json:"_quarry_key"`
		Value  string `json:"_quarry_value"`
	} `json:"payload"`
	Vector map[string]json.RawMessage `json:"vector"`
}

func (r *record) document() (*document.Document, error) {
	d, err := store.DecodeDocument([]byte(r.Payload.Doc))
	if err != nil {
		return nil, fmt.Errorf("qdrant: point %s: %w", r.ID, err)
	}
	if raw, ok := r.Vector[rawVector]; ok {
		if err := json.Unmarshal(raw, &d.Embedding); err != nil {
			return nil, fmt.Errorf("qdrant: document %s: embedding: %w", d.ID, err)
		}
	}
	return d, nil
}

// docPayload is the payload a read of documents asks for.
var docPayload = []string{keyDoc}

func withVector(vectors bool) any {
	if vectors {
		return []string{rawVector}
	}
	return false
}

// Upsert implements store.Writer: one request, which Qdrant applies as
// one operation.
func (b *Backend) Upsert(ctx context.Context, coll string, docs []*document.Document) error {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return err
	}
	pts, err := c.chunkPoints(docs)
	if err != nil {
		return err
	}
	return b.request(ctx, c, http.MethodPut, "/points?wait=true", map[string]any{"points": pts}, nil)
}

// Delete implements store.Writer: the matching documents are counted,
// then deleted by the same filter in one operation. A document another
// writer adds between the two is deleted but not counted.
func (b *Backend) Delete(ctx context.Context, coll string, f filter.Expr) (int, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return 0, err
	}
	vf, ok, err := c.visible(kindChunk, f)
	if err != nil || !ok {
		return 0, err
	}
	// The matching chunks' sources lose their states in the same batch,
	// so a later sync writes them again instead of skipping them.
	n := 0
	seen := map[string]bool{}
	var sources []any
	err = b.scroll(ctx, c, vf, []string{keySource}, func(rs []record) error {
		n += len(rs)
		for _, r := range rs {
			if k := r.Payload.Source; k != "" && !seen[k] {
				seen[k] = true
				sources = append(sources, k)
			}
		}
		return nil
	})
	if err != nil || n == 0 {
		return 0, err
	}
	var ops []any
	if len(sources) > 0 {
		ops = append(ops, deleteOp(cond{"must": []any{
			cond{"key": keyKind, "match": cond{"value": kindSource}},
			cond{"key": keySource, "match": cond{"any": sources}},
		}}))
	}
	ops = append(ops, deleteOp(vf))
	if err := b.request(ctx, c, http.MethodPost, "/points/batch?wait=true", map[string]any{"operations": ops}, nil); err != nil {
		return 0, err
	}
	return n, nil
}

// deleteOp is a batch operation deleting the points a filter matches.
func deleteOp(f cond) map[string]any {
	return map[string]any{"delete": map[string]any{"filter": f}}
}

func (b *Backend) count(ctx context.Context, c *collection, vf cond) (int, error) {
	var res struct {
		Count int `json:"count"`
	}
	if err := b.request(ctx, c, http.MethodPost, "/points/count", map[string]any{"filter": vf, "exact": true}, &res); err != nil {
		return 0, err
	}
	return res.Count, nil
}

// Count implements store.Searcher.
func (b *Backend) Count(ctx context.Context, coll string, f filter.Expr) (int, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return 0, err
	}
	vf, ok, err := c.visible(kindChunk, f)
	if err != nil || !ok {
		return 0, err
	}
	return b.count(ctx, c, vf)
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
	pids := make([]string, len(ids))
	for i, id := range ids {
		pids[i] = pointID(kindChunk, id)
	}
	var recs []record
	err = b.request(ctx, c, http.MethodPost, "/points", map[string]any{
		"ids": pids, "with_payload": []string{keyKind, keyDoc}, "with_vector": []string{rawVector}}, &recs)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*document.Document, len(recs))
	for i := range recs {
		if recs[i].Payload.Kind != kindChunk {
			continue
		}
		d, err := recs[i].document()
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

// tieSlack is how many results past k a search asks for, so documents
// tied at the k-th score are cut by id, as every store cuts them, and not
// by Qdrant's internal order.
const tieSlack = 8

// maxLimit bounds one query's limit.
const maxLimit = store.MaxTopK + tieSlack

// SearchVector implements store.Searcher.
func (b *Backend) SearchVector(ctx context.Context, coll string, vec []float32, f filter.Expr, k int) ([]*document.Document, error) {
	return b.SearchRequest(ctx, coll, store.SearchRequest{Mode: store.ModeVector, Embedding: vec, Filter: f, TopK: k})
}

// SearchKeyword implements store.Searcher.
func (b *Backend) SearchKeyword(ctx context.Context, coll string, query string, f filter.Expr, k int) ([]*document.Document, error) {
	return b.SearchRequest(ctx, coll, store.SearchRequest{Mode: store.ModeKeyword, Query: query, Filter: f, TopK: k})
}

// query is one body of the Query API; nil when the branch can find
// nothing (a filter that matches nothing, a query without terms).
func (c *collection) query(req store.SearchRequest, k int) (map[string]any, error) {
	vf, ok, err := c.visible(kindChunk, req.Filter)
	if err != nil || !ok {
		return nil, err
	}
	q := map[string]any{"filter": vf, "limit": min(k+tieSlack, maxLimit),
		"with_payload": docPayload, "with_vector": withVector(req.Vectors)}
	if req.Mode == store.ModeKeyword {
		sv := c.queryVector(req.Query)
		if sv == nil {
			return nil, nil
		}
		q["query"], q["using"] = sv, sparseVector
	} else {
		q["query"], q["using"] = req.Embedding, denseVector
	}
	return q, nil
}

// SearchRequest implements store.RequestSearcher.
func (b *Backend) SearchRequest(ctx context.Context, coll string, req store.SearchRequest) ([]*document.Document, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return nil, err
	}
	q, err := c.query(req, req.TopK)
	if err != nil || q == nil {
		return nil, err
	}
	var res struct {
		Points []record `json:"points"`
	}
	if err := b.request(ctx, c, http.MethodPost, "/points/query", q, &res); err != nil {
		return nil, err
	}
	return ranked(res.Points, req.TopK)
}

// ranked turns scored points into documents in the stores' order, cut
// at k.
func ranked(recs []record, k int) ([]*document.Document, error) {
	out := make([]*document.Document, 0, len(recs))
	for i := range recs {
		d, err := recs[i].document()
		if err != nil {
			return nil, err
		}
		d.SetScore(recs[i].Score)
		out = append(out, d)
	}
	store.SortDocuments(out)
	if len(out) > k {
		out = out[:k]
	}
	return out, nil
}

// SearchHybrid implements store.HybridSearcher: both branches, 2·k each
// with the filter inside, in one batch query, fused as every store fuses
// them. With hybrid=qdrant, an unweighted RRF without explanations is
// fused by Qdrant instead: its RRF scores 1/(k′ + rank − 1), so k′ is
// Quarry's constant plus one and the scores are Quarry's (to float32).
func (b *Backend) SearchHybrid(ctx context.Context, coll string, req store.SearchRequest) ([]store.Hit, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return nil, err
	}
	vreq, kreq := req, req
	vreq.Mode, kreq.Mode = store.ModeVector, store.ModeKeyword
	vq, err := c.query(vreq, 2*req.TopK)
	if err != nil || vq == nil {
		return nil, err
	}
	kq, err := c.query(kreq, 2*req.TopK)
	if err != nil {
		return nil, err
	}
	if b.native && kq != nil && req.PlainRRF() {
		return b.nativeHybrid(ctx, c, req, vq, kq)
	}
	searches := []any{vq}
	if kq != nil {
		searches = append(searches, kq)
	}
	var res []struct {
		Points []record `json:"points"`
	}
	if err := b.request(ctx, c, http.MethodPost, "/points/query/batch", map[string]any{"searches": searches}, &res); err != nil {
		return nil, err
	}
	if len(res) != len(searches) {
		return nil, fmt.Errorf("qdrant: batch query answered %d of %d searches", len(res), len(searches))
	}
	vec, err := ranked(res[0].Points, 2*req.TopK)
	if err != nil {
		return nil, err
	}
	var kw []*document.Document
	if kq != nil {
		if kw, err = ranked(res[1].Points, 2*req.TopK); err != nil {
			return nil, err
		}
	}
	return store.Fuse(vec, kw, req.Fusion, req.Explain), nil
}

func (b *Backend) nativeHybrid(ctx context.Context, c *collection, req store.SearchRequest, vq, kq map[string]any) ([]store.Hit, error) {
	prefetch := func(q map[string]any) map[string]any {
		return map[string]any{"query": q["query"], "using": q["using"], "filter": q["filter"], "limit": 2 * req.TopK}
	}
	body := map[string]any{
		"prefetch":     []any{prefetch(vq), prefetch(kq)},
		"query":        map[string]any{"rrf": map[string]any{"k": req.Fusion.K + 1}},
		"filter":       vq["filter"],
		"limit":        min(req.TopK+tieSlack, maxLimit),
		"with_payload": docPayload,
		"with_vector":  withVector(req.Vectors),
	}
	var res struct {
		Points []record `json:"points"`
	}
	if err := b.request(ctx, c, http.MethodPost, "/points/query", body, &res); err != nil {
		return nil, err
	}
	docs, err := ranked(res.Points, req.TopK)
	if err != nil {
		return nil, err
	}
	hits := make([]store.Hit, len(docs))
	for i, d := range docs {
		hits[i] = store.Hit{Doc: d}
	}
	return hits, nil
}

// scroll reads every point of a kind matching vf, a page at a time.
func (b *Backend) scroll(ctx context.Context, c *collection, vf cond, payload []string, fn func([]record) error) error {
	var offset any
	for {
		body := map[string]any{"filter": vf, "limit": 1000, "with_payload": payload, "with_vector": false}
		if offset != nil {
			body["offset"] = offset
		}
		var res struct {
			Points []record `json:"points"`
			Next   any      `json:"next_page_offset"`
		}
		if err := b.request(ctx, c, http.MethodPost, "/points/scroll", body, &res); err != nil {
			return err
		}
		if err := fn(res.Points); err != nil {
			return err
		}
		if res.Next == nil || len(res.Points) == 0 {
			return nil
		}
		offset = res.Next
	}
}

func kindFilter(kind string) cond {
	return cond{"must": []any{cond{"key": keyKind, "match": cond{"value": kind}}}}
}

// Scan implements store.Scanner. Qdrant orders points by their own ids
// (hashes here), so each page lists every document id to find the next
// ones in id order: a scan of n documents reads n ids per page.
func (b *Backend) Scan(ctx context.Context, coll string, after string, limit int) ([]*document.Document, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return nil, err
	}
	var ids []string
	err = b.scroll(ctx, c, kindFilter(kindChunk), []string{keyID}, func(rs []record) error {
		for _, r := range rs {
			if r.Payload.ID > after {
				ids = append(ids, r.Payload.ID)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(ids)
	if len(ids) > limit {
		ids = ids[:limit]
	}
	return b.Get(ctx, coll, ids)
}
