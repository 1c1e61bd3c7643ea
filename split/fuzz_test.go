package split

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/quarry-rag/quarry/document"
)

// Seeds shared by the fuzz targets: the shapes each splitter cares about.
var fuzzSeeds = []string{
	"",
	"one two three four five six",
	"First sentence. Second one! «Third» one? Fourth…  Fifth.\n\nNew paragraph here.",
	"# Title\n\nSome text under it.\n\n## Sub\n\n```\n# code\n```\nSetext\n---\nmore text here for the section",
	"package p\n\n// A does a.\nfunc A() {}\n\ntype T struct{}\n\nvar v = 1\n",
	"class A:\n    def f(self):\n        pass\n\n@dec\ndef g():\n    return 1\n",
	"xxxxxxxxxxxxxxxxxxxxxxxxx a xxxxxxxxxxxxxxxxxxxxxxxxx",
	"a\r\n\r\nb\tc\u00a0d\u2028e  é ü ñ 你好世界",
}

// splitOrSkip splits text; invalid UTF-8 must be an error, anything else
// must not be.
func splitOrSkip(t *testing.T, s Splitter, name, text string) []*document.Document {
	doc := document.New(text)
	doc.SourceName = name
	doc.Provenance.Source = name
	chunks, err := s.Split(doc)
	if !utf8.ValidString(text) {
		if err == nil {
			t.Fatal("invalid UTF-8 split without an error")
		}
		t.Skip("invalid UTF-8 is an error, as it should be")
	}
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range chunks {
		p := c.Provenance
		if p.ChunkIndex != i || p.ChunkCount != len(chunks) || p.CharStart < 0 || p.CharEnd > len(text) || p.CharStart >= p.CharEnd {
			t.Fatalf("chunk %d provenance %+v (text %d bytes)", i, p, len(text))
		}
		// Sentence overlap may repeat a whole one-word chunk, so starts may tie.
		if i > 0 && p.CharStart < chunks[i-1].Provenance.CharStart {
			t.Fatalf("chunk %d starts at %d, before chunk %d", i, p.CharStart, i-1)
		}
		if c.Content == "" {
			t.Fatalf("chunk %d is empty", i)
		}
	}
	return chunks
}

// checkVerbatim wants each chunk to be its byte range of text, the chunks to
// leave out only whitespace (or what skip allows), and to cover the text
// from its first to its last non-space character.
func checkVerbatim(t *testing.T, text string, chunks []*document.Document, skip func(gap string, start int) bool) {
	covered := 0
	for i, c := range chunks {
		p := c.Provenance
		if c.Content != text[p.CharStart:p.CharEnd] {
			t.Fatalf("chunk %d %q is not text[%d:%d]", i, c.Content, p.CharStart, p.CharEnd)
		}
		if p.CharStart > covered {
			if gap := text[covered:p.CharStart]; strings.TrimSpace(gap) != "" && (skip == nil || !skip(gap, covered)) {
				t.Fatalf("text %q before chunk %d is in no chunk", gap, i)
			}
		}
		covered = max(covered, p.CharEnd)
	}
	if rest := text[covered:]; strings.TrimSpace(rest) != "" && (skip == nil || !skip(rest, covered)) {
		t.Fatalf("text %q after the last chunk is in no chunk", rest)
	}
}

// checkBudget wants every chunk within maxTokens unless it is a single word.
func checkBudget(t *testing.T, tok *Tokenizer, chunks []*document.Document, maxTokens int) {
	for i, c := range chunks {
		n, err := tok.Count(c.Content)
		if err != nil {
			t.Fatal(err)
		}
		if n > maxTokens && strings.IndexFunc(c.Content, unicode.IsSpace) >= 0 {
			t.Fatalf("chunk %d has %d tokens, budget %d: %q", i, n, maxTokens, c.Content)
		}
	}
}

