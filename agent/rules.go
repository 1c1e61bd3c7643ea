package agent

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/rag"
)

// byRules is the loop without a model: triage by the question's wording,
// then rounds of searches until every aspect is covered. Round 1 searches
// each aspect in the main sources; a later round searches an uncovered
// aspect by the terms it still lacks, fans it out to every source at once
// (fallbacks included), and follows its best passage to its neighbours and
// links.
func (r *run) byRules(ctx context.Context) error {
	t := triageByRules(r.req.Question)
	r.out.Triage = t
	r.emit(Step{Kind: StepTriage, Triage: &t})
	if t.Kind == KindNone {
		r.out.Stopped = "no retrieval needed"
		r.out.Verdict = Verdict{Sufficient: true, By: "rules", Reason: "nothing to look up"}
		return nil
	}
	pending := make([][]string, len(t.Aspects)) // per aspect, the queries to run next
	for i, a := range t.Aspects {
		pending[i] = []string{a}
	}
	everywhere := make([]bool, len(t.Aspects))
	followed := map[string]bool{}
	for round := 1; round <= r.budget.Rounds; round++ {
		r.out.Rounds = round
		var searches []search
		var exps []expansion
		for i, qs := range pending {
			for _, q := range qs {
				for si, s := range r.a.Sources {
					if (s.Fallback && !everywhere[i]) || r.queried[s.Name+"\x00"+q] {
						continue
					}
					r.queried[s.Name+"\x00"+q] = true
					searches = append(searches, r.searchCall(si, i, q, r.topK))
				}
			}
		}
		if round > 1 {
			for i := range t.Aspects {
				if len(pending[i]) == 0 {
					continue
				}
				// The best passage for an uncovered aspect is the one most
				// likely to sit next to what is missing.
				if best := r.bestFor(i); best != nil && !followed[best.ID] && r.from[best.ID] >= 0 && r.a.Sources[r.from[best.ID]].Expander != nil {
					followed[best.ID] = true
					exps = append(exps, r.expansionCall(ToolNeighbours, best, i, 1), r.expansionCall(ToolLinked, best, i, 3))
				}
			}
		}
		if len(searches)+len(exps) == 0 {
			r.out.Rounds = round - 1 // nothing was run in this one
			r.out.Stopped = "nothing new"
			return nil
		}
		if why := r.spent(ctx, len(searches)+len(exps)); why != "" {
			// Keep what fits: the first calls are the most direct ones.
			room := max(r.budget.ToolCalls-r.out.ToolCalls, 0)
			if ctx.Err() != nil || room == 0 {
				r.out.Stopped = why
				return nil
			}
			searches = searches[:min(room, len(searches))]
			exps = exps[:min(room-len(searches), len(exps))]
			r.out.Stopped = why
		}
		for _, s := range searches {
			r.addQuery(s.q.Text)
		}
		r.runCalls(ctx, searches, exps)
		v := r.coverage(t.Aspects)
		r.out.Verdict = v
		r.emit(Step{Kind: StepSufficiency, Verdict: &v})
		if v.Sufficient {
			r.out.Stopped = "sufficient"
			return nil
		}
		if r.out.Stopped != "" {
			return nil
		}
		for i := range pending {
			pending[i] = nil
		}
		for _, i := range uncovered(v, r.minCoverage()) {
			everywhere[i] = true
			pending[i] = []string{t.Aspects[i]}
			if q := r.followUp(t.Aspects[i], i); q != "" {
				pending[i] = append(pending[i], q)
			}
		}
	}
	if r.out.Stopped == "" {
		r.out.Stopped = "budget: rounds"
	}
	return nil
}

func (r *run) minCoverage() float64 {
	if r.a.MinCoverage > 0 {
		return r.a.MinCoverage
	}
	return rag.DefaultMinRelevance
}

func (r *run) addQuery(q string) {
	if !slices.Contains(r.out.Queries, q) {
		r.out.Queries = append(r.out.Queries, q)
	}
}

// searchCall is the call that searches source si for query q of aspect i.
func (r *run) searchCall(si, aspect int, q string, k int) search {
	args, _ := json.Marshal(map[string]any{"query": q, "source": r.a.Sources[si].Name, "top_k": k})
	r.ids++
	return search{id: "q" + strconv.Itoa(r.ids), source: si, aspect: aspect,
		q: Query{Text: q, TopK: k}, args: args}
}

