package rag

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/index/bm25"
)

// Extractive configures answers written without a chat model: the
// sentences of the top passages that best answer the question, quoted
// verbatim (spacing aside) and each followed by its citation. Zero values
// mean the defaults.
type Extractive struct {
	// Passages is how many of the top passages sentences come from, 8 when 0.
	Passages int
	// MaxSentences caps the answer, 4 when 0.
	MaxSentences int
	// MaxChars caps the answer's length without its markers, 700 when 0;
	// the first sentence is kept even when it alone is longer.
	MaxChars int
	// Embedder, when set, adds the cosine between the question and each
	// sentence to the lexical score (one batch call per answer).
	Embedder embed.Embedder
	// Language selects the analyzer that turns text into terms (stemming,
	// stop words), English when empty.
	Language string
}

// Quote is one sentence of an extractive answer and the passage it was
// taken from.
type Quote struct {
	Text string `json:"text"`
	N    int    `json:"n"`
	// Line is the line of the passage's source the sentence starts on,
	// when the passage knows its lines; the text is quoted without its
	// markup, so the line is where to read it as written.
	Line int `json:"line,omitempty"`
}

// NoPassages is the extractive answer when retrieval found nothing.
const NoPassages = "The knowledge base has no passage that matches the question."

// sentence is a candidate for an extractive answer.
type sentence struct {
	n, pos int    // passage number (from 1), position in the passage
	line   int    // the passage line it starts on, from 0
	text   string // as it appears in the passage, spaces collapsed
	terms  map[string]int
	seq    []string // terms in reading order
	length int      // terms, counted with repeats
	rel    float64
}

// extractive answers from the passages alone. Sentences are scored by how
// much of the question they cover (terms weighted by IDF over the candidate
// sentences), a BM25 weighting of their own terms, the question's terms in
// the passage's headings and, with an embedder, cosine similarity; earlier
// passages count a little more, as retrieval ranked them. Sentences are
// then picked by maximal marginal relevance, so the answer does not repeat
// itself, until the sentence or length budget is spent or the next
// sentence is much weaker than the best.
func (p *Pipeline) extractive(ctx context.Context, r *run) (*Answer, error) {
	cfg := p.Extractive
	a := r.answer()
	a.Extractive, a.Citations = true, []Citation{}
	if r.belowFloor {
		a.Text = NotRelevant
		return a, p.record(ctx, r, a)
	}
	if len(r.passages) == 0 {
		a.Text = NoPassages
		return a, p.record(ctx, r, a)
	}
	an := r.analyzer
	top := r.passages[:min(len(r.passages), orDefault(cfg.Passages, 8))]
	var cands []*sentence
	for i, d := range top {
		for j, s := range sentences(d.Content) {
			st := &sentence{n: i + 1, pos: j, text: s.text, line: s.line, terms: map[string]int{}}
			st.seq = an.Analyze(s.text)
			for _, t := range st.seq {
				st.terms[t]++
			}
			st.length = len(st.seq)
			if st.length > 0 {
				cands = append(cands, st)
			}
		}
	}
	if len(cands) == 0 {
		a.Text = NoPassages
		return a, p.record(ctx, r, a)
	}
	query := questionTerms(an, r.req.Question)
	if len(query) == 0 { // a question of stop words only
		if keep, err := bm25.NewAnalyzer(bm25.AnalyzerConfig{Language: cfg.Language, KeepStopWords: true}); err == nil {
			query = questionTerms(keep, r.req.Question)
		}
	}
	var cos []float64
	if cfg.Embedder != nil {
		var err error
		if cos, err = cosines(ctx, cfg.Embedder, r.req.Question, cands); err != nil {
			return nil, fmt.Errorf("extractive answer: %w", err)
		}
	}
	maxSentences, maxChars := orDefault(cfg.MaxSentences, 4), orDefault(cfg.MaxChars, 700)
	// A question of several parts gets the best sentence of each first, so
	// the answer cites every part.
	var picked []*sentence
	if len(r.req.Aspects) > 1 {
		picked = pickAspects(an, cands, top, r.req.Aspects)
		maxSentences = max(maxSentences, len(picked)+1)
	}
	score(cands, query, headingCoverage(an, top, query), termStatsOf(an, query, top).cover(nil), cos)
	chars := 0
	for _, s := range picked {
		chars += utf8.RuneCountInString(s.text)
	}
	// What the parts took, and its repeats, are not picked again.
	for _, c := range cands {
		if slices.Contains(picked, c) || nearDuplicate(c, picked) {
			c.rel = 0
		}
	}
	if left := maxSentences - len(picked); left > 0 && (len(picked) == 0 || chars < maxChars) {
		rest := pick(cands, left, max(maxChars-chars, 1))
		if len(picked) == 0 || len(rest) > 1 || rest[0].rel > 0 {
			picked = append(picked, rest...)
		}
	}

	// Read in the passages' order of relevance, each passage's sentences in
	// their own order.
	first := map[int]int{}
	for i, s := range picked {
		if _, ok := first[s.n]; !ok {
			first[s.n] = i
		}
	}
	slices.SortStableFunc(picked, func(x, y *sentence) int {
		if x.n != y.n {
			return first[x.n] - first[y.n]
		}
		return x.pos - y.pos
	})
	var b strings.Builder
	cited := map[int]bool{}
	for i, s := range picked {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s.text + " [" + strconv.Itoa(s.n) + "]")
		q := Quote{Text: s.text, N: s.n}
		if start := top[s.n-1].Provenance.LineStart; start > 0 {
			q.Line = start + s.line
		}
		a.Quotes = append(a.Quotes, q)
		cited[s.n] = true
	}
	a.Text = b.String()
	for _, c := range a.Passages {
		if cited[c.N] {
			a.Citations = append(a.Citations, c)
		}
	}
	return a, p.record(ctx, r, a)
}

