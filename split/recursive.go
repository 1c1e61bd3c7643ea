package split

import (
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/quarry-rag/quarry/document"
)

// RecursiveConfig configures the recursive splitter; Markdown and Auto use it
// as their token budget too.
type RecursiveConfig struct {
	// MaxTokens is the most cl100k_base tokens in a chunk; 0 means 512. A
	// single word longer than that (a URL, a base64 blob, a 10 MB token) is
	// cut by characters into pieces within it: no chunk exceeds the budget.
	MaxTokens int
	// OverlapTokens bounds, in tokens, how much of the previous chunk's end
	// a chunk starts with: the most whole sentences that fit, else the
	// longest run of words that fits, always fewer words than the previous
	// chunk. 0 means 64, or MaxTokens/8 when that is smaller. Must be below
	// MaxTokens.
	OverlapTokens int
	// NoOverlap turns overlap off; OverlapTokens must then be 0.
	NoOverlap bool
	// Tokenizer counts tokens; nil means the splitter loads its own on first
	// use. Share one to load the vocabulary once for several splitters.
	Tokenizer *Tokenizer
}

// Recursive cuts text into chunks of at most MaxTokens tokens, ending each
// chunk at the last paragraph break that fits, else the last sentence end,
// else the last word; chunks are verbatim ranges of the input. Create it with
// NewRecursive.
type Recursive struct {
	maxTokens, overlap int
	tok                *Tokenizer
}

// NewRecursive validates cfg and returns a recursive splitter. Errors are
// *ConfigError.
func NewRecursive(cfg RecursiveConfig) (*Recursive, error) {
	return newRecursive("recursive", cfg)
}

func newRecursive(name string, cfg RecursiveConfig) (*Recursive, error) {
	if cfg.MaxTokens < 0 {
		return nil, mustBePositive(name, "maxTokens", cfg.MaxTokens)
	}
	if cfg.OverlapTokens < 0 {
		return nil, mustNotBeNegative(name, "overlapTokens", cfg.OverlapTokens)
	}
	if cfg.NoOverlap && cfg.OverlapTokens != 0 {
		return nil, &ConfigError{name, "overlapTokens", "must be 0 when overlap is turned off"}
	}
	r := &Recursive{maxTokens: cfg.MaxTokens, overlap: cfg.OverlapTokens, tok: cfg.Tokenizer}
	if r.maxTokens == 0 {
		r.maxTokens = 512
	}
	if r.overlap == 0 && !cfg.NoOverlap {
		r.overlap = min(64, r.maxTokens/8)
	}
	if r.overlap >= r.maxTokens {
		return nil, &ConfigError{name, "overlapTokens", lessThan(r.overlap, "maxTokens", r.maxTokens)}
	}
	if r.tok == nil {
		r.tok = new(Tokenizer)
	}
	return r, nil
}

// Split implements Splitter.
func (r *Recursive) Split(doc *document.Document) ([]*document.Document, error) {
	if err := checkText(doc); err != nil {
		return nil, err
	}
	p, err := r.pieces(doc.Content, 0, len(doc.Content))
	if err != nil {
		return nil, wrapSource(doc, err)
	}
	return chunks(doc, p), nil
}

// recursiveWindow bounds the text one pass of the splitter works on. Its
// bookkeeping is several machine words per word of text, so a 45 MB
// paragraph would take over a gigabyte at once; longer text is first cut
// into windows at the strongest boundary near each window's end.
const recursiveWindow = 1 << 20

// pieces cuts text[from:to] into verbatim pieces with offsets into text.
func (r *Recursive) pieces(text string, from, to int) ([]piece, error) {
	if to-from <= recursiveWindow {
		return r.window(text, from, to)
	}
	var out []piece
	for w := from; w < to; {
		end := windowEnd(text, w, to)
		p, err := r.window(text, w, end)
		if err != nil {
			return nil, err
		}
		out = append(out, p...)
		w = end
	}
	return out, nil
}

// windowEnd is where the window starting at w ends: the last paragraph
// break, else sentence end, else white space in the window's final
// sixteenth, else the window's end at a character boundary.
func windowEnd(text string, w, to int) int {
	end := w + recursiveWindow
	if end >= to {
		return to
	}
	lo := end - recursiveWindow/16
	if i := strings.LastIndex(text[lo:end], "\n\n"); i >= 0 {
		return lo + i + 2
	}
	for _, sep := range []string{". ", "? ", "! ", ".\n", "\n", " ", "\t"} {
		if i := strings.LastIndex(text[lo:end], sep); i >= 0 {
			return lo + i + len(sep)
		}
	}
	for end > w && !utf8.RuneStart(text[end]) {
		end--
	}
	return end
}

// window cuts text[from:to] into verbatim pieces with offsets into text.
// A word far over the budget is cut apart first, so the tokenizer (whose
// cost grows faster than linearly in one word's length) never sees it
// whole; the text between such words is cut as usual.
func (r *Recursive) window(text string, from, to int) ([]piece, error) {
	words := fields(text[from:to])
	for i := range words {
		words[i].start += from
		words[i].end += from
	}
	var out []piece
	seg := 0
	for i, w := range words {
		if w.end-w.start <= 8*r.maxTokens {
			continue
		}
		p, err := r.plain(text, words[seg:i])
		if err != nil {
			return nil, err
		}
		out = append(out, p...)
		out = append(out, r.hardCut(text, w)...)
		seg = i + 1
	}
	p, err := r.plain(text, words[seg:])
	if err != nil {
		return nil, err
	}
	return append(out, p...), nil
}

