package mongodb

import (
	"context"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
)

// tieSlack is how many results past k a search asks for, so documents
// tied at the k-th score are cut by id, as every store cuts them, and not
// by Atlas's internal order.
const tieSlack = 8

// Atlas's limits on $vectorSearch.
const maxCandidates = 10000

// SearchVector implements store.Searcher.
func (b *Backend) SearchVector(ctx context.Context, coll string, vec []float32, f filter.Expr, k int) ([]*document.Document, error) {
	return b.SearchRequest(ctx, coll, store.SearchRequest{Mode: store.ModeVector, Embedding: vec, Filter: f, TopK: k})
}

// SearchKeyword implements store.Searcher.
func (b *Backend) SearchKeyword(ctx context.Context, coll string, query string, f filter.Expr, k int) ([]*document.Document, error) {
	return b.SearchRequest(ctx, coll, store.SearchRequest{Mode: store.ModeKeyword, Query: query, Filter: f, TopK: k})
}

// vectorStage is the $vectorSearch stage of a request: Atlas's ANN with
// ten candidates a result (at least 100, at most 10,000), the filter
// inside.
func (c *collection) vectorStage(req store.SearchRequest, k int) (bson.D, bool, error) {
	w, ok, err := c.visible(req.Filter)
	if err != nil || !ok {
		return nil, false, err
	}
	limit := min(k+tieSlack, maxCandidates)
	vs := bson.D{
		{Key: "index", Value: vectorIndex},
		{Key: "path", Value: fEmb},
		{Key: "queryVector", Value: req.Embedding},
		{Key: "numCandidates", Value: min(max(10*limit, 100), maxCandidates)},
		{Key: "limit", Value: limit},
	}
	if w != nil {
		vs = append(vs, bson.E{Key: "filter", Value: w})
	}
	return bson.D{{Key: "$vectorSearch", Value: vs}}, true, nil
}

// searchStage is the $search stage of a request: the text operator over
// q_terms with the query's distinct terms (any of them matches, scored by
// Lucene's BM25), in a compound with the filter; nil when the query has
// no terms or the filter cannot match.
func (c *collection) searchStage(req store.SearchRequest) (bson.D, error) {
	terms, pairs := c.analyzer.AnalyzeQuery(req.Query)
	seen := map[string]bool{}
	var words []string
	for _, t := range append(terms, pairs...) {
		if !seen[t] {
			seen[t] = true
			words = append(words, t)
		}
	}
	if len(words) == 0 {
		return nil, nil
	}
	fop, fold, err := compileSearch(req.Filter, c.cfg.Schema)
	if err != nil || fold == filter.Never {
		return nil, err
	}
	text := bson.D{{Key: "text", Value: bson.D{{Key: "query", Value: strings.Join(words, " ")}, {Key: "path", Value: fTerms}}}}
	s := bson.D{{Key: "index", Value: textIndex}}
	if fold == filter.Always {
		s = append(s, text...)
	} else {
		s = append(s, bson.E{Key: "compound", Value: bson.D{{Key: "must", Value: bson.A{text}}, {Key: "filter", Value: bson.A{fop}}}})
	}
	return bson.D{{Key: "$search", Value: s}}, nil
}

// project keeps what a result needs, with the score under "score".
func project(meta string, vectors bool) bson.D {
	p := bson.D{{Key: fDoc, Value: 1}, {Key: "score", Value: bson.D{{Key: "$meta", Value: meta}}}}
	if vectors {
		p = append(p, bson.E{Key: fEmb, Value: 1})
	}
	return bson.D{{Key: "$project", Value: p}}
}