func FuzzDelimiter(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, uint8(10), uint8(1), uint8(0), " ")
		f.Add(s, uint8(5), uint8(3), uint8(2), ".")
	}
	f.Fuzz(func(t *testing.T, text string, maxLength, overlap, minLength uint8, sep string) {
		cfg := DelimiterConfig{MaxLength: int(maxLength%40) + 1, WordOverlap: int(overlap % 6), Separator: sep}
		cfg.MinLength = int(minLength) % cfg.MaxLength
		if utf8.RuneCountInString(sep) > 3 || !utf8.ValidString(sep) {
			return
		}
		d, err := NewDelimiter(cfg)
		if err != nil {
			t.Fatal(err)
		}
		chunks := splitOrSkip(t, d, "a.txt", text)
		if len(chunks) == 0 {
			if text != "" && strings.Trim(text, d.sep) != "" {
				t.Fatalf("no chunks for %q", text)
			}
			return
		}
		if utf8.RuneCountInString(text) <= d.maxLength {
			if len(chunks) != 1 || chunks[0].Content != text {
				t.Fatalf("text within max not kept verbatim: %q", contentsOf(chunks))
			}
			return
		}
		// Every word lies in a chunk; chunks are words joined by the separator.
		pos := 0
		for _, part := range strings.Split(text, d.sep) {
			start := pos
			pos += len(part) + len(d.sep)
			if part == "" {
				continue
			}
			found := false
			for _, c := range chunks {
				found = found || (c.Provenance.CharStart <= start && start+len(part) <= c.Provenance.CharEnd)
			}
			if !found {
				t.Fatalf("word %q at %d is in no chunk", part, start)
			}
		}
		for i, c := range chunks {
			p := c.Provenance
			n := utf8.RuneCountInString(c.Content)
			if d.minLength == 0 {
				var parts []string
				for _, w := range strings.Split(text[p.CharStart:p.CharEnd], d.sep) {
					if w != "" {
						parts = append(parts, w)
					}
				}
				if want := strings.Join(parts, d.sep); c.Content != want {
					t.Fatalf("chunk %d = %q, want %q", i, c.Content, want)
				}
				if n > d.maxLength && len(parts) > 1 {
					t.Fatalf("chunk %d has %d characters, max %d", i, n, d.maxLength)
				}
			} else if n > d.maxLength+d.sepLen+d.minLength-1 && strings.Contains(c.Content, d.sep) {
				t.Fatalf("chunk %d has %d characters, max %d, min %d", i, n, d.maxLength, d.minLength)
			}
		}
	})
}

func FuzzSentence(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, uint8(3), uint8(1), uint8(0))
		f.Add(s, uint8(6), uint8(2), uint8(3))
	}
	f.Fuzz(func(t *testing.T, text string, maxWords, overlap, minWords uint8) {
		cfg := SentenceConfig{MaxWords: int(maxWords%20) + 1}
		cfg.OverlapWords = int(overlap) % cfg.MaxWords
		cfg.MinWords = int(minWords) % cfg.MaxWords
		s, err := NewSentence(cfg)
		if err != nil {
			t.Fatal(err)
		}
		chunks := splitOrSkip(t, s, "a.txt", text)
		if len(chunks) == 0 {
			if strings.TrimSpace(text) != "" {
				t.Fatalf("no chunks for %q", text)
			}
			return
		}
		for _, w := range fields(text) {
			found := false
			for _, c := range chunks {
				found = found || (c.Provenance.CharStart <= w.start && w.end <= c.Provenance.CharEnd)
			}
			if !found {
				t.Fatalf("word %q is in no chunk", text[w.start:w.end])
			}
		}
		for i, c := range chunks {
			n := len(strings.Fields(c.Content))
			if s.minWords == 0 {
				p := c.Provenance
				if want := strings.Join(strings.Fields(text[p.CharStart:p.CharEnd]), " "); c.Content != want {
					t.Fatalf("chunk %d = %q, want %q", i, c.Content, want)
				}
				if n > s.maxWords {
					t.Fatalf("chunk %d has %d words, max %d", i, n, s.maxWords)
				}
			} else if n > s.maxWords+s.minWords-1 {
				t.Fatalf("chunk %d has %d words, max %d, min %d", i, n, s.maxWords, s.minWords)
			}
		}
	})
}