// pickAspects picks, for each aspect in turn, its best sentences not
// already picked (scored as the whole question is, against the aspect's
// terms); an aspect no sentence shares a term with gets none.
func pickAspects(an *bm25.Analyzer, cands []*sentence, top []*document.Document, aspects []Aspect) []*sentence {
	var picked []*sentence
	for _, a := range aspects {
		aq := questionTerms(an, a.Text)
		if len(aq) == 0 {
			continue
		}
		score(cands, aq, headingCoverage(an, top, aq), termStatsOf(an, aq, top).cover(nil), nil)
		// The part's own passages, when any made the top.
		own := map[int]bool{}
		for i, d := range top {
			if slices.Contains(a.IDs, d.ID) {
				own[i+1] = true
			}
		}
		// The part's best sentence, then its best from another passage
		// (one passage may answer a part only in passing), never one that
		// repeats a sentence already picked.
		var first *sentence
		for k := 0; k < perAspect; k++ {
			var best *sentence
			for _, s := range cands {
				if s.rel > 0 && !slices.Contains(picked, s) && (len(own) == 0 || own[s.n]) && (first == nil || s.n != first.n) &&
					(best == nil || s.rel > best.rel) && !nearDuplicate(s, picked) {
					best = s
				}
			}
			if best == nil || (first != nil && best.rel < stopShare*first.rel) {
				break
			}
			if first == nil {
				first = best
			}
			picked = append(picked, best)
		}
	}
	return picked
}

// nearDuplicate reports whether s repeats a picked sentence (the Jaccard
// similarity of their terms at least 0.6, as pick counts it).
func nearDuplicate(s *sentence, picked []*sentence) bool {
	for _, p := range picked {
		if jaccard(s.terms, p.terms) >= 0.6 {
			return true
		}
	}
	return false
}

// perAspect is how many sentences each part of a question gets first.
var perAspect = 2

