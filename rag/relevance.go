package rag

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/retrieve"
)

// DefaultMinRelevance is the relevance floor of answers over a lexical
// embedder: below it, a question is answered with NotRelevant and no
// citation. It was set on Quarry's offline golden set
// (eval/testdata/golden/offline.jsonl, docs/evaluation.md), between the
// relevance of its unanswerable questions and that of its answerable ones.
const DefaultMinRelevance = 0.46

// NotRelevant is the answer to a question whose passages fall under the
// relevance floor.
const NotRelevant = "The knowledge base has nothing relevant to the question."

// MinRelevanceFor is the relevance floor of answers when nothing sets one:
// DefaultMinRelevance when the collection's embedder is lexical (the
// offline hash embedder, whose vectors see words as BM25 does), none for a
// semantic embedder, whose passages may answer in words the question does
// not use — the floor, being lexical, would turn them away.
func MinRelevanceFor(m embed.ModelInfo) float64 {
	if m.Provider == "hash" {
		return DefaultMinRelevance
	}
	return 0
}

// Relevance is how much of the question the best passage covers, in
// [0, 1]: the share of the question's terms (question words and stop
// words left out, analysed as keyword search analyses them) found in the
// passage's text or heading path, each term weighted by its rarity among
// the passages, log(1 + (n+1)/(df+0.5)) for n passages. A term no passage
// holds weighs most: when retrieval's best passages never say "France", a
// question about France is not answered by them, however well they cover
// "capital" — unless the term is an everyday word (commonWords: "long"
// in "how long does it take") or known says the knowledge base holds it
// elsewhere, when it weighs a quarter of a term every passage holds. A name
// (a capitalised word after the question's first) that known says the
// knowledge base lacks weighs twice: "Redis" in a question about Quarry's
// stores is what the question is about. known (true: held elsewhere,
// false: held nowhere) may be nil. Relevance is 0 for no passages, 1 for
// a question with no terms.
func Relevance(an *bm25.Analyzer, question string, passages []*document.Document, known map[string]bool) float64 {
	return relevanceOf(questionStats(an, question, passages), known)
}

// questionStats are the question's terms, names and the everyday words,
// and which passages hold them: what Relevance weighs.
func questionStats(an *bm25.Analyzer, question string, passages []*document.Document) termStats {
	st := termStatsOf(an, questionTerms(an, question), passages)
	st.names, st.common = nameTerms(an, question), commonTerms(an)
	return st
}

// relevanceOf is Relevance over the question's stats: 0 for no passages,
// 1 for a question with no terms, else the best passage's cover.
func relevanceOf(st termStats, known map[string]bool) float64 {
	switch {
	case len(st.sets) == 0:
		return 0
	case len(st.query) == 0:
		return 1
	}
	return slices.Max(st.cover(known))
}

// nameTerms are the terms of the question's names: words after the first
// that start with an upper-case letter.
func nameTerms(an *bm25.Analyzer, question string) map[string]bool {
	out := map[string]bool{}
	for i, w := range strings.Fields(question) {
		if r, _ := utf8.DecodeRuneInString(w); i > 0 && unicode.IsUpper(r) {
			for _, t := range an.Analyze(w) {
				out[t] = true
			}
		}
	}
	return out
}

// termStats are the query's terms and which passages hold them.
type termStats struct {
	query  []string
	sets   []map[string]bool
	df     map[string]int
	names  map[string]bool // terms of the question's names
	common map[string]bool // commonTerms; nil for none
}

func termStatsOf(an *bm25.Analyzer, query []string, passages []*document.Document) termStats {
	st := termStats{query: query, sets: make([]map[string]bool, len(passages)), df: make(map[string]int, len(query))}
	for i, d := range passages {
		in := map[string]bool{}
		text := d.Content + "\n" + strings.Join(d.Provenance.HeadingPath, " ")
		for _, t := range an.Analyze(text) {
			in[t] = true
		}
		st.sets[i] = in
		for _, q := range query {
			if in[q] {
				st.df[q]++
			}
		}
	}
	return st
}

// absent lists the query's terms no passage holds.
func (st termStats) absent() []string {
	var out []string
	for _, q := range st.query {
		if st.df[q] == 0 {
			out = append(out, q)
		}
	}
	return out
}