// plain cuts the text spanned by words (offsets into text) into pieces.
func (r *Recursive) plain(text string, words []word) ([]piece, error) {
	if len(words) == 0 {
		return nil, nil
	}
	from, to := words[0].start, words[len(words)-1].end
	nw := len(words)
	count := func(s, e int) (int, error) { return r.tok.Count(text[words[s].start:words[e-1].end]) }

	// A token covers at least one byte, so a range no longer in bytes than
	// the budget fits without counting.
	if words[nw-1].end-words[0].start <= r.maxTokens {
		return []piece{{start: words[0].start, end: words[nw-1].end}}, nil
	}
	// Small enough as a whole: skip estimating. Beyond 16 bytes a token the
	// range almost never fits, and the loop below checks it anyway.
	if to-from <= 16*r.maxTokens {
		n, err := count(0, nw)
		if err != nil {
			return nil, err
		}
		if n <= r.maxTokens {
			return []piece{{start: words[0].start, end: words[nw-1].end}}, nil
		}
	}

	// Estimate the tokens of a run of words from one tokenization of the
	// whole range: the tokens from the one holding the run's first byte to
	// the last one starting inside it. Runs are then checked exactly, so an
	// estimate only has to be close.
	starts, err := r.tok.starts(text[from:to])
	if err != nil {
		return nil, err
	}
	first := make([]int, nw) // index of the token holding the word's first byte
	end := make([]int, nw)   // number of tokens starting before the word's end
	t := 0
	for i, w := range words {
		for t+1 < len(starts) && from+starts[t+1] <= w.start {
			t++
		}
		first[i] = t
		e := t
		for e < len(starts) && from+starts[e] < w.end {
			e++
		}
		end[i] = e
	}
	est := func(s, e int) int { return end[e-1] - first[s] }

	strength := make([]int, nw) // strength[i]: the gap before word i
	for i := 1; i < nw; i++ {
		strength[i] = boundary(text, words[i-1], words[i])
	}
	// cut returns the end of a chunk of new words n.. fitting up to e: the
	// last paragraph break, else the last sentence end, else e.
	cut := func(n, e int) int {
		for _, want := range []int{paragraphBreak, sentenceBreak} {
			for b := e; b > n; b-- {
				if strength[b] == want {
					return b
				}
			}
		}
		return e
	}
	// fit returns the largest e > n with est(s, e) within budget, or n.
	fit := func(s, n int) int {
		k := sort.Search(nw-n, func(k int) bool { return est(s, n+1+k) > r.maxTokens })
		return n + k
	}

	var out []piece
	for s, n := 0, 0; n < nw; {
		// Words s..n-1 repeat the end of the previous chunk; n.. are new.
		e := fit(s, n)
		if e == n && s < n {
			s, e = n, fit(n, n)
		}
		if e == n {
			// A word over the budget on its own: cut it by characters.
			// Its pieces take no overlap; the next chunk starts after it.
			if hard := r.hardCut(text, words[n]); len(hard) > 1 {
				out = append(out, hard...)
				n++
				s = n
				continue
			}
			e = n + 1
		}
		c := e
		if e < nw {
			c = cut(n, e)
		}
		for c > n+1 || s < n {
			k, err := count(s, c)
			if err != nil {
				return nil, err
			}
			if k <= r.maxTokens {
				break
			}
			if c > n+1 {
				c = cut(n, c-1)
			} else {
				s = n
			}
		}
		out = append(out, piece{start: words[s].start, end: words[c-1].end})
		s, err = r.overlapStart(s, c, strength, est, count)
		if err != nil {
			return nil, err
		}
		n = c
	}
	return out, nil
}

// overlapStart returns where the chunk after words s..c-1 starts: the
// earliest word o > s whose run o..c-1 is within the overlap budget, moved
// up to the first sentence start in that run when there is one, so overlaps
// read as whole sentences whenever they can; c when nothing fits.
func (r *Recursive) overlapStart(s, c int, strength []int, est func(int, int) int, count func(int, int) (int, error)) (int, error) {
	if r.overlap == 0 || c-s <= 1 {
		return c, nil
	}
	o := s + 1 + sort.Search(c-s-1, func(k int) bool { return est(s+1+k, c) <= r.overlap })
	for ; o < c; o++ {
		k, err := count(o, c)
		if err != nil {
			return 0, err
		}
		if k <= r.overlap {
			break
		}
	}
	if o == c {
		return c, nil
	}
	for o-1 > s {
		k, err := count(o-1, c)
		if err != nil {
			return 0, err
		}
		if k > r.overlap {
			break
		}
		o--
	}
	for b := o; b < c; b++ {
		if strength[b] >= sentenceBreak {
			return b, nil
		}
	}
	return o, nil
}

// hardCut cuts one word into pieces of at most maxTokens bytes, each
// ending at a character boundary. A token covers at least one byte, so each
// piece is within the budget without tokenizing the word; such words (a
// base64 blob, a run of one character) are rarely prose.
func (r *Recursive) hardCut(text string, w word) []piece {
	var out []piece
	for pos := w.start; pos < w.end; {
		end := runeFloor(text, pos, min(pos+r.maxTokens, w.end))
		out = append(out, piece{start: pos, end: end})
		pos = end
	}
	return out
}

// runeFloor moves i back to a character boundary, never to pos or before
// (a single character is the least a piece holds).
func runeFloor(text string, pos, i int) int {
	for i > pos+1 && i < len(text) && !utf8.RuneStart(text[i]) {
		i--
	}
	if i <= pos {
		_, n := utf8.DecodeRuneInString(text[pos:])
		return pos + n
	}
	return i
}
