package split_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/split"
)

// prose returns n words of deterministic English-like text: sentences of 4
// to 30 words, paragraphs of 2 to 6 sentences.
func prose(n int) string {
	vocab := strings.Fields(`the a retrieval engine splits documents into chunks that embed well and cite
		their sources precisely while tokens count against a budget measured with cl100k so every
		paragraph keeps its sentences together unless one grows too long for the window overlap
		repeats context across boundaries which helps answers quote text faithfully from manuals
		reports notes specifications handbooks tutorials and reference pages about databases indexes`)
	var b strings.Builder
	seed := uint32(42)
	next := func(m int) int {
		seed = seed*1664525 + 1013904223
		return int(seed>>8) % m
	}
	words, sentence, sentenceLen, inParagraph, paragraphLen := 0, 0, 4+next(27), 0, 2+next(5)
	for words < n {
		w := vocab[next(len(vocab))]
		if sentence == 0 {
			w = strings.ToUpper(w[:1]) + w[1:]
		}
		b.WriteString(w)
		words++
		sentence++
		switch {
		case sentence == sentenceLen || words == n:
			b.WriteByte('.')
			sentence, sentenceLen = 0, 4+next(27)
			inParagraph++
			if inParagraph == paragraphLen {
				b.WriteString("\n\n")
				inParagraph, paragraphLen = 0, 2+next(5)
			} else {
				b.WriteByte(' ')
			}
		case next(12) == 0:
			b.WriteString(", ")
		default:
			b.WriteByte(' ')
		}
	}
	return strings.TrimSpace(b.String())
}

