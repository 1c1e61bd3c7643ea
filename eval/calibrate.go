package eval

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/retrieve"
	"github.com/quarry-rag/quarry/store"
)

// Calibration defaults.
const (
	// CalibrationQueries is how many pseudo-queries a calibration asks.
	CalibrationQueries = 300
	// MinCalibrationDocuments is the smallest collection calibrated: with
	// fewer chunks every configuration finds its chunk and the figures
	// cannot tell the configurations apart.
	MinCalibrationDocuments = 200
	// calibrationTerms is the length of a pseudo-query, in words.
	calibrationTerms = 6
	// calibrationSample is about how many chunks the words' document
	// frequencies are counted on.
	calibrationSample = 20_000
	// calibrationNoise is the chance that a pseudo-query's word comes from
	// another chunk instead of its own.
	calibrationNoise = 0.5
	// calibrationMetric ranks the configurations.
	calibrationK = 10
)

// ErrTooSmall is returned when a collection holds too few chunks to be
// calibrated.
var ErrTooSmall = errors.New("too few chunks to calibrate")

// CalibrationConfigs are the configurations a calibration chooses among,
// in order of the vector branch's weight: keyword, hybrid with convex
// fusion at vector weights 0.1 to 0.5, and hybrid with reciprocal rank
// fusion, which weighs the branches equally by rank. Vector alone is not
// among them: it never won on a corpus Quarry was measured on, offline or
// not.
func CalibrationConfigs() []Config {
	out := []Config{{Name: "keyword", Mode: store.ModeKeyword}}
	for _, a := range []float64{0.1, 0.2, 0.3, 0.5} {
		out = append(out, Config{Name: fmt.Sprintf("hybrid-convex-%.1f", a), Mode: store.ModeHybrid,
			Fusion: store.Fusion{Method: store.FusionConvex, Alpha: a}})
	}
	return append(out, Config{Name: "hybrid", Mode: store.ModeHybrid})
}

// CalibrateOptions tune Calibrate; the zero value is ready to use.
type CalibrateOptions struct {
	// Queries is the number of pseudo-queries, CalibrationQueries when 0.
	Queries int
	// Rule is the configuration the fixed rule would run
	// (retrieve.DefaultMode); a challenger replaces it only by a clear
	// margin. Keyword when empty.
	Rule string
}

// Calibrate measures which configuration ranks a collection's own text
// best and returns the choice with every configuration's figure.
//
// Pseudo-queries are known-item queries made from the collection itself
// (Azzopardi, de Rijke and Balog, "Building simulated queries for
// known-item topics", SIGIR 2007): a chunk is drawn (the same chunks on
// every run: those whose id hashes lowest), and a query is six words, each
// one of the chunk's own, drawn with a chance proportional to its tf·idf —
// the words a person who had read the chunk would use to find it again —
// or, half the time, a word of another chunk: people misremember, and
// queries made of the chunk's own best words alone are found by every
// configuration, so they cannot tell them apart. The chunk is the one
// relevant result. Every configuration ranks every query and is scored by
// nDCG@10.
//
// The choice starts at the fixed rule's configuration and moves one step
// at a time along CalibrationConfigs (more or less weight on the vector
// branch) while the next step beats the current choice by more than the
// standard error of the paired differences and by 0.005 at least:
// pseudo-queries are not people's questions, and each step away from the
// rule must be earned by more than noise.
func Calibrate(ctx context.Context, c *store.Collection, e embed.Embedder, opt CalibrateOptions) (*retrieve.Calibration, error) {
	n := opt.Queries
	if n <= 0 {
		n = CalibrationQueries
	}
	rule := opt.Rule
	if rule == "" {
		rule = "keyword"
	}
	start := time.Now()
	an, err := bm25.NewAnalyzer(bm25.AnalyzerConfig{Language: c.Config().Language})
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	queries, qrels, docs, err := pseudoQueries(ctx, c, an, n, calibrationSample)
	if err != nil {
		return nil, err
	}
	if docs < MinCalibrationDocuments {
		return nil, fmt.Errorf("calibrate %q: %w: it holds %d, calibration needs %d", c.Name(), ErrTooSmall, docs, MinCalibrationDocuments)
	}
	cfgs := CalibrationConfigs()
	if e == nil || e.Model() != c.Config().Model {
		cfgs = cfgs[:1] // keyword alone needs no embedder
	}
	metric := NDCG(calibrationK)
	cal := &retrieve.Calibration{Metric: metric.String(), Queries: len(queries), Documents: docs,
		Model: c.Config().Model.String(), Rule: rule}
	per := make([]map[string]map[string]float64, len(cfgs))
	for i, cfg := range cfgs {
		run, err := Retrieve(ctx, c, e, queries, cfg, calibrationK)
		if err != nil {
			return nil, fmt.Errorf("calibrate %q: %s: %w", c.Name(), cfg.Name, err)
		}
		res := Evaluate(qrels, run, metric)
		per[i] = res.PerQuery
		cal.Scores = append(cal.Scores, retrieve.ConfigScore{Name: cfg.Name, Mode: cfg.Mode, Fusion: cfg.Fusion, Score: res.Mean[metric.String()]})
	}
	ruleAt := slices.IndexFunc(cal.Scores, func(s retrieve.ConfigScore) bool { return s.Name == rule })
	if ruleAt < 0 {
		return nil, fmt.Errorf("calibrate: the rule's configuration %q is not a candidate", rule)
	}
	best := climb(ruleAt, per, metric.String())
	cal.Choice = cal.Scores[best]
	cal.Seconds = time.Since(start).Seconds()
	cal.At = time.Now().UTC().Truncate(time.Second)
	return cal, nil
}