// cover is, per passage, the weighted share of the query's terms it holds
// (see Relevance).
func (st termStats) cover(known map[string]bool) []float64 {
	out := make([]float64, len(st.sets))
	if len(st.query) == 0 || len(st.sets) == 0 {
		return out
	}
	n := float64(len(st.sets))
	weight := make([]float64, len(st.query))
	mass := 0.0
	for i, q := range st.query {
		df := float64(st.df[q])
		held, probed := known[q]
		held = held || st.common[q]
		weight[i] = math.Log(1 + (n+1)/(df+0.5))
		if df == 0 && held {
			weight[i] = heldWeight * math.Log(1+(n+1)/(n+0.5))
		}
		if df == 0 && probed && !held && st.names[q] {
			weight[i] *= 2
		}
		mass += weight[i]
	}
	for j, in := range st.sets {
		got := 0.0
		for i, q := range st.query {
			if in[q] {
				got += weight[i]
			}
		}
		out[j] = got / mass
	}
	return out
}

// commonWords are everyday English words that say little of a question's
// topic ("how long does it take", "what happens when"): absent from the
// passages, they weigh little (heldWeight), whether or not the
// knowledge base uses them, for a small knowledge base may not.
const commonWords = "about above across actually after again against ago all almost along already also " +
	"always among another any anyone anything anyway anywhere around ask away back bad because become " +
	"before begin behind being best better between big both bring build but call came case cause " +
	"certain change check choose clear close come common complete could current day different do done " +
	"down during each early easy else end enough even ever every example exactly fact far fast few " +
	"find first follow get give go going good great half happen happens hard help here high " +
	"hold idea important instead keep kind know large last late least leave less let like likely " +
	"little long look lot low main make many matter mean means might mind more most much need never " +
	"new next nothing now number often old once one only open other own part people per place " +
	"point possible probably put quick quickly quite rather real really reason right same say see seem " +
	"set several short should show side simple since small so some someone something sometimes soon " +
	"start still stop sure take taken tell thing things think though through time today together too " +
	"try turn two under until usually use used using very want way well whole wrong without work " +
	"year yes yet"

// heldWeight scales the weight of a term no passage holds but that is an
// everyday word or that the knowledge base holds elsewhere: a quarter of
// what a term every passage holds weighs, so that, however few passages
// there are, it counts for less than any term a passage does hold.
const heldWeight = 0.25

// commonTerms are commonWords analysed by an.
func commonTerms(an *bm25.Analyzer) map[string]bool {
	out := map[string]bool{}
	for _, t := range an.Analyze(commonWords) {
		out[t] = true
	}
	return out
}

// maxProbes bounds the words of one question the relevance floor looks
// up in the knowledge base.
const maxProbes = 8

// probeAbsent asks a retriever that can (retrieve.TermProber) which of the
// query's terms no passage holds the knowledge base holds elsewhere, under
// the run's scopes. Each term is looked up by the question's word it came
// from, for a store analyses text its own way.
func (p *Pipeline) probeAbsent(ctx context.Context, r *run, an *bm25.Analyzer, st termStats) (map[string]bool, error) {
	prober, ok := p.Retriever.(retrieve.TermProber)
	absent := st.absent()
	if !ok || len(absent) == 0 {
		return nil, nil
	}
	wordOf := map[string]string{}
	for _, w := range strings.Fields(r.req.Question) {
		for _, t := range an.Analyze(w) {
			if _, seen := wordOf[t]; !seen {
				wordOf[t] = strings.Trim(w, ".,;:!?\"'()[]{}")
			}
		}
	}
	var terms, words []string
	for _, t := range absent {
		if w := wordOf[t]; w != "" && len(words) < maxProbes {
			terms, words = append(terms, t), append(words, w)
		}
	}
	if len(words) == 0 {
		return nil, nil
	}
	has, err := prober.HasTerms(ctx, RetrieveRequest{Query: r.req.Question, Scope: p.Scope, Filter: r.req.Filter, TopK: 1}, words)
	if err != nil {
		return nil, fmt.Errorf("ask: relevance: %w", err)
	}
	known := map[string]bool{}
	for i, t := range terms {
		if i < len(has) {
			known[t] = has[i]
		}
	}
	return known, nil
}
