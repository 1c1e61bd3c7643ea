package split

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/quarry-rag/quarry/document"
)

// SentenceConfig configures the sentence splitter (SEMANTICS §3). Words are
// runs of non-whitespace.
type SentenceConfig struct {
	// MaxWords is the most words in a chunk; 0 means 200.
	MaxWords int
	// OverlapWords is how many trailing words of the previous chunk a chunk
	// starts with, reduced so the chunk stays within MaxWords; must be below
	// MaxWords. 0 means none.
	OverlapWords int
	// MinWords makes a chunk with fewer words join the previous chunk when
	// that one is within MaxWords. 0 turns this off; otherwise it must be
	// below MaxWords.
	MinWords int
}

// Sentence packs whole sentences into chunks of at most MaxWords words and
// rejoins their words with single spaces. Create it with NewSentence.
type Sentence struct {
	maxWords, overlap, minWords int
}

// NewSentence validates cfg and returns a sentence splitter. Errors are
// *ConfigError.
func NewSentence(cfg SentenceConfig) (*Sentence, error) {
	const name = "sentence"
	if cfg.MaxWords < 0 {
		return nil, mustBePositive(name, "maxWords", cfg.MaxWords)
	}
	if cfg.OverlapWords < 0 {
		return nil, mustNotBeNegative(name, "overlapWords", cfg.OverlapWords)
	}
	if cfg.MinWords < 0 {
		return nil, mustNotBeNegative(name, "minWords", cfg.MinWords)
	}
	s := &Sentence{maxWords: cfg.MaxWords, overlap: cfg.OverlapWords, minWords: cfg.MinWords}
	if s.maxWords == 0 {
		s.maxWords = 200
	}
	if s.overlap >= s.maxWords {
		return nil, &ConfigError{name, "overlapWords", lessThan(s.overlap, "maxWords", s.maxWords)}
	}
	if s.minWords > 0 && s.minWords >= s.maxWords {
		return nil, &ConfigError{name, "minWords", lessThan(s.minWords, "maxWords", s.maxWords)}
	}
	return s, nil
}

// Split implements Splitter.
func (s *Sentence) Split(doc *document.Document) ([]*document.Document, error) {
	if err := checkText(doc); err != nil {
		return nil, err
	}
	return chunks(doc, s.pieces(doc.Content)), nil
}

// span is a range [a, b) of word indexes.
type span struct{ a, b int }

func (s *Sentence) pieces(text string) []piece {
	words := fields(text)
	if len(words) == 0 {
		return nil
	}
	var out []span // packed chunks
	cur := span{-1, -1}
	empty := func() bool { return cur.a < 0 }
	// overlapped starts a chunk at sentence sa that takes up to the overlap
	// from prev (which always ends at sa) without exceeding maxWords.
	overlapped := func(prev span, sa, sb int) span {
		ov := min(s.overlap, prev.b-prev.a, s.maxWords-(sb-sa))
		return span{sa - max(ov, 0), sb}
	}
	for _, sen := range sentences(text, words) {
		sa, sb := sen.a, sen.b
		n := sb - sa
		switch {
		case n > s.maxWords:
			// Cut the sentence into pieces that are chunks of their own, each
			// starting with the overlap from the chunk before it.
			if !empty() {
				out = append(out, cur)
				cur = span{-1, -1}
			}
			for pos := sa; pos < sb; {
				ov := 0
				if len(out) > 0 {
					prev := out[len(out)-1]
					ov = min(s.overlap, prev.b-prev.a)
				}
				take := min(s.maxWords-ov, sb-pos)
				out = append(out, span{pos - ov, pos + take})
				pos += take
			}
		case empty() && len(out) > 0:
			cur = overlapped(out[len(out)-1], sa, sb)
		case empty():
			cur = span{sa, sb}
		case cur.b-cur.a+n > s.maxWords:
			out = append(out, cur)
			cur = overlapped(cur, sa, sb)
		default:
			cur.b = sb
		}
	}
	if !empty() {
		out = append(out, cur)
	}

	// Merge short chunks into the previous one (min_words).
	var groups [][]span
	var groupWords []int
	for _, c := range out {
		n := c.b - c.a
		last := len(groups) - 1
		if s.minWords > 0 && last >= 0 && n < s.minWords && groupWords[last] <= s.maxWords {
			groups[last] = append(groups[last], c)
			groupWords[last] += n
			continue
		}
		groups = append(groups, []span{c})
		groupWords = append(groupWords, n)
	}

	pieces := make([]piece, len(groups))
	var b strings.Builder
	for i, g := range groups {
		b.Reset()
		for _, c := range g {
			for k := c.a; k < c.b; k++ {
				if b.Len() > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(text[words[k].start:words[k].end])
			}
		}
		pieces[i] = piece{start: words[g[0].a].start, end: words[g[len(g)-1].b-1].end, text: b.String(), normalised: true}
	}
	return pieces
}

// fields returns the runs of non-whitespace in text.
func fields(text string) []word {
	out := make([]word, 0, len(text)/6+1) // about a word per six bytes of prose
	start := -1
	for i, r := range text {
		if unicode.IsSpace(r) {
			if start >= 0 {
				out = append(out, word{start: start, end: i})
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		out = append(out, word{start: start, end: len(text)})
	}
	return out
}

// sentences groups words into sentences: a sentence ends at a paragraph
// break, or after a word ending in . ! ? or … when the next word starts with
// an uppercase letter, optionally after an opening quote.
func sentences(text string, words []word) []span {
	var out []span
	a := 0
	for i := 1; i < len(words); i++ {
		if boundary(text, words[i-1], words[i]) >= sentenceBreak {
			out = append(out, span{a, i})
			a = i
		}
	}
	return append(out, span{a, len(words)})
}

// Strengths of the gap between two words, weakest first.
const (
	wordBreak = iota
	sentenceBreak
	paragraphBreak
)

func boundary(text string, prev, next word) int {
	if strings.Count(text[prev.end:next.start], "\n") >= 2 {
		return paragraphBreak // the gap is whitespace, so two newlines make a blank line
	}
	last, _ := utf8.DecodeLastRuneInString(text[prev.start:prev.end])
	if last != '.' && last != '!' && last != '?' && last != '…' {
		return wordBreak
	}
	w := text[next.start:next.end]
	r, n := utf8.DecodeRuneInString(w)
	if isOpeningQuote(r) {
		r, _ = utf8.DecodeRuneInString(w[n:])
	}
	if unicode.IsUpper(r) {
		return sentenceBreak
	}
	return wordBreak
}

func isOpeningQuote(r rune) bool {
	return strings.ContainsRune("\"'“‘«»„‚‹›「『", r)
}