// climb walks from configuration at towards its neighbours in
// CalibrationConfigs order while a neighbour is clearly better than where
// it stands, and returns where it stops.
func climb(at int, per []map[string]map[string]float64, metric string) int {
	for {
		next := at
		for _, n := range []int{at - 1, at + 1} {
			if n < 0 || n >= len(per) || !clearlyBetter(per[n], per[at], metric) {
				continue
			}
			if next == at || mean(per[n], metric) > mean(per[next], metric) {
				next = n
			}
		}
		if next == at {
			return at
		}
		at = next
	}
}

// mean is the mean of one metric over the queries, summed in a fixed order.
func mean(per map[string]map[string]float64, metric string) float64 {
	if len(per) == 0 {
		return 0
	}
	xs := make([]float64, 0, len(per))
	for _, s := range per {
		xs = append(xs, s[metric])
	}
	slices.Sort(xs)
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// clearlyBetter reports whether a beats b on the same queries by more
// than the standard error of the paired differences, and by 0.005 at
// least.
func clearlyBetter(a, b map[string]map[string]float64, metric string) bool {
	var diffs []float64
	for q, s := range a {
		diffs = append(diffs, s[metric]-b[q][metric])
	}
	if len(diffs) < 2 {
		return false
	}
	slices.Sort(diffs) // a fixed summation order
	mean := 0.0
	for _, d := range diffs {
		mean += d
	}
	mean /= float64(len(diffs))
	ss := 0.0
	for _, d := range diffs {
		ss += (d - mean) * (d - mean)
	}
	se := math.Sqrt(ss / float64(len(diffs)-1) / float64(len(diffs)))
	return mean >= 0.005 && mean > se
}

// PseudoQueries draws n known-item queries from a collection (see
// Calibrate) and returns them with their judgements and the number of
// chunks the collection holds.
func PseudoQueries(ctx context.Context, c *store.Collection, an *bm25.Analyzer, n int) ([]Query, Qrels, int, error) {
	return pseudoQueries(ctx, c, an, n, calibrationSample)
}

// pseudoQueries is PseudoQueries with document frequencies counted on
// about sample chunks.
func pseudoQueries(ctx context.Context, c *store.Collection, an *bm25.Analyzer, n, sample int) ([]Query, Qrels, int, error) {
	type drawn struct {
		key   uint64
		id    string
		words []string // surface words in text order
	}
	total, err := c.Count(ctx, nil)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("calibrate %q: %w", c.Name(), err)
	}
	// Document frequencies come from the chunks whose keys fall under cut,
	// about calibrationSample of them (all of a smaller collection): the
	// words' idf needs no more, and a chunk outside the sample that is not
	// drawn costs one hash. The drawn chunks, the lowest keys, are in it.
	cut := uint64(math.MaxUint64)
	if total > sample {
		cut = uint64(float64(math.MaxUint64) / float64(total) * float64(sample))
	}
	terms := termCache{an: an, m: map[string]string{}}
	df := map[string]int{}
	sampled := 0
	var picked []drawn // the n lowest keys, kept sorted
	docs := 0
	err = c.Scan(ctx, 500, func(page []*document.Document) error {
		for _, d := range page {
			docs++
			k := idKey(d.ID)
			inSample := k < cut
			candidate := len(picked) < n || k < picked[n-1].key
			if !inSample && !candidate {
				continue
			}
			text := d.Content
			if t := store.Title(d); t != "" {
				text = t + "\n" + text
			}
			words := surfaceWords(text)
			if inSample {
				sampled++
				seen := map[string]bool{}
				for _, w := range words {
					if t := terms.of(w); t != "" && !seen[t] {
						seen[t] = true
						df[t]++
					}
				}
			}
			if !candidate {
				continue
			}
			at, _ := slices.BinarySearchFunc(picked, k, func(p drawn, k uint64) int {
				switch {
				case p.key < k:
					return -1
				case p.key > k:
					return 1
				}
				return 0
			})
			picked = slices.Insert(picked, at, drawn{key: k, id: d.ID, words: words})
			if len(picked) > n {
				picked = picked[:n]
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, 0, fmt.Errorf("calibrate %q: %w", c.Name(), err)
	}
	qrels := Qrels{}
	var queries []Query
	for i, p := range picked {
		// Another drawn chunk is a random chunk: its words stand for the
		// collection's.
		other := picked[(i+1)%len(picked)].words
		q := drawQuery(&terms, p.words, other, df, sampled, p.key)
		if q == "" {
			continue
		}
		id := "pseudo-" + p.id
		queries = append(queries, Query{ID: id, Text: q})
		qrels[id] = map[string]int{p.id: 1}
	}
	return queries, qrels, docs, nil
}

// surfaceWords splits text into its words as written, lowercased.
func surfaceWords(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// termCache remembers the index term of each surface word: words repeat,
// and analysing one costs a stemmer's run. It stops growing at
// maxCachedTerms words.
type termCache struct {
	an *bm25.Analyzer
	m  map[string]string
}

const maxCachedTerms = 200_000

func (tc *termCache) of(w string) string {
	if t, ok := tc.m[w]; ok {
		return t
	}
	t := termOf(tc.an, w)
	if len(tc.m) < maxCachedTerms {
		tc.m[w] = t
	}
	return t
}

// termOf is the index term of one word, "" for a stop word, a number or a
// word too short to be asked for.
func termOf(an *bm25.Analyzer, w string) string {
	if len(w) < 3 || strings.IndexFunc(w, unicode.IsLetter) < 0 {
		return ""
	}
	ts := an.Analyze(w)
	if len(ts) != 1 {
		return ""
	}
	return ts[0]
}

// idKey orders chunks for the draw: a hash of the id, so the chunks drawn
// do not depend on the order a store lists them in.
func idKey(id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}

// drawQuery draws calibrationTerms distinct words of a chunk, each with a
// chance proportional to its tf·idf, in the order drawn, and replaces each
// with a word of other with a chance of calibrationNoise; "" when the chunk
// has fewer than three words worth asking for.
func drawQuery(terms *termCache, words, other []string, df map[string]int, docs int, seed uint64) string {
	type cand struct {
		word string
		tf   int
		key  float64
	}
	byTerm := map[string]int{}
	var cands []cand
	for _, w := range words {
		t := terms.of(w)
		if t == "" {
			continue
		}
		if i, ok := byTerm[t]; ok {
			cands[i].tf++
			continue
		}
		byTerm[t] = len(cands)
		cands = append(cands, cand{word: w, tf: 1})
	}
	if len(cands) < 3 {
		return ""
	}
	// Weighted sampling without replacement (Efraimidis and Spirakis): each
	// word's key is u^(1/w), the largest keys win.
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	for i := range cands {
		t := terms.of(cands[i].word)
		idf := math.Log(1 + (float64(docs)-float64(df[t])+0.5)/(float64(df[t])+0.5))
		w := float64(cands[i].tf) * idf
		if w <= 0 {
			w = 1e-9
		}
		cands[i].key = math.Pow(rng.Float64(), 1/w)
	}
	slices.SortStableFunc(cands, func(a, b cand) int {
		switch {
		case a.key > b.key:
			return -1
		case a.key < b.key:
			return 1
		}
		return 0
	})
	k := min(calibrationTerms, len(cands))
	out := make([]string, k)
	for i := range k {
		out[i] = cands[i].word
		if rng.Float64() >= calibrationNoise || len(other) == 0 {
			continue
		}
		// A few tries at a word worth asking for; else the chunk's own stays.
		for range 20 {
			if w := other[rng.IntN(len(other))]; terms.of(w) != "" {
				out[i] = w
				break
			}
		}
	}
	return strings.Join(out, " ")
}

// GoldenMRR is a retrieval configuration's mean reciprocal rank on a
// golden set's answerable questions: the rank of the first of the top k
// results whose source is one the case names (SourceMatches). It checks a
// calibration against questions people wrote.
func GoldenMRR(ctx context.Context, c *store.Collection, e embed.Embedder, cases []Golden, cfg Config, k int) (float64, int, error) {
	var queries []Query
	sources := map[string][]string{}
	for _, g := range cases {
		if g.Unanswerable || len(g.Sources) == 0 {
			continue
		}
		queries = append(queries, Query{ID: g.ID, Text: g.Question})
		sources[g.ID] = g.Sources
	}
	if len(queries) == 0 {
		return 0, 0, errors.New("golden MRR: the set has no answerable case that names its sources")
	}
	sum := 0.0
	err := searchAll(ctx, c, e, queries, cfg, k, func(q Query, hits []store.Hit) {
		for r, h := range hits {
			if SourceMatches(h.Doc.SourceName, sources[q.ID]) {
				sum += 1 / float64(r+1)
				break
			}
		}
	})
	if err != nil {
		return 0, 0, fmt.Errorf("golden MRR: %w", err)
	}
	return sum / float64(len(queries)), len(queries), nil
}
