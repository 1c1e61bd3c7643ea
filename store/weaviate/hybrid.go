package weaviate

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/quarry-rag/quarry/store"
)

// nativeHybrid runs a hybrid search with Weaviate's own fusion (the
// hybrid=weaviate option). RRF becomes rankedFusion with alpha the vector
// branch's share of the two weights, convex becomes relativeScoreFusion
// with the same alpha. Weaviate's rankedFusion counts ranks from 0
// (weight/(60+rank−1)) and ignores the RRF constant, so its scores are not
// Quarry's; Collection.Search orders them by that score, then id.
func (b *Backend) nativeHybrid(ctx context.Context, c *collection, req store.SearchRequest, terms []string) ([]store.Hit, error) {
	cf, err := userFilter(c, req.Filter)
	if err != nil || cf.t == never {
		return nil, err
	}
	alpha, fusion, weights := req.Fusion.Alpha, "relativeScoreFusion", [2]float64{}
	if req.Fusion.Method != store.FusionConvex {
		vw, kw := req.Fusion.VectorWeight, req.Fusion.KeywordWeight
		alpha, fusion, weights = vw/(vw+kw), "rankedFusion", [2]float64{vw / (vw + kw), kw / (vw + kw)}
	}
	var hits []store.Hit
	err = b.read(ctx, c.cfg.Name, func(s snapshot) error {
		w, err := gqlValue(and(cf.w, s.visible(false)))
		if err != nil {
			return err
		}
		query, _ := json.Marshal(strings.Join(terms, " "))
		limit := min(req.TopK+tieSlack, maxResults)
		q := fmt.Sprintf(`{Get{%s(hybrid:{query:%s,vector:%s,alpha:%s,fusionType:%s,properties:["q_terms"]},where:%s,limit:%d%s){%s}}}`,
			c.class, query, vectorLiteral(req.Embedding), strconv.FormatFloat(alpha, 'g', -1, 64), fusion, w, limit, b.gqlConsistency(),
			strings.Replace(hitFields(req.Vectors), "score", "score explainScore", 1))
		var data struct {
			Get map[string][]hit `json:"Get"`
		}
		if err := b.c.graphql(ctx, q, &data); err != nil {
			return err
		}
		rows := data.Get[c.class]
		docs, from, err := newest(rows, keywordScore)
		if err != nil {
			return err
		}
		hits = hits[:0]
		for i, d := range docs {
			h := store.Hit{Doc: d}
			if req.Explain {
				h.Explain = explainNative(rows[from[i]].Additional.ExplainScore, req.Fusion.Method, weights)
			}
			hits = append(hits, h)
		}
		return nil
	})
	return hits, err
}

var (
	rankedRE   = regexp.MustCompile(`Result Set (vector|keyword)[^)]*\) Document \S+ contributed ([0-9.eE+-]+)`)
	relativeRE = regexp.MustCompile(`Result Set (vector|keyword)[^)]*\) Document \S+: original score ([0-9.eE+-]+), normalized score: ([0-9.eE+-]+)`)
)

// explainNative reads Weaviate's explainScore: for rankedFusion each
// branch's contribution w/(60+i), from which its 1-based rank follows; for
// relativeScoreFusion each branch's original score. What it cannot read
// is left out.
func explainNative(s string, method store.FusionMethod, weights [2]float64) *store.Explanation {
	e := &store.Explanation{Fusion: method}
	if e.Fusion == "" {
		e.Fusion = store.FusionRRF
	}
	set := func(branch string, bs *store.BranchScore) {
		if branch == "vector" {
			e.Vector = bs
		} else {
			e.Keyword = bs
		}
	}
	if method == store.FusionConvex {
		for _, m := range relativeRE.FindAllStringSubmatch(s, -1) {
			if f, err := strconv.ParseFloat(m[2], 64); err == nil {
				set(m[1], &store.BranchScore{Score: f})
			}
		}
		return e
	}
	for _, m := range rankedRE.FindAllStringSubmatch(s, -1) {
		f, err := strconv.ParseFloat(m[2], 64)
		if err != nil || f <= 0 {
			continue
		}
		w := weights[0]
		if m[1] == "keyword" {
			w = weights[1]
		}
		set(m[1], &store.BranchScore{Rank: int(math.Round(w/f)) - 59, Score: f})
	}
	return e
}
