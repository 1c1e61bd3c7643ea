package split

import (
	"sort"

	"github.com/quarry-rag/quarry/document"
)

// RecursiveConfig configures the recursive splitter; Markdown and Auto use it
// as their token budget too.
type RecursiveConfig struct {
	// MaxTokens is the most cl100k_base tokens in a chunk; 0 means 512. Only
	// a single word longer than that (a URL, a base64 blob) exceeds it: words
	// are never cut.
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

// pieces cuts text[from:to] into verbatim pieces with offsets into text.
func (r *Recursive) pieces(text string, from, to int) ([]piece, error) {
	words := fields(text[from:to])
	if len(words) == 0 {
		return nil, nil
	}
	for i := range words {
		words[i].start += from
		words[i].end += from
	}
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
			e = n + 1 // a word over the budget on its own is never cut
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