func (r *run) expansionCall(tool string, d *document.Document, aspect, n int) expansion {
	key := "window"
	if tool == ToolLinked {
		key = "limit"
	}
	args, _ := json.Marshal(map[string]any{"id": d.ID, key: n})
	r.ids++
	return expansion{id: "q" + strconv.Itoa(r.ids), tool: tool, doc: d, aspect: aspect, n: n, args: args}
}

// coverage is the rule-based sufficiency check: for each aspect, how much
// of it the best gathered passage covers (rag.Relevance over the aspect's
// own passages and every other gathered one). Every aspect at or above
// the floor suffices.
func (r *run) coverage(aspects []string) Verdict {
	v := Verdict{By: "rules", Coverage: make([]float64, len(aspects)), Sufficient: true}
	all := r.all()
	for i, a := range aspects {
		v.Coverage[i] = rag.Relevance(r.an, a, all, nil)
		if v.Coverage[i] < r.minCoverage() {
			v.Sufficient = false
			v.Missing = append(v.Missing, a)
			if q := r.followUp(a, i); q != "" {
				v.Next = append(v.Next, q)
			}
		}
	}
	switch {
	case len(all) == 0:
		v.Reason = "nothing found"
	case v.Sufficient:
		v.Reason = "every aspect is covered"
	default:
		v.Reason = strconv.Itoa(len(v.Missing)) + " of " + strconv.Itoa(len(aspects)) + " aspects not covered"
	}
	return v
}

// uncovered lists the aspects a verdict found under the floor.
func uncovered(v Verdict, floor float64) []int {
	var out []int
	for i, c := range v.Coverage {
		if c < floor {
			out = append(out, i)
		}
	}
	return out
}

// all is every gathered passage, in no particular order of relevance.
func (r *run) all() []*document.Document {
	out := make([]*document.Document, 0, len(r.pool))
	for _, ls := range r.lists {
		for _, l := range ls {
			out = append(out, l...)
		}
	}
	slices.SortStableFunc(out, func(a, b *document.Document) int { return strings.Compare(a.ID, b.ID) })
	return slices.CompactFunc(out, func(a, b *document.Document) bool { return a.ID == b.ID })
}

// bestFor is the passage covering most of an aspect, nil when none
// covers any.
func (r *run) bestFor(aspect int) *document.Document {
	a := r.out.Triage.Aspects[aspect]
	var best *document.Document
	bestCov := 0.0
	for _, d := range r.all() {
		if c := rag.Relevance(r.an, a, []*document.Document{d}, nil); c > bestCov {
			best, bestCov = d, c
		}
	}
	return best
}

