// Package hash is Quarry's default offline embedder: signed feature hashing
// of word unigrams, word bigrams and character n-grams into a fixed number
// of dimensions, with sublinear term frequency and L2 normalisation.
//
// It is lexical, not semantic — two texts are close when they share words
// and word pieces — and honest about it: no model, no download, the same
// vector for the same text on every machine. Its value is as a second,
// typo- and morphology-tolerant view next to BM25.
package hash

import (
	"context"
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/quarry-rag/quarry/embed"
)

// DefaultDimension is the vector size of the default configuration.
const DefaultDimension = 512

// Config tunes the embedder. Zero values mean the defaults.
type Config struct {
	// Dimension is the vector size, DefaultDimension when 0.
	Dimension int
	// MinGram and MaxGram bound the character n-grams taken from each word
	// (with boundary marks), 3 and 5 when 0.
	MinGram, MaxGram int
}

// Embedder is the hash embedder. It is safe for concurrent use.
type Embedder struct {
	dim              int
	minGram, maxGram int
}

// Weights of each feature family, relative to a word unigram.
const (
	bigramWeight = 0.5
	gramWeight   = 0.25
)

// New returns a hash embedder.
func New(cfg Config) (*Embedder, error) {
	e := &Embedder{dim: cfg.Dimension, minGram: cfg.MinGram, maxGram: cfg.MaxGram}
	if e.dim == 0 {
		e.dim = DefaultDimension
	}
	if e.minGram == 0 {
		e.minGram = 3
	}
	if e.maxGram == 0 {
		e.maxGram = 5
	}
	if e.dim < 2 || e.dim > 1<<16 {
		return nil, fmt.Errorf("hash embedder: dimension %d outside [2, 65536]", e.dim)
	}
	if e.minGram < 1 || e.maxGram < e.minGram || e.maxGram > 16 {
		return nil, fmt.Errorf("hash embedder: character n-grams %d..%d are not a valid range", e.minGram, e.maxGram)
	}
	return e, nil
}

// Model implements embed.Embedder. The model name encodes the configuration,
// so a collection refuses vectors made with different settings.
func (e *Embedder) Model() embed.ModelInfo {
	return embed.ModelInfo{
		Provider:   "hash",
		Model:      fmt.Sprintf("hash-v1-%d-c%d%d", e.dim, e.minGram, e.maxGram),
		Dimension:  e.dim,
		Normalized: true,
	}
}

// Embed implements embed.Embedder. It never fails except on cancellation.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	counts := &table{}
	for i, t := range texts {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		out[i] = e.vector(t, counts)
		counts.reset()
	}
	return out, nil
}

// vector embeds one text; counts is scratch space.
func (e *Embedder) vector(text string, counts *table) []float32 {
	words := tokenize(text)
	var runes []rune
	var buf []byte
	for i, w := range words {
		counts.inc(tag(hashString(hashByte(offset, 'w'), w), familyWord))
		if i > 0 {
			h := hashString(hashByte(offset, 'b'), words[i-1])
			h = hashString(hashByte(h, 0), w)
			counts.inc(tag(h, familyBigram))
		}
		runes = append(append(append(runes[:0], '<'), []rune(w)...), '>')
		for n := e.minGram; n <= e.maxGram; n++ {
			for j := 0; j+n <= len(runes); j++ {
				buf = buf[:0]
				for _, r := range runes[j : j+n] {
					buf = utf8.AppendRune(buf, r)
				}
				counts.inc(tag(hashBytes(hashByte(offset, 'g'), buf), familyGram))
			}
		}
	}
	if counts.len() == 0 {
		// Text without a word still gets a stable, non-zero vector.
		counts.inc(tag(hashString(hashByte(offset, 'r'), text), familyWord))
	}
	v := make([]float32, e.dim)
	for _, slot := range counts.used {
		h, c := counts.keys[slot], counts.vals[slot]
		weight := 1 + math.Log(float64(c)) // sublinear term frequency
		switch h >> 62 {
		case familyBigram:
			weight *= bigramWeight
		case familyGram:
			weight *= gramWeight
		}
		idx := (h & (1<<60 - 1)) % uint64(e.dim)
		if h&(1<<60) != 0 {
			weight = -weight
		}
		v[idx] += float32(weight)
	}
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		// Every feature cancelled out: fall back to one dimension.
		v[0] = 1
		return v
	}
	inv := float32(1 / math.Sqrt(sum))
	for i := range v {
		v[i] *= inv
	}
	return v
}

// Families are tagged in the top two bits of a feature hash so weights can
// be applied after counting.
const (
	familyWord   = 0
	familyBigram = 1
	familyGram   = 2
)

// FNV-1a, 64 bits.
const (
	offset = 14695981039346656037
	prime  = 1099511628211
)

func hashByte(h uint64, c byte) uint64 { return (h ^ uint64(c)) * prime }

func hashString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * prime
	}
	return h
}

func hashBytes(h uint64, b []byte) uint64 {
	for _, c := range b {
		h = (h ^ uint64(c)) * prime
	}
	return h
}

func tag(h uint64, family uint64) uint64 { return h&(1<<62-1) | family<<62 }

// tokenize splits text into lower-cased runs of letters and digits.
func tokenize(text string) []string {
	var words []string
	start := -1
	for i, r := range text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			words = append(words, strings.ToLower(text[start:i]))
			start = -1
		}
	}
	if start >= 0 {
		words = append(words, strings.ToLower(text[start:]))
	}
	return words
}

// table counts feature hashes: open addressing with linear probing, reused
// across texts (a map costs most of the embedding time).
type table struct {
	keys []uint64
	vals []uint32
	used []int // occupied slots, in insertion order
}

func (t *table) len() int { return len(t.used) }

func (t *table) inc(h uint64) {
	if 2*(len(t.used)+1) > len(t.keys) {
		t.grow()
	}
	mask := len(t.keys) - 1
	i := int(h*0x9e3779b97f4a7c15>>32) & mask
	for {
		switch {
		case t.vals[i] == 0:
			t.keys[i], t.vals[i] = h, 1
			t.used = append(t.used, i)
			return
		case t.keys[i] == h:
			t.vals[i]++
			return
		}
		i = (i + 1) & mask
	}
}

func (t *table) grow() {
	old := *t
	n := max(1024, 2*len(old.keys))
	t.keys, t.vals, t.used = make([]uint64, n), make([]uint32, n), make([]int, 0, n/2)
	for _, slot := range old.used {
		h, c := old.keys[slot], old.vals[slot]
		t.inc(h)
		t.vals[t.used[len(t.used)-1]] = c
	}
}

func (t *table) reset() {
	for _, slot := range t.used {
		t.vals[slot] = 0
	}
	t.used = t.used[:0]
}
