package split

import (
	"strings"
	"unicode/utf8"

	"github.com/quarry-rag/quarry/document"
)

// DelimiterConfig configures the delimiter splitter (SEMANTICS §3). Lengths
// count Unicode characters.
type DelimiterConfig struct {
	// MaxLength is the longest chunk in characters; 0 means 1000. A single
	// word longer than MaxLength is a chunk of its own and is never cut.
	MaxLength int
	// Separator splits the text into words and joins them back; "" means " ".
	Separator string
	// WordOverlap is how many trailing words of a chunk the next one starts
	// with; at most the chunk's words minus one, and fewer when the next word
	// would not fit. 0 means none.
	WordOverlap int
	// MinLength makes a chunk shorter than it join the previous chunk when
	// that one is within MaxLength, so MaxLength is exceeded by one short
	// chunk at most. 0 turns this off; otherwise it must be below MaxLength.
	MinLength int
}

// Delimiter packs separator-delimited words greedily into chunks of at most
// MaxLength characters. Create it with NewDelimiter.
type Delimiter struct {
	maxLength, overlap, minLength int
	sep                           string
	sepLen                        int
}

// NewDelimiter validates cfg and returns a delimiter splitter. Errors are
// *ConfigError.
func NewDelimiter(cfg DelimiterConfig) (*Delimiter, error) {
	const name = "delimiter"
	if cfg.MaxLength < 0 {
		return nil, mustBePositive(name, "maxLength", cfg.MaxLength)
	}
	if cfg.WordOverlap < 0 {
		return nil, mustNotBeNegative(name, "wordOverlap", cfg.WordOverlap)
	}
	if cfg.MinLength < 0 {
		return nil, mustNotBeNegative(name, "minLength", cfg.MinLength)
	}
	d := &Delimiter{maxLength: cfg.MaxLength, overlap: cfg.WordOverlap, minLength: cfg.MinLength, sep: cfg.Separator}
	if d.maxLength == 0 {
		d.maxLength = 1000
	}
	if d.sep == "" {
		d.sep = " "
	}
	if d.minLength > 0 && d.minLength >= d.maxLength {
		return nil, &ConfigError{name, "minLength", lessThan(d.minLength, "maxLength", d.maxLength)}
	}
	d.sepLen = utf8.RuneCountInString(d.sep)
	return d, nil
}

// Split implements Splitter.
func (d *Delimiter) Split(doc *document.Document) ([]*document.Document, error) {
	if err := checkText(doc); err != nil {
		return nil, err
	}
	return chunks(doc, d.pieces(doc.Content)), nil
}

// word is a byte range of the input with its length in characters.
type word struct{ start, end, n int }

func (d *Delimiter) pieces(text string) []piece {
	if text == "" {
		return nil
	}
	if utf8.RuneCountInString(text) <= d.maxLength {
		return []piece{{start: 0, end: len(text)}}
	}
	words := make([]word, 0, strings.Count(text, d.sep)+1)
	for pos := 0; pos <= len(text); {
		i := strings.Index(text[pos:], d.sep)
		end := len(text)
		if i >= 0 {
			end = pos + i
		}
		if end > pos {
			words = append(words, word{pos, end, utf8.RuneCountInString(text[pos:end])})
		}
		if i < 0 {
			break
		}
		pos = end + len(d.sep)
	}
	// sum[i] is the characters of words[:i]; a run's length adds separators.
	sum := make([]int, len(words)+1)
	for i, w := range words {
		sum[i+1] = sum[i] + w.n
	}
	length := func(a, b int) int { return sum[b] - sum[a] + (b-a-1)*d.sepLen }

	var runs [][2]int // word ranges [a, b), in order
	a := 0
	for i := 1; i < len(words); i++ {
		if length(a, i+1) <= d.maxLength {
			continue
		}
		runs = append(runs, [2]int{a, i})
		o := i - min(d.overlap, i-a-1)
		for o < i && length(o, i+1) > d.maxLength {
			o++
		}
		a = o
	}
	if len(words) > 0 {
		runs = append(runs, [2]int{a, len(words)})
	}

	// Merge short chunks into the previous one (min_length).
	var groups [][][2]int
	var groupLen []int
	for _, r := range runs {
		n := length(r[0], r[1])
		last := len(groups) - 1
		if d.minLength > 0 && last >= 0 && n < d.minLength && groupLen[last] <= d.maxLength {
			groups[last] = append(groups[last], r)
			groupLen[last] += d.sepLen + n
			continue
		}
		groups = append(groups, [][2]int{r})
		groupLen = append(groupLen, n)
	}

	out := make([]piece, len(groups))
	var b strings.Builder
	for i, g := range groups {
		b.Reset()
		b.Grow(words[g[len(g)-1][1]-1].end - words[g[0][0]].start)
		for j, r := range g {
			for k := r[0]; k < r[1]; k++ {
				if j > 0 || k > r[0] {
					b.WriteString(d.sep)
				}
				b.WriteString(text[words[k].start:words[k].end])
			}
		}
		out[i] = piece{start: words[g[0][0]].start, end: words[g[len(g)-1][1]-1].end, text: b.String(), normalised: true}
	}
	return out
}
