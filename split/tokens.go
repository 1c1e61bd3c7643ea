package split

import (
	"fmt"
	"strings"
	"sync"

	"github.com/tiktoken-go/tokenizer"
)

// Tokenizer counts tokens with OpenAI's cl100k_base encoding, the unit of
// Quarry's token budgets. Its vocabulary is compiled into the binary (nothing
// is downloaded) and loads on first use, once per Tokenizer (about 20 ms).
// The zero value is ready to use; a Tokenizer is safe for concurrent use and
// must not be copied after first use.
type Tokenizer struct {
	once  sync.Once
	codec tokenizer.Codec
	err   error
}

func (t *Tokenizer) load() (tokenizer.Codec, error) {
	t.once.Do(func() {
		t.codec, t.err = tokenizer.Get(tokenizer.Cl100kBase)
		if t.err != nil {
			t.err = fmt.Errorf("load cl100k_base: %w", t.err)
		}
	})
	return t.codec, t.err
}

// Count returns the number of cl100k_base tokens in text.
func (t *Tokenizer) Count(text string) (int, error) {
	c, err := t.load()
	if err != nil {
		return 0, err
	}
	n, err := c.Count(text)
	if err != nil {
		return 0, fmt.Errorf("count tokens: %w", err)
	}
	// tiktoken-go v0.10.0 drops U+007F (DEL) instead of encoding it;
	// cl100k_base gives it a token of its own.
	return n + strings.Count(text, "\x7f"), nil
}

// starts returns the byte offset at which each token of text starts, in
// order. text must be valid UTF-8: the encoder rewrites invalid bytes, which
// would shift every offset after them.
func (t *Tokenizer) starts(text string) ([]int, error) {
	c, err := t.load()
	if err != nil {
		return nil, err
	}
	_, toks, err := c.Encode(text)
	if err != nil {
		return nil, fmt.Errorf("tokenize: %w", err)
	}
	out := make([]int, len(toks))
	off := 0
	for i, tok := range toks {
		// Tokens are consecutive pieces of text, except where the encoder
		// dropped a character (see Count).
		if !strings.HasPrefix(text[off:], tok) {
			j := strings.Index(text[off:], tok)
			if j < 0 {
				return nil, fmt.Errorf("tokenize: token %d (%q) is not in the text after byte %d", i, tok, off)
			}
			off += j
		}
		out[i] = off
		off += len(tok)
	}
	return out, nil
}