// run runs a pipeline and returns its results as documents, scored by
// score, in the stores' order, cut at k.
func (b *Backend) run(ctx context.Context, c *collection, pipeline bson.A, vectors bool, k int, score func(float64) float64) ([]*document.Document, error) {
	cur, err := c.coll.Aggregate(ctx, pipeline)
	if err != nil {
		return nil, fmt.Errorf("mongodb: search %s: %w", c.cfg.Name, err)
	}
	var recs []chunkRecord
	if err := cur.All(ctx, &recs); err != nil {
		return nil, fmt.Errorf("mongodb: search %s: %w", c.cfg.Name, err)
	}
	out := make([]*document.Document, 0, len(recs))
	for i := range recs {
		d, err := recs[i].document(vectors)
		if err != nil {
			return nil, err
		}
		d.SetScore(score(recs[i].Score))
		out = append(out, d)
	}
	store.SortDocuments(out)
	if len(out) > k {
		out = out[:k]
	}
	return out, nil
}

// cosine is the similarity behind a vectorSearchScore: Atlas scores
// cosine as (1 + cos) / 2.
func cosine(score float64) float64 { return 2*score - 1 }

func same(score float64) float64 { return score }

// SearchRequest implements store.RequestSearcher.
func (b *Backend) SearchRequest(ctx context.Context, coll string, req store.SearchRequest) ([]*document.Document, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return nil, err
	}
	if req.Mode == store.ModeKeyword {
		s, err := c.searchStage(req)
		if err != nil || s == nil {
			return nil, err
		}
		return b.run(ctx, c, bson.A{s, bson.D{{Key: "$limit", Value: req.TopK + tieSlack}}, project("searchScore", req.Vectors)}, req.Vectors, req.TopK, same)
	}
	s, ok, err := c.vectorStage(req, req.TopK)
	if err != nil || !ok {
		return nil, err
	}
	return b.run(ctx, c, bson.A{s, project("vectorSearchScore", req.Vectors)}, req.Vectors, req.TopK, cosine)
}

// SearchHybrid implements store.HybridSearcher: both branches at once,
// 2·k each with the filter inside, fused as every store fuses them. With
// hybrid=mongodb, a plain RRF request is one $rankFusion of the two
// pipelines, merged by MongoDB; the results keep its order and scores.
func (b *Backend) SearchHybrid(ctx context.Context, coll string, req store.SearchRequest) ([]store.Hit, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return nil, err
	}
	if b.native && req.PlainRRF() {
		return b.rankFusion(ctx, c, req)
	}
	return store.FuseBranches(ctx, req, func(ctx context.Context, r store.SearchRequest) ([]*document.Document, error) {
		return b.SearchRequest(ctx, coll, r)
	})
}

func (b *Backend) rankFusion(ctx context.Context, c *collection, req store.SearchRequest) ([]store.Hit, error) {
	vs, ok, err := c.vectorStage(req, 2*req.TopK)
	if err != nil || !ok {
		return nil, err
	}
	ss, err := c.searchStage(req)
	if err != nil {
		return nil, err
	}
	pipelines := bson.D{{Key: "vector", Value: bson.A{vs}}}
	if ss != nil {
		pipelines = append(pipelines, bson.E{Key: "text", Value: bson.A{ss, bson.D{{Key: "$limit", Value: 2*req.TopK + tieSlack}}}})
	}
	pipeline := bson.A{
		bson.D{{Key: "$rankFusion", Value: bson.D{{Key: "input", Value: bson.D{{Key: "pipelines", Value: pipelines}}}}}},
		bson.D{{Key: "$limit", Value: req.TopK}},
		project("score", req.Vectors),
	}
	cur, err := c.coll.Aggregate(ctx, pipeline)
	if err != nil {
		return nil, fmt.Errorf("mongodb: search %s: %w", c.cfg.Name, err)
	}
	var recs []chunkRecord
	if err := cur.All(ctx, &recs); err != nil {
		return nil, fmt.Errorf("mongodb: search %s: %w", c.cfg.Name, err)
	}
	hits := make([]store.Hit, 0, len(recs))
	for i := range recs {
		d, err := recs[i].document(req.Vectors)
		if err != nil {
			return nil, err
		}
		d.SetScore(recs[i].Score)
		hits = append(hits, store.Hit{Doc: d})
	}
	return hits, nil
}