// followUp is the next query for an aspect the passages do not cover: its
// words whose terms no gathered passage holds, with the aspect's rarest
// covered word to keep the topic. "" when every word is held somewhere
// (the aspect is spread over passages, not missing).
func (r *run) followUp(aspect string, i int) string {
	all := r.all()
	held := map[string]bool{}
	for _, d := range all {
		for _, t := range r.an.Analyze(d.Content + " " + strings.Join(d.Provenance.HeadingPath, " ")) {
			held[t] = true
		}
	}
	var missing []string
	for _, w := range contentWords(aspect) {
		ts := r.an.Analyze(w)
		if len(ts) == 0 || isQuestionWord(w) {
			continue
		}
		if !held[ts[0]] && !slices.Contains(missing, w) {
			missing = append(missing, w)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	q := strings.Join(missing, " ")
	if q == aspect {
		return ""
	}
	return q
}

// greeting matches questions with nothing to look up.
var greeting = regexp.MustCompile(`(?i)^\s*(hi|hello|hey|good (morning|afternoon|evening)|thanks?|thank you|thx|ok(ay)?|bye|goodbye|cheers)\b[\s!.,]*(there|so much|a lot|again|you|everyone|all)?[\s!.,:)]*$`)

// Splitting rules: the shapes that ask about two things.
var (
	between   = regexp.MustCompile(`(?i)^(.*?)\b(?:difference|differences|distinction)\s+between\s+(.+?)\s+and\s+(.+?)[?.!]*$`)
	compare   = regexp.MustCompile(`(?i)^(.*?)\bcompare[sd]?\s+(.+?)\s+(?:and|with|to)\s+(.+?)[?.!]*$`)
	versus    = regexp.MustCompile(`(?i)^(.+?)\s+(?:vs\.?|versus)\s+(.+?)[?.!]*$`)
	clauses   = regexp.MustCompile(`(?i)\s*(?:;|\?\s+|,?\s+and\s+(?:then\s+|also\s+)?(?:how|what|why|when|where|which|who|whether|does|do|is|are|can)\b|,?\s+and then\s+|,?\s+as well as\s+|,?\s+and also\s+|,?\s+then\s+)`)
	keepWords = regexp.MustCompile(`(?i)^(how|what|why|when|where|which|who|whether|does|do|is|are|can)\b`)
)

// triageByRules classifies a question by its wording: a greeting or
// thanks needs nothing; "the difference between A and B", "compare A
// with B", "A vs B" and questions joined by "and how…", ";", "then" or
// several question marks are multi-step, one aspect per part; anything
// else is a lookup of the question itself.
func triageByRules(q string) Triage {
	q = strings.TrimSpace(q)
	t := Triage{By: "rules", Kind: KindLookup, Aspects: []string{q}, Sources: []string{}}
	if greeting.MatchString(q) || len(contentWords(q)) == 0 {
		t.Kind, t.Aspects = KindNone, []string{}
		return t
	}
	var parts []string
	switch {
	case between.MatchString(q):
		m := between.FindStringSubmatch(q)
		parts = []string{m[2], m[3]}
	case compare.MatchString(q):
		m := compare.FindStringSubmatch(q)
		parts = []string{m[2], m[3]}
	case versus.MatchString(q):
		m := versus.FindStringSubmatch(q)
		parts = []string{m[1], m[2]}
	default:
		parts = splitClauses(q)
	}
	var aspects []string
	for _, p := range parts {
		p = strings.Trim(strings.TrimSpace(p), "?.!,;:")
		if len(contentWords(p)) > 0 && !slices.Contains(aspects, p) {
			aspects = append(aspects, p)
		}
	}
	if len(aspects) > 1 {
		aspects = aspects[:min(len(aspects), maxAspects)]
		for i := 1; i < len(aspects); i++ {
			aspects[i] = resolvePronouns(aspects[i], aspects[i-1])
		}
		t.Kind, t.Aspects = KindMultiStep, aspects
	}
	return t
}

// pronouns point back at what an earlier part of a question named.
var pronouns = setOf("it its them they their this these those")

// resolvePronouns gives a part that points back ("how do I roll back to
// it") the words it points at: the earlier part's content words after
// its first, which is most often its verb ("define a savepoint" →
// "savepoint"). A part that stands alone is kept as it is.
func resolvePronouns(part, prev string) string {
	leans := false
	for _, w := range strings.Fields(strings.ToLower(part)) {
		leans = leans || pronouns[strings.Trim(w, "?.!,;:")]
	}
	words := contentWords(prev)
	if !leans || len(words) < 2 {
		return part
	}
	have := map[string]bool{}
	for _, w := range contentWords(part) {
		have[strings.ToLower(w)] = true
	}
	var add []string
	for _, w := range words[1:] {
		if !have[strings.ToLower(w)] {
			add = append(add, w)
		}
	}
	if len(add) == 0 {
		return part
	}
	return part + " (" + strings.Join(add, " ") + ")"
}

// maxAspects bounds the parts one question is split into.
const maxAspects = 4

// splitClauses splits a question at the joints between its questions,
// keeping the question word that opens the next one.
func splitClauses(q string) []string {
	locs := clauses.FindAllStringIndex(q, -1)
	if len(locs) == 0 {
		return []string{q}
	}
	var out []string
	prev := 0
	for _, l := range locs {
		if l[1] >= len(q) {
			continue // a final "?"
		}
		out = append(out, q[prev:l[0]])
		// A joint that ends in a question word keeps it for the next part.
		joint := q[l[0]:l[1]]
		start := l[1]
		if fs := strings.Fields(joint); len(fs) > 0 && keepWords.MatchString(fs[len(fs)-1]) {
			start = l[1] - len(fs[len(fs)-1])
		}
		prev = start
	}
	return append(out, q[prev:])
}

// contentWords are a text's words that are not question words or short
// function words, as written.
func contentWords(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(s, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '-' && r != '.'
	}) {
		w = strings.Trim(w, ".-")
		if len(w) < 2 || isQuestionWord(w) || functionWords[strings.ToLower(w)] {
			continue
		}
		out = append(out, w)
	}
	return out
}

func isQuestionWord(w string) bool { return questionWords[strings.ToLower(w)] }

var questionWords = setOf("what when where which who whom whose why how do does did can could should would will shall may might must i me my we our you your")

var functionWords = setOf("a an the of to in on at by for from with about into onto up out off over and or but not no is are was were be been being it its this that these those there here as if then than so such")

func setOf(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}