func FuzzRecursive(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, uint8(8), uint8(2))
		f.Add(strings.Repeat(s+" ", 20), uint8(30), uint8(5))
	}
	tok := new(Tokenizer)
	f.Fuzz(func(t *testing.T, text string, maxTokens, overlap uint8) {
		cfg := RecursiveConfig{MaxTokens: int(maxTokens%64) + 4, Tokenizer: tok}
		cfg.OverlapTokens = int(overlap) % cfg.MaxTokens
		cfg.NoOverlap = cfg.OverlapTokens == 0
		r, err := NewRecursive(cfg)
		if err != nil {
			t.Fatal(err)
		}
		chunks := splitOrSkip(t, r, "a.txt", text)
		checkVerbatim(t, text, chunks, nil)
		checkBudget(t, tok, chunks, cfg.MaxTokens)
		for i := 1; i < len(chunks); i++ {
			prev, p := chunks[i-1].Provenance, chunks[i].Provenance
			if r.overlap == 0 && p.CharStart < prev.CharEnd {
				t.Fatalf("chunks %d and %d overlap with overlap off", i-1, i)
			}
			if p.CharStart < prev.CharEnd {
				if n, _ := tok.Count(text[p.CharStart:prev.CharEnd]); n > r.overlap {
					t.Fatalf("chunk %d repeats %d tokens, overlap %d", i, n, r.overlap)
				}
			}
		}
	})
}

func FuzzMarkdown(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, uint8(16))
		f.Add("# A\n\n"+strings.Repeat(s+"\n\n## B\n\n", 5), uint8(40))
	}
	tok := new(Tokenizer)
	f.Fuzz(func(t *testing.T, text string, maxTokens uint8) {
		budget := RecursiveConfig{MaxTokens: int(maxTokens%64) + 8, Tokenizer: tok}
		m, err := NewMarkdown(MarkdownConfig{Budget: budget})
		if err != nil {
			t.Fatal(err)
		}
		chunks := splitOrSkip(t, m, "a.md", text)
		// Only a cut section's lone heading line may be left out: tiny
		// sections join the next chunk.
		secs := sections(text)
		for i, s := range secs {
			if s.start >= s.end || (i > 0 && s.start != secs[i-1].end) {
				t.Fatalf("sections do not tile the text: %+v", secs)
			}
		}
		checkVerbatim(t, text, chunks, func(gap string, start int) bool {
			// Each non-space byte left out lies on a section's heading
			// line (the next chunk's overlap may take part of that line).
			for _, s := range secs {
				lo, hi := max(s.start, start), min(s.end, start+len(gap))
				if lo >= hi {
					continue
				}
				lineEnd := s.start
				if sectionHeading(text, s) != "" {
					lineEnd = s.end
					if i := strings.IndexByte(text[s.start:s.end], '\n'); i >= 0 {
						lineEnd = s.start + i
					}
				}
				if from := max(lo, lineEnd); from < hi && strings.TrimSpace(text[from:hi]) != "" {
					return false
				}
			}
			return true
		})
		checkBudget(t, tok, chunks, budget.MaxTokens)
	})
}

func FuzzCode(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, true, uint8(4))
		f.Add(s, false, uint8(3))
	}
	f.Fuzz(func(t *testing.T, text string, isGo bool, maxLines uint8) {
		c, err := NewCode(CodeConfig{MaxLines: int(maxLines%30) + 1})
		if err != nil {
			t.Fatal(err)
		}
		name := "a.py"
		if isGo {
			name = "a.go"
		}
		chunks := splitOrSkip(t, c, name, text)
		checkVerbatim(t, text, chunks, nil)
		for i, ch := range chunks {
			p := ch.Provenance
			if n := p.LineEnd - p.LineStart + 1; n > c.maxLines {
				t.Fatalf("chunk %d has %d lines, max %d", i, n, c.maxLines)
			}
			if i > 0 && p.CharStart < chunks[i-1].Provenance.CharEnd {
				t.Fatalf("chunks %d and %d overlap", i-1, i)
			}
		}
	})
}

func contentsOf(chunks []*document.Document) []string {
	out := make([]string, len(chunks))
	for i, c := range chunks {
		out[i] = c.Content
	}
	return out
}
