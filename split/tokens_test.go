package split_test

import (
	"sync"
	"testing"

	"github.com/quarry-rag/quarry/split"
)

func TestTokenizer(t *testing.T) {
	var tok split.Tokenizer
	for text, want := range map[string]int{
		"":                     0,
		"hello world":          2,
		"a\x7fb":               3, // the encoder drops DEL; cl100k_base gives it a token
		"supercalifragilistic": 7, // tiktoken's own cl100k_base counts
		"We know what we are, but know not what we may be.": 14,
	} {
		if got := countTokens(t, &tok, text); got != want {
			t.Errorf("Count(%q) = %d, want %d", text, got, want)
		}
	}
	// One Tokenizer serves concurrent callers.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if n, err := tok.Count("The quick brown fox."); err != nil || n != 5 {
				t.Errorf("concurrent Count = %d, %v", n, err)
			}
		})
	}
	wg.Wait()
}
