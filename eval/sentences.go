package eval

import (
	"regexp"
	"strconv"

	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/rag"
)

// Sentence metrics hold an answer to the golden set's answering sentences
// and to its unanswerable questions. They need no judge: they read the
// answer's quotes (for a written answer, its statements) and whether it
// abstained. A metric's mean is over the cases it applies to.
const (
	// SentencePrecision is, over answered cases with answering sentences,
	// the share of quoted sentences that are answering ones or come from
	// one of the case's sources.
	SentencePrecision = "sentence_precision"
	// SentenceRecall is, over cases with answering sentences, the share of
	// them the answer quotes (abstaining quotes none).
	SentenceRecall = "sentence_recall"
	// Abstention is the share of unanswerable cases the answer abstained
	// on.
	Abstention = "abstention"
	// Answered is the share of answerable cases the answer did not abstain
	// on.
	Answered = "answered"
	// Markup is the share of answers that quote Markdown or HTML markup
	// (code spans aside); lower is better.
	Markup = "markup"
)

// SentenceMetrics lists the sentence metrics in report order.
var SentenceMetrics = []string{SentencePrecision, SentenceRecall, Abstention, Answered, Markup}

// Sentence matching shares: a quote belongs to an answering sentence when
// most of its terms are that sentence's, and an answering sentence is
// quoted when one quote holds most of its terms. Terms are keyword
// search's (stemmed, stop words out), so markup and spacing do not count.
const (
	quoteInAnswer  = 0.8
	answerInQuotes = 0.7
)

// sentenceScores scores one answer on the sentence metrics that apply to
// its case.
func sentenceScores(an *bm25.Analyzer, g Golden, a *rag.Answer) map[string]Score {
	out := map[string]Score{}
	if g.Unanswerable {
		out[Abstention] = boolScore(a.Abstained, "abstained", "answered an unanswerable question")
	} else {
		out[Answered] = boolScore(!a.Abstained, "answered", "abstained on an answerable question")
	}
	if a.Abstained {
		if len(g.Answers) > 0 {
			out[SentenceRecall] = Score{Score: 0, Reason: "abstained"}
		}
		return out
	}
	out[Markup] = boolScore(HasMarkup(a.Text), "quotes markup", "no markup")

	type quoted struct {
		terms  map[string]bool
		source string
	}
	var quotes []quoted
	if len(a.Quotes) > 0 {
		for _, q := range a.Quotes {
			src := ""
			if q.N >= 1 && q.N <= len(a.Passages) {
				src = a.Passages[q.N-1].Source
			}
			quotes = append(quotes, quoted{termSet(an, q.Text), src})
		}
	} else {
		for _, st := range Statements(a.Text) {
			quotes = append(quotes, quoted{terms: termSet(an, st)})
		}
	}
	if len(g.Answers) == 0 {
		return out
	}
	answers := make([]map[string]bool, len(g.Answers))
	for i, s := range g.Answers {
		answers[i] = termSet(an, s)
	}
	good := 0
	for _, q := range quotes {
		ok := q.source != "" && SourceMatches(q.source, g.Sources)
		for _, ans := range answers {
			ok = ok || overlap(q.terms, ans, len(q.terms)) >= quoteInAnswer
		}
		if ok {
			good++
		}
	}
	if len(quotes) > 0 {
		out[SentencePrecision] = Score{Score: float64(good) / float64(len(quotes)),
			Reason: strconv.Itoa(good) + " of " + strconv.Itoa(len(quotes)) + " quoted sentences answer or come from a relevant source"}
	}
	found := 0
	for _, ans := range answers {
		for _, q := range quotes {
			if overlap(q.terms, ans, len(ans)) >= answerInQuotes {
				found++
				break
			}
		}
	}
	out[SentenceRecall] = Score{Score: float64(found) / float64(len(answers)),
		Reason: strconv.Itoa(found) + " of " + strconv.Itoa(len(answers)) + " answering sentences are quoted"}
	return out
}

func boolScore(ok bool, yes, no string) Score {
	if ok {
		return Score{Score: 1, Reason: yes}
	}
	return Score{Score: 0, Reason: no}
}

func termSet(an *bm25.Analyzer, s string) map[string]bool {
	m := map[string]bool{}
	for _, t := range an.Analyze(s) {
		m[t] = true
	}
	return m
}

// overlap is |a ∩ b| / of, 0 when of is 0.
func overlap(a, b map[string]bool, of int) float64 {
	if of == 0 {
		return 0
	}
	n := 0
	for t := range a {
		if b[t] {
			n++
		}
	}
	return float64(n) / float64(of)
}

var (
	codeSpan = regexp.MustCompile("`[^`]*`")
	markupRE = regexp.MustCompile(`<!--|</?[A-Za-z][A-Za-z0-9-]*(\s[^<>]*)?/?>|\]\(|\]\[|\*\*|\{#|(^|\s)#{1,6}\s|(^|\s)\*[^*\s][^*]*\*`)
)

// HasMarkup reports whether text quotes Markdown or HTML markup outside
// code spans: a comment or tag, link syntax, emphasis, a heading marker or
// a heading anchor.
func HasMarkup(text string) bool {
	return markupRE.MatchString(codeSpan.ReplaceAllString(text, "``"))
}