func orDefault(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// questionWords ask rather than say what is asked about: interrogatives,
// auxiliaries and the asker's pronouns, which analyzers keep and which a
// passage that answers seldom repeats ("How do I…", "Can you…").
const questionWords = "what when where which who whom whose why how " +
	"do does did can could should would will shall may might must " +
	"i me my we our you your"

// questionTerms are the question's distinct terms, analysed by an,
// question words left out.
func questionTerms(an *bm25.Analyzer, question string) []string {
	drop := map[string]bool{}
	for _, t := range an.Analyze(questionWords) {
		drop[t] = true
	}
	ts := slices.DeleteFunc(an.Analyze(question), func(t string) bool { return drop[t] })
	slices.Sort(ts)
	return slices.Compact(ts)
}

// headingCoverage is, per passage number, the share of the question's terms
// found in the passage's heading path: a section titled "Building Indexes
// Concurrently" vouches for its sentences.
func headingCoverage(an *bm25.Analyzer, passages []*document.Document, query []string) map[int]float64 {
	out := map[int]float64{}
	if len(query) == 0 {
		return out
	}
	for i, d := range passages {
		hs := map[string]bool{}
		for _, t := range an.Analyze(strings.Join(d.Provenance.HeadingPath, " ")) {
			hs[t] = true
		}
		hit := 0
		for _, q := range query {
			if hs[q] {
				hit++
			}
		}
		out[i+1] = float64(hit) / float64(len(query))
	}
	return out
}

func cosines(ctx context.Context, e embed.Embedder, question string, cands []*sentence) ([]float64, error) {
	texts := make([]string, 0, len(cands)+1)
	texts = append(texts, question)
	for _, s := range cands {
		texts = append(texts, s.text)
	}
	vecs, err := e.Embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	if len(vecs) != len(texts) {
		return nil, fmt.Errorf("the embedder returned %d vectors for %d texts", len(vecs), len(texts))
	}
	out := make([]float64, len(cands))
	for i := range cands {
		c, err := document.Cosine(vecs[0], vecs[i+1])
		if err != nil {
			return nil, err
		}
		out[i] = max(c, 0)
	}
	return out, nil
}

// score sets each candidate's relevance in [0, ~1.2]; 0 means the sentence
// shares nothing with the question.
func score(cands []*sentence, query []string, heading map[int]float64, fit []float64, cos []float64) {
	bestFit := 0.0
	for _, f := range fit {
		bestFit = max(bestFit, f)
	}
	const k1, b = 1.2, 0.75
	n := float64(len(cands))
	df := map[string]int{}
	total := 0
	for _, s := range cands {
		total += s.length
		for t := range s.terms {
			df[t]++
		}
	}
	avg := float64(total) / n
	// A gentle IDF: the candidates already share the question's topic, so
	// a term in every one of them still counts, only less.
	idf := func(t string) float64 {
		return math.Log(1 + (n+1)/(float64(df[t])+0.5))
	}
	mass := 0.0
	for _, q := range query {
		mass += idf(q)
	}
	bm := make([]float64, len(cands))
	cover := make([]float64, len(cands))
	best := 0.0
	for i, s := range cands {
		for _, q := range query {
			tf := float64(s.terms[q])
			if tf == 0 {
				continue
			}
			w := idf(q)
			cover[i] += w
			bm[i] += w * tf * (k1 + 1) / (tf + k1*(1-b+b*float64(s.length)/avg))
		}
		if mass > 0 {
			cover[i] /= mass
		}
		best = max(best, bm[i])
	}
	for i, s := range cands {
		lex := 0.0
		if best > 0 {
			lex = bm[i] / best
		}
		rel := 0.55*cover[i] + 0.45*lex
		if cos != nil {
			rel = 0.45*cover[i] + 0.35*lex + 0.2*cos[i]
		}
		if cover[i] == 0 && (cos == nil || cos[i] < 0.3) {
			s.rel = 0
			continue
		}
		words := len(strings.Fields(s.text))
		if strings.HasSuffix(s.text, ":") {
			rel *= 0.5 // it introduces an example or a list the answer will not show
		}
		switch {
		case words < 6:
			rel *= 0.8
		case words > 50:
			rel *= 0.85
		}
		if s.pos == 0 {
			rel *= 1.1 // a section's first sentence tends to state its topic
		}
		rel /= 1 + 0.06*float64(s.n-1)
		rel += 0.15 * heading[s.n] * rel
		if bestFit > 0 {
			// A sentence of the passage that covers the question best
			// (weighted by rarity) is likelier to answer it than an equally
			// worded one from a passage that covers it in part.
			rel *= fitFloor + (1-fitFloor)*fit[s.n-1]/bestFit
		}
		rel *= 1 + proxWeight*proximity(s.seq, query)
		s.rel = rel
	}
}

// Weights of the passage's fit and of the question's terms' proximity.
var fitFloor, proxWeight = 0.3, 0.2

var stopShare = 0.4

// proximity is, for a sentence holding two or more of the query's terms,
// how tightly they sit: distinct terms matched over the length of the
// shortest run of the sentence's terms that holds them all; 0 otherwise.
func proximity(seq, query []string) float64 {
	want := map[string]bool{}
	for _, q := range query {
		want[q] = true
	}
	distinct := map[string]bool{}
	for _, t := range seq {
		if want[t] {
			distinct[t] = true
		}
	}
	k := len(distinct)
	if k < 2 {
		return 0
	}
	best := len(seq) + 1
	count := map[string]int{}
	have, lo := 0, 0
	for hi, t := range seq {
		if !want[t] {
			continue
		}
		if count[t] == 0 {
			have++
		}
		count[t]++
		for have == k {
			best = min(best, hi-lo+1)
			if u := seq[lo]; want[u] {
				count[u]--
				if count[u] == 0 {
					have--
				}
			}
			lo++
		}
	}
	return float64(k) / float64(best)
}

// pick chooses sentences by maximal marginal relevance (λ = 0.7, Jaccard
// similarity of terms), skipping near-duplicates, and stops at the budget
// or when the best remaining sentence scores under 40% of the first.
func pick(cands []*sentence, maxSentences, maxChars int) []*sentence {
	const lambda = 0.7
	var picked []*sentence
	used := make([]bool, len(cands))
	chars, top := 0, 0.0
	for len(picked) < maxSentences {
		bi, bs := -1, math.Inf(-1)
		for i, s := range cands {
			if used[i] || s.rel <= 0 {
				continue
			}
			sim := 0.0
			for _, q := range picked {
				sim = max(sim, jaccard(s.terms, q.terms))
			}
			if sim >= 0.6 {
				used[i] = true // a near-duplicate of a chosen sentence
				continue
			}
			if v := lambda*s.rel - (1-lambda)*sim; v > bs {
				bi, bs = i, v
			}
		}
		if bi < 0 {
			break
		}
		s := cands[bi]
		used[bi] = true
		if len(picked) == 0 {
			top = s.rel
		} else if s.rel < stopShare*top {
			break
		}
		if len(picked) > 0 && chars+utf8.RuneCountInString(s.text) > maxChars {
			continue
		}
		picked = append(picked, s)
		chars += utf8.RuneCountInString(s.text)
		// A next sentence that points back ("This method is invoked by…")
		// finishes the thought, so it comes along when it fits.
		if c := continuation(cands, bi); c >= 0 && !used[c] && len(picked) < maxSentences &&
			chars+utf8.RuneCountInString(cands[c].text) <= maxChars {
			used[c] = true
			picked = append(picked, cands[c])
			chars += utf8.RuneCountInString(cands[c].text)
		}
	}
	if len(picked) == 0 {
		// Nothing shares a term with the question: the retriever still
		// ranked the first passage best, so quote its first sentence.
		picked = append(picked, cands[0])
	}
	return picked
}

// anaphora open sentences that lean on the one before.
var anaphora = []string{"This ", "These ", "That ", "Those ", "It ", "Its ", "They ", "Their ", "Such ", "Thus", "Then ", "However", "In that case"}

// continuation returns the index of the candidate right after cands[i] in
// the same passage when it leans on it, else -1.
func continuation(cands []*sentence, i int) int {
	if i+1 >= len(cands) || cands[i+1].n != cands[i].n || cands[i+1].pos != cands[i].pos+1 {
		return -1
	}
	for _, a := range anaphora {
		if strings.HasPrefix(cands[i+1].text, a) {
			return i + 1
		}
	}
	return -1
}

func jaccard(a, b map[string]int) float64 {
	inter := 0
	for t := range a {
		if _, ok := b[t]; ok {
			inter++
		}
	}
	union := len(a) + len(b) - inter
	if union == 0 {
		return 0
	}
	return float64(inter) / float64(union)
}

// passageSentence is a sentence worth quoting and the line of its passage
// it starts on, counted from 0.
type passageSentence struct {
	text string
	line int
}

// sentences splits a passage into the sentences worth quoting, each as it
// reads without its markup (plain) and with runs of spaces collapsed.
// Headings, table rows, code blocks, link definitions, HTML comments and
// fragments of under four words are left out; list items are quoted
// without their bullet.
func sentences(text string) []passageSentence {
	text = dropComments(text)
	var out []passageSentence
	var para []string
	var lines []int // the passage line of each line in para
	flush := func() {
		if len(para) == 0 {
			return
		}
		// Lines are joined by one space after their own spaces are
		// collapsed, so an offset in the paragraph maps back to its line.
		joined := strings.Join(para, " ")
		starts := make([]int, len(para))
		off := 0
		for i, l := range para {
			starts[i] = off
			off += len(l) + 1
		}
		for _, sp := range splitSentences(joined) {
			i, _ := slices.BinarySearch(starts, sp.start)
			if i == len(starts) || starts[i] > sp.start {
				i--
			}
			out = append(out, passageSentence{text: plain(joined[sp.start:sp.end]), line: lines[i]})
		}
		para, lines = para[:0], lines[:0]
	}
	fence := startsInFence(text)
	n := -1
	for line := range strings.Lines(text) {
		n++
		t := strings.TrimSpace(line)
		if isFence(line) {
			flush()
			fence = !fence
			continue
		}
		if fence || t == "" {
			flush()
			continue
		}
		switch {
		case strings.HasPrefix(t, "#"), strings.HasPrefix(t, "|"), strings.HasPrefix(t, ">"),
			strings.Trim(t, "-*_= ") == "", strings.HasPrefix(line, "    "), strings.HasPrefix(line, "\t"),
			linkDefinition.MatchString(t):
			flush()
			continue
		}
		if rest, ok := cutBullet(t); ok {
			flush()
			t = rest
		}
		para = append(para, strings.Join(strings.Fields(t), " "))
		lines = append(lines, n)
	}
	flush()
	kept := out[:0]
	for _, s := range out {
		if len(strings.Fields(s.text)) >= 4 && letterShare(s.text) >= 0.5 {
			kept = append(kept, s)
		}
	}
	return kept
}

// startsInFence reports whether a passage begins inside a fenced code
// block, as a chunk cut from the middle of one does. A block's opening
// fence may name its language and its closing one never does, so a first
// fence that is bare closes a block when the next fence names a language,
// or when the fences do not pair up.
func startsInFence(text string) bool {
	var fences []string
	for line := range strings.Lines(text) {
		if isFence(line) {
			fences = append(fences, strings.Trim(strings.TrimSpace(line), "`~"))
		}
	}
	if len(fences) == 0 || fences[0] != "" {
		return false
	}
	return len(fences)%2 == 1 || fences[1] != ""
}

// dropComments blanks HTML comments, keeping their line breaks so lines
// still count from the passage's first.
func dropComments(text string) string {
	if !strings.Contains(text, "<!--") {
		return text
	}
	return htmlComment.ReplaceAllStringFunc(text, func(c string) string {
		return strings.Repeat("\n", strings.Count(c, "\n"))
	})
}

var (
	htmlComment    = regexp.MustCompile(`(?s)<!--.*?(-->|$)`)
	linkDefinition = regexp.MustCompile(`^\[[^\]]+\]:\s*\S+`)
	// Outside code spans: images and links keep their text, HTML tags
	// and heading anchors go, emphasis markers go.
	mdImage     = regexp.MustCompile(`!\[([^\]]*)\]\([^)]*\)`)
	mdLink      = regexp.MustCompile(`\[([^\]]+)\](\([^)]*\)|\[[^\]]*\])`)
	htmlTag     = regexp.MustCompile(`</?[A-Za-z][A-Za-z0-9-]*(\s[^<>]*)?/?>`)
	anchor      = regexp.MustCompile(`\s*\{#[^}]*\}`)
	strong      = regexp.MustCompile(`\*\*([^*]+)\*\*`)
	emphasis    = regexp.MustCompile(`\*([^*\s][^*]*)\*`)
	escapedMark = regexp.MustCompile(`\\([\\*_\[\]()#<>!])`)
	codeSpanRE  = regexp.MustCompile("`[^`]+`")
	placeholder = regexp.MustCompile("\x00[0-9]+\x00")
)

// Plain is text as an extractive answer quotes it: without HTML comments,
// Markdown and HTML markup, with runs of spaces collapsed.
func Plain(text string) string { return plain(dropComments(text)) }

// plain is a sentence without its Markdown and HTML markup: links and
// images read as their text, tags, anchors and emphasis go, escapes are
// undone. Code spans are kept whole, backticks included, for code reads
// as code.
func plain(s string) string {
	if !strings.ContainsAny(s, "[]<>*{\\") {
		return s
	}
	// Code spans step aside behind placeholders, so a link whose text is
	// code ("[`os.Stat`](/pkg/os#Stat)") still reads as its text while
	// the code itself is never touched.
	var spans []string
	s = codeSpanRE.ReplaceAllStringFunc(s, func(c string) string {
		spans = append(spans, c)
		return "\x00" + strconv.Itoa(len(spans)-1) + "\x00"
	})
	s = mdImage.ReplaceAllString(s, "$1")
	s = mdLink.ReplaceAllString(s, "$1")
	s = htmlTag.ReplaceAllString(s, "")
	s = anchor.ReplaceAllString(s, "")
	s = strong.ReplaceAllString(s, "$1")
	s = emphasis.ReplaceAllString(s, "$1")
	s = escapedMark.ReplaceAllString(s, "$1")
	if len(spans) > 0 {
		s = placeholder.ReplaceAllStringFunc(s, func(p string) string {
			i, _ := strconv.Atoi(p[1 : len(p)-1])
			return spans[i]
		})
	}
	return strings.Join(strings.Fields(s), " ")
}

// cutBullet removes a list marker ("- ", "* ", "+ ", "1. ", "2) ").
func cutBullet(t string) (string, bool) {
	for _, m := range []string{"- ", "* ", "+ ", "• "} {
		if rest, ok := strings.CutPrefix(t, m); ok {
			return strings.TrimSpace(rest), true
		}
	}
	i := 0
	for i < len(t) && i < 3 && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i > 0 && i+1 < len(t) && (t[i] == '.' || t[i] == ')') && t[i+1] == ' ' {
		return strings.TrimSpace(t[i+2:]), true
	}
	return t, false
}

// abbreviations end with a period that does not end a sentence.
var abbreviations = map[string]bool{
	"e.g": true, "i.e": true, "etc": true, "vs": true, "cf": true, "mr": true, "mrs": true, "ms": true,
	"dr": true, "st": true, "no": true, "fig": true, "approx": true, "al": true, "ca": true, "resp": true,
}

// span is a sentence's byte range in its paragraph.
type span struct{ start, end int }

// splitSentences cuts a paragraph (spaces already collapsed) after '.',
// '!', '?' or '…' (and any closing quotes or brackets) when a space and
// then an uppercase letter, a digit or an opening quote, bracket or
// backtick follow; abbreviations and initials do not end sentences.
func splitSentences(p string) []span {
	var out []span
	start := 0
	for i, r := range p {
		if r != '.' && r != '!' && r != '?' && r != '…' {
			continue
		}
		end := i + utf8.RuneLen(r)
		for end < len(p) {
			c, size := utf8.DecodeRuneInString(p[end:])
			if !strings.ContainsRune(`"')]”’»*`, c) {
				break
			}
			end += size
		}
		if end >= len(p) || p[end] != ' ' {
			continue
		}
		next, _ := utf8.DecodeRuneInString(p[end+1:])
		if !unicode.IsUpper(next) && !unicode.IsDigit(next) && !strings.ContainsRune("\"'(`[“‘«*", next) {
			continue
		}
		if r == '.' {
			w := p[start:i]
			if k := strings.LastIndexByte(w, ' '); k >= 0 {
				w = w[k+1:]
			}
			w = strings.ToLower(strings.TrimLeft(w, "(\"'"))
			if abbreviations[w] || (utf8.RuneCountInString(w) == 1 && unicode.IsLetter([]rune(w)[0])) {
				continue
			}
		}
		if start < end {
			out = append(out, span{start, end})
		}
		start = end + 1
	}
	if start < len(p) {
		out = append(out, span{start, len(p)})
	}
	return out
}

func letterShare(s string) float64 {
	letters, total := 0, 0
	for _, r := range s {
		if unicode.IsSpace(r) {
			continue
		}
		total++
		if unicode.IsLetter(r) {
			letters++
		}
	}
	if total == 0 {
		return 0
	}
	return float64(letters) / float64(total)
}
