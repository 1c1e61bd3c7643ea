package quarry

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/quarry-rag/quarry/index/bm25"
)

// highlightTerms are the query's words worth highlighting: longer than two
// letters and not English stop words.
func highlightTerms(query string) map[string]bool {
	terms := map[string]bool{}
	an, _ := bm25.NewAnalyzer(bm25.AnalyzerConfig{}) // English stop words
	for _, t := range words(query) {
		if utf8.RuneCountInString(t) > 2 && (an == nil || len(an.Analyze(t)) > 0) {
			terms[t] = true
		}
	}
	return terms
}

// Snippet is the window of about width bytes of the passage's text that
// holds the most of the query's words, those words passed through mark
// (bold on a terminal, say), white space collapsed, and "…" where text
// was cut.
func (p Passage) Snippet(query string, width int, mark func(string) string) string {
	return snippet(p.Text, highlightTerms(query), width, mark)
}

func snippet(text string, terms map[string]bool, width int, mark func(string) string) string {
	ws := wordSpans(text)
	hit := func(i int) bool { return terms[strings.ToLower(text[ws[i][0]:ws[i][1]])] }
	// The best window starts at a hit: one starting earlier holds no hit
	// the window from its first hit lacks.
	best, bestStart := 0, 0
	for i := range ws {
		if !hit(i) {
			continue
		}
		score := 0
		for j := i; j < len(ws) && ws[j][1]-ws[i][0] <= width; j++ {
			if hit(j) {
				score++
			}
		}
		if score > best {
			best, bestStart = score, ws[i][0]
		}
	}
	start, end := 0, min(len(text), width)
	if best > 0 && bestStart > 40 {
		// Begin a little before the first hit, at a word boundary, so the
		// hit shows with some of what leads to it.
		start = bestStart - 40
		for start > 0 && !unicode.IsSpace(rune(text[start-1])) {
			start--
		}
		end = min(len(text), start+width)
	}
	for end < len(text) && !utf8.RuneStart(text[end]) {
		end++
	}
	var b strings.Builder
	if start > 0 {
		b.WriteString("…")
	}
	last := start
	for _, s := range ws {
		if s[0] < start || s[1] > end {
			continue
		}
		if terms[strings.ToLower(text[s[0]:s[1]])] {
			b.WriteString(text[last:s[0]])
			b.WriteString(mark(text[s[0]:s[1]]))
			last = s[1]
		}
	}
	b.WriteString(text[last:end])
	if end < len(text) {
		b.WriteString("…")
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

func words(s string) []string {
	var out []string
	for _, sp := range wordSpans(s) {
		out = append(out, strings.ToLower(s[sp[0]:sp[1]]))
	}
	return out
}

func wordSpans(s string) [][2]int {
	var out [][2]int
	start := -1
	for i, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = append(out, [2]int{start, i})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, [2]int{start, len(s)})
	}
	return out
}
