// Package eval measures retrieval and answer quality: BEIR-layout datasets
// and the standard ranking metrics (nDCG@k, Recall@k, MRR@k, MAP, P@k)
// computed as trec_eval computes them; golden sets of questions answered by
// a rag.Pipeline and scored on faithfulness, answer relevancy and
// contextual precision by an LLM judge or a deterministic one; gates; and
// self-contained HTML reports.
//
// Conventions, as trec_eval's: gains are the qrels grades used linearly
// (nDCG's gain is the grade, not 2^grade − 1); a document is relevant when
// its grade is positive; unjudged documents count as non-relevant; a query
// counts only when it has at least one relevant judgement, and a counted
// query with no results scores 0 (trec_eval -c); a document repeated in a
// ranking counts once, at its first rank. Rankings are evaluated in the
// order given; Rank orders scored results by score descending, then id
// ascending — Quarry's result order. (trec_eval itself breaks score ties
// by descending document id.)
package eval

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Run holds rankings: query id → document ids, best first.
type Run map[string][]string

// Scored is a document with a retrieval score.
type Scored struct {
	ID    string
	Score float64
}

// Rank returns the ids of docs ordered by score descending, ties by id
// ascending.
func Rank(docs []Scored) []string {
	s := slices.Clone(docs)
	slices.SortFunc(s, func(a, b Scored) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	ids := make([]string, len(s))
	for i, d := range s {
		ids[i] = d.ID
	}
	return ids
}

type kind int

const (
	kindNDCG kind = iota
	kindRecall
	kindPrecision
	kindMRR
	kindMAP
)

// Metric is a per-query ranking metric with a rank cutoff k; k = 0 means
// the whole ranking.
type Metric struct {
	kind kind
	k    int
}

// NDCG is nDCG@k with linear gains: DCG@k over the ideal DCG@k of the
// query's judgements.
func NDCG(k int) Metric { return Metric{kindNDCG, k} }

// Recall is Recall@k: relevant documents in the top k over all relevant
// documents.
func Recall(k int) Metric { return Metric{kindRecall, k} }

// Precision is P@k: relevant documents in the top k over k, however many
// documents were returned.
func Precision(k int) Metric { return Metric{kindPrecision, k} }

// MRR is the reciprocal rank of the first relevant document within the top
// k, 0 when there is none; k = 0 looks at the whole ranking.
func MRR(k int) Metric { return Metric{kindMRR, k} }

// MAP is average precision: the mean over relevant documents of the
// precision at each one's rank (0 for those not retrieved within the top
// k); k = 0 looks at the whole ranking, trec_eval's "map".
func MAP(k int) Metric { return Metric{kindMAP, k} }

// String is the metric's name as ParseMetric reads it: "ndcg@10",
// "recall@100", "p@10", "mrr@10", "map".
func (m Metric) String() string {
	name := [...]string{"ndcg", "recall", "p", "mrr", "map"}[m.kind]
	if m.k == 0 {
		return name
	}
	return name + "@" + strconv.Itoa(m.k)
}

// ParseMetric reads a metric name: ndcg@K, recall@K, p@K (or precision@K),
// mrr@K, map; without @K a metric looks at the whole ranking. Names are
// case-insensitive.
func ParseMetric(s string) (Metric, error) {
	name, cut, hasCut := strings.Cut(strings.ToLower(strings.TrimSpace(s)), "@")
	k := 0
	if hasCut {
		var err error
		if k, err = strconv.Atoi(cut); err != nil || k <= 0 {
			return Metric{}, fmt.Errorf("eval: metric %q: cutoff must be a positive integer", s)
		}
	}
	var m Metric
	switch name {
	case "ndcg":
		m.kind = kindNDCG
	case "recall":
		m.kind = kindRecall
	case "p", "precision":
		m.kind = kindPrecision
	case "mrr":
		m.kind = kindMRR
	case "map":
		m.kind = kindMAP
	default:
		return Metric{}, fmt.Errorf("eval: unknown metric %q (use ndcg@k, recall@k, p@k, mrr@k or map)", s)
	}
	m.k = k
	return m, nil
}

// Score evaluates one query's ranking against its judgements (document id
// → grade). It is 0 when the judgements hold no relevant document.
func (m Metric) Score(ranking []string, judged map[string]int) float64 {
	nrel := 0
	for _, g := range judged {
		if g > 0 {
			nrel++
		}
	}
	if nrel == 0 {
		return 0
	}
	depth := len(ranking)
	if m.k > 0 {
		depth = min(depth, m.k)
	}
	seen := make(map[string]bool, depth)
	hits, dcg, sumPrec, rr := 0, 0.0, 0.0, 0.0
	rank := 0
	for _, id := range ranking {
		if rank == depth {
			break
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		rank++
		g := judged[id]
		if g <= 0 {
			continue
		}
		hits++
		dcg += float64(g) / math.Log2(float64(rank+1))
		sumPrec += float64(hits) / float64(rank)
		if rr == 0 {
			rr = 1 / float64(rank)
		}
	}
	switch m.kind {
	case kindNDCG:
		return dcg / idealDCG(judged, m.k)
	case kindRecall:
		return float64(hits) / float64(nrel)
	case kindPrecision:
		if m.k == 0 {
			if rank == 0 {
				return 0
			}
			return float64(hits) / float64(rank)
		}
		return float64(hits) / float64(m.k)
	case kindMRR:
		return rr
	default:
		return sumPrec / float64(nrel)
	}
}

// idealDCG is the DCG@k of the judgements sorted by grade.
func idealDCG(judged map[string]int, k int) float64 {
	var gains []int
	for _, g := range judged {
		if g > 0 {
			gains = append(gains, g)
		}
	}
	slices.SortFunc(gains, func(a, b int) int { return b - a })
	if k > 0 && len(gains) > k {
		gains = gains[:k]
	}
	ideal := 0.0
	for i, g := range gains {
		ideal += float64(g) / math.Log2(float64(i+2))
	}
	return ideal
}

// Result is an evaluation of a run.
type Result struct {
	// Metrics are the metrics asked for, in order.
	Metrics []Metric
	// Queries is the number of counted queries: those with at least one
	// relevant judgement.
	Queries int
	// Mean maps a metric's name to its mean over counted queries.
	Mean map[string]float64
	// PerQuery maps a counted query id to each metric's value.
	PerQuery map[string]map[string]float64
}

// Evaluate scores run against qrels. Queries without a relevant judgement
// are skipped; judged queries missing from run score 0; queries in run but
// not in qrels are ignored.
func Evaluate(qrels Qrels, run Run, metrics ...Metric) Result {
	res := Result{Metrics: metrics, Mean: map[string]float64{}, PerQuery: map[string]map[string]float64{}}
	qids := make([]string, 0, len(qrels))
	for q, judged := range qrels {
		for _, g := range judged {
			if g > 0 {
				qids = append(qids, q)
				break
			}
		}
	}
	slices.Sort(qids) // a fixed summation order: means are reproducible to the bit
	for _, q := range qids {
		per := make(map[string]float64, len(metrics))
		for _, m := range metrics {
			v := m.Score(run[q], qrels[q])
			per[m.String()] = v
			res.Mean[m.String()] += v
		}
		res.PerQuery[q] = per
	}
	res.Queries = len(qids)
	for _, m := range metrics {
		if res.Queries > 0 {
			res.Mean[m.String()] /= float64(res.Queries)
		} else {
			res.Mean[m.String()] = 0
		}
	}
	return res
}