func countTokens(t testing.TB, tok *split.Tokenizer, s string) int {
	t.Helper()
	n, err := tok.Count(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestRecursiveBudgetAndOverlap(t *testing.T) {
	text := prose(5000)
	if got := len(strings.Fields(text)); got != 5000 {
		t.Fatalf("prose has %d words", got)
	}
	tok := new(split.Tokenizer)
	r, err := split.NewRecursive(split.RecursiveConfig{MaxTokens: 256, OverlapTokens: 32, Tokenizer: tok})
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := r.Split(fileDoc("a.txt", text))
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) < 20 {
		t.Fatalf("only %d chunks", len(chunks))
	}
	sentences := 0 // overlaps that start at a sentence start
	for i, c := range chunks {
		p := c.Provenance
		if c.Content != text[p.CharStart:p.CharEnd] {
			t.Fatalf("chunk %d is not the text at its offsets", i)
		}
		if n := countTokens(t, tok, c.Content); n > 256 {
			t.Errorf("chunk %d has %d tokens", i, n)
		}
		if i < len(chunks)-1 && !strings.HasSuffix(c.Content, ".") {
			t.Errorf("chunk %d does not end at a sentence end: …%q", i, c.Content[max(0, len(c.Content)-30):])
		}
		if i == 0 {
			if p.CharStart != 0 {
				t.Errorf("first chunk starts at %d", p.CharStart)
			}
			continue
		}
		prev := chunks[i-1]
		pp := prev.Provenance
		if p.CharStart >= pp.CharEnd || p.CharStart <= pp.CharStart {
			t.Fatalf("chunk %d [%d,%d) does not overlap chunk %d [%d,%d)", i, p.CharStart, p.CharEnd, i-1, pp.CharStart, pp.CharEnd)
		}
		overlap := text[p.CharStart:pp.CharEnd]
		if !strings.HasSuffix(prev.Content, overlap) || !strings.HasPrefix(c.Content, overlap) {
			t.Fatalf("chunk %d: overlap %q is not the end of the previous chunk", i, overlap)
		}
		if n := countTokens(t, tok, overlap); n > 32 || n == 0 {
			t.Errorf("chunk %d: overlap of %d tokens", i, n)
		}
		// The overlap is the longest run of the previous chunk's last words
		// within 32 tokens (one more word would not fit), or whole sentences.
		before := strings.TrimRightFunc(text[pp.CharStart:p.CharStart], unicode.IsSpace)
		if strings.HasSuffix(before, ".") {
			sentences++
		} else if j := strings.LastIndexFunc(before, unicode.IsSpace); j >= 0 {
			longer := text[pp.CharStart+j+1 : pp.CharEnd]
			if n := countTokens(t, tok, longer); n <= 32 {
				t.Errorf("chunk %d: overlap %q could have taken %q (%d tokens)", i, overlap, longer, n)
			}
		}
	}
	if sentences == 0 {
		t.Error("no overlap is made of whole sentences")
	}
	if last := chunks[len(chunks)-1].Provenance; last.CharEnd != len(text) {
		t.Errorf("last chunk ends at %d of %d", last.CharEnd, len(text))
	}
}

func TestRecursivePrefersParagraphs(t *testing.T) {
	paragraphs := strings.Split(prose(600), "\n\n")
	text := strings.Join(paragraphs, "\n\n")
	r, err := split.NewRecursive(split.RecursiveConfig{MaxTokens: 300, NoOverlap: true})
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := r.Split(fileDoc("a.txt", text))
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range chunks {
		p := c.Provenance
		if i > 0 && p.CharStart < chunks[i-1].Provenance.CharEnd {
			t.Errorf("chunk %d overlaps without overlap", i)
		}
		// Every paragraph is well under the budget, so chunks hold whole paragraphs.
		if p.CharEnd != len(text) && !strings.HasPrefix(text[p.CharEnd:], "\n\n") {
			t.Errorf("chunk %d ends inside a paragraph: …%q", i, c.Content[max(0, len(c.Content)-30):])
		}
	}
}

// TestRecursiveLongWordIsCut: a word over the budget is cut by characters
// into chunks of its own within the budget, which together are the word.
func TestRecursiveLongWordIsCut(t *testing.T) {
	long := strings.Repeat("x9", 600) + "é" + strings.Repeat("日本", 300) // far over 64 tokens
	text := "Some words before it. " + long + " and some words after it, quite a few of them in fact."
	tok := new(split.Tokenizer)
	r, err := split.NewRecursive(split.RecursiveConfig{MaxTokens: 64, OverlapTokens: 8, Tokenizer: tok})
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := r.Split(fileDoc("a.txt", text))
	if err != nil {
		t.Fatal(err)
	}
	var joined strings.Builder
	for _, c := range chunks {
		n, err := tok.Count(c.Content)
		if err != nil {
			t.Fatal(err)
		}
		if n > 64 {
			t.Errorf("chunk of %d tokens: %q", n, c.Content)
		}
		if !utf8.ValidString(c.Content) {
			t.Errorf("chunk cut inside a character: %q", c.Content)
		}
		if strings.Contains(c.Content, "x9") || strings.Contains(c.Content, "日本") {
			if strings.Contains(c.Content, " ") {
				t.Errorf("a piece of the long word shares its chunk: %q", c.Content)
			}
			joined.WriteString(c.Content)
		}
		if got := text[c.Provenance.CharStart:c.Provenance.CharEnd]; got != c.Content {
			t.Errorf("offsets %d-%d give %q, not the chunk", c.Provenance.CharStart, c.Provenance.CharEnd, got)
		}
	}
	if joined.String() != long {
		t.Errorf("the long word's pieces do not rebuild it: %d of %d bytes", joined.Len(), len(long))
	}
}

// TestRecursiveHugeParagraph: text far past the splitter's window is cut
// into windows and loses nothing; every chunk is within budget.
func TestRecursiveHugeParagraph(t *testing.T) {
	words := []string{"alpha", "beta", "gamma", "delta", "stone", "quarry", "river"}
	var b strings.Builder
	for i := 0; b.Len() < 3<<20; i++ {
		b.WriteString(words[i*7%len(words)])
		b.WriteByte(' ')
	}
	text := strings.TrimSpace(b.String())
	tok := new(split.Tokenizer)
	r, err := split.NewRecursive(split.RecursiveConfig{NoOverlap: true, Tokenizer: tok})
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := r.Split(fileDoc("a.txt", text))
	if err != nil {
		t.Fatal(err)
	}
	end := 0
	for _, c := range chunks {
		if n, _ := tok.Count(c.Content); n > 512 {
			t.Fatalf("chunk of %d tokens", n)
		}
		if strings.TrimSpace(text[end:c.Provenance.CharStart]) != "" {
			t.Fatalf("text lost before offset %d", c.Provenance.CharStart)
		}
		end = c.Provenance.CharEnd
	}
	if end != len(text) {
		t.Fatalf("chunks end at %d of %d", end, len(text))
	}
}

func TestRecursiveSmallTextIsOneChunk(t *testing.T) {
	r, err := split.NewRecursive(split.RecursiveConfig{})
	if err != nil {
		t.Fatal(err)
	}
	text := "\n\n  A short note.\n\nWith two paragraphs.  \n"
	chunks, err := r.Split(document.New(text))
	if err != nil || len(chunks) != 1 {
		t.Fatal(chunks, err)
	}
	if c := chunks[0]; c.Content != "A short note.\n\nWith two paragraphs." || c.Provenance.LineStart != 3 || c.Provenance.LineEnd != 5 {
		t.Errorf("%q %+v", c.Content, c.Provenance)
	}
}
