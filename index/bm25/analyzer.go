package bm25

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/segment"
	"github.com/blevesearch/snowballstem"
	"github.com/blevesearch/snowballstem/dutch"
	"github.com/blevesearch/snowballstem/english"
	"github.com/blevesearch/snowballstem/french"
	"github.com/blevesearch/snowballstem/german"
	"github.com/blevesearch/snowballstem/italian"
	"github.com/blevesearch/snowballstem/portuguese"
	"github.com/blevesearch/snowballstem/spanish"
)

// DefaultLanguage is the analyzer language when none is configured.
const DefaultLanguage = "english"

// maxTokenBytes drops longer tokens (base64 blobs, minified code): they
// never match a query and would bloat the dictionary. Lucene uses 255 too.
const maxTokenBytes = 255

// AnalyzerConfig selects how text becomes terms. The zero value is English
// with stop words removed and Snowball stemming.
type AnalyzerConfig struct {
	// Language is a name from Languages() or its ISO 639-1 code ("de").
	// Empty means DefaultLanguage.
	Language string
	// KeepStopWords indexes and searches the language's stop words.
	KeepStopWords bool
	// NoStemming keeps words in their lower-cased surface form.
	NoStemming bool
}

// language is the fixed, per-language part of an analyzer.
type language struct {
	name, code string
	stop       string                       // space-separated stop words
	stem       func(*snowballstem.Env) bool // Snowball stemmer
	elision    []string                     // articles cut before an apostrophe (l'avion → avion)
	possessive bool                         // drop a trailing 's (English)
}

// languages lists the supported languages; a function so the table stays
// read-only.
func languages() []language {
	return []language{
		{name: "english", code: "en", stop: englishStop, stem: english.Stem, possessive: true},
		{name: "german", code: "de", stop: germanStop, stem: german.Stem},
		{name: "french", code: "fr", stop: frenchStop, stem: french.Stem,
			elision: []string{"l", "m", "t", "qu", "n", "s", "j", "d", "c", "jusqu", "quoiqu", "lorsqu", "puisqu"}},
		{name: "spanish", code: "es", stop: spanishStop, stem: spanish.Stem},
		{name: "italian", code: "it", stop: italianStop, stem: italian.Stem,
			elision: []string{"c", "l", "all", "dall", "dell", "nell", "sull", "coll", "pell", "gl", "agl", "dagl",
				"degl", "negl", "sugl", "un", "m", "t", "s", "v", "d"}},
		{name: "dutch", code: "nl", stop: dutchStop, stem: dutch.Stem},
		{name: "portuguese", code: "pt", stop: portugueseStop, stem: portuguese.Stem},
	}
}

// Languages returns the names of the supported analyzer languages.
func Languages() []string {
	var names []string
	for _, l := range languages() {
		names = append(names, l.name)
	}
	return names
}

// Analyzer turns text into index terms: Unicode word segmentation (UAX #29),
// lower-casing, language-specific clean-up (English possessives, French and
// Italian elision), stop-word removal and Snowball stemming. It is immutable
// and safe for concurrent use.
type Analyzer struct {
	cfg     AnalyzerConfig
	lang    language
	stop    map[string]struct{}
	elision map[string]struct{}
}

// NewAnalyzer returns the analyzer cfg describes, or an error naming the
// supported languages.
func NewAnalyzer(cfg AnalyzerConfig) (*Analyzer, error) {
	name := strings.ToLower(strings.TrimSpace(cfg.Language))
	if name == "" {
		name = DefaultLanguage
	}
	for _, l := range languages() {
		if name != l.name && name != l.code {
			continue
		}
		cfg.Language = l.name
		a := &Analyzer{cfg: cfg, lang: l}
		if !cfg.KeepStopWords {
			a.stop = make(map[string]struct{})
			for _, w := range strings.Fields(l.stop) {
				a.stop[w] = struct{}{}
			}
		}
		if len(l.elision) > 0 {
			a.elision = make(map[string]struct{}, len(l.elision))
			for _, w := range l.elision {
				a.elision[w] = struct{}{}
			}
		}
		return a, nil
	}
	return nil, fmt.Errorf("bm25: unknown analyzer language %q (supported: %s)", cfg.Language, strings.Join(Languages(), ", "))
}

// Config returns the analyzer's configuration with the language resolved to
// its full name.
func (a *Analyzer) Config() AnalyzerConfig { return a.cfg }

// Analyze returns the terms of text in order, repeats included.
func (a *Analyzer) Analyze(text string) []string {
	var s scratch
	var terms []string
	a.words(&s, text, func(w []byte) {
		if t, ok := a.term(&s, w); ok {
			terms = append(terms, t)
		}
	})
	return terms
}

// scratch holds the buffers of one analysis so a writer or a search reuses
// them instead of allocating per token. It is not shared between goroutines.
type scratch struct {
	text  []byte
	vals  [][]byte
	types []int
	word  []byte
	env   *snowballstem.Env
}

// words calls f with each normalised word of text: segmented, lower-cased,
// apostrophes unified and, per language, possessives and elided articles
// removed. Stop words and stemming come later (term) so callers can cache
// by normalised word. f must not keep the slice.
func (a *Analyzer) words(s *scratch, text string, f func(w []byte)) {
	s.text = append(s.text[:0], text...)
	if s.vals == nil {
		// The segmenter allocates room for 1,000 tokens when given nil.
		s.vals, s.types = make([][]byte, 0, 32), make([]int, 0, 32)
	}
	s.vals, s.types = s.vals[:0], s.types[:0]
	// The segmenter stops early at some invalid UTF-8; skip a rune there
	// and carry on, so no input is dropped beyond the bad bytes.
	for data := s.text; len(data) > 0; {
		var n int
		var err error
		s.vals, s.types, n, err = segment.SegmentWordsDirect(data, s.vals, s.types)
		if err != nil || n <= 0 {
			_, n = utf8.DecodeRune(data)
		}
		data = data[n:]
	}
	for i, v := range s.vals {
		if s.types[i] == segment.None || len(v) > maxTokenBytes {
			continue
		}
		w := a.normalise(s, v)
		if len(w) > 0 {
			f(w)
		}
	}
}

// normalise lower-cases v into s.word, maps typographic apostrophes to ',
// and applies the language's possessive and elision rules.
func (a *Analyzer) normalise(s *scratch, v []byte) []byte {
	w := s.word[:0]
	apos := -1 // first apostrophe in w
	for i := 0; i < len(v); {
		c := v[i]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c == '\'' && apos < 0 {
				apos = len(w)
			}
			w = append(w, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(v[i:])
		i += n
		switch r {
		case '\u2019', '\u2018', '\uff07':
			if apos < 0 {
				apos = len(w)
			}
			w = append(w, '\'')
			continue
		}
		w = utf8.AppendRune(w, unicode.ToLower(r))
	}
	s.word = w
	if apos < 0 {
		return w
	}
	if a.lang.possessive && len(w) >= 2 && w[len(w)-2] == '\'' && w[len(w)-1] == 's' {
		w = w[:len(w)-2]
	}
	if a.elision != nil && apos < len(w) {
		if _, ok := a.elision[string(w[:apos])]; ok {
			w = w[apos+1:]
		}
	}
	return w
}

// term maps a normalised word to its index term: "", false for a stop word,
// the Snowball stem otherwise (or the word itself without stemming).
func (a *Analyzer) term(s *scratch, w []byte) (string, bool) {
	if _, stop := a.stop[string(w)]; stop {
		return "", false
	}
	if a.cfg.NoStemming {
		return string(w), true
	}
	if s.env == nil {
		s.env = snowballstem.NewEnv("")
	}
	s.env.SetCurrent(string(w))
	a.lang.stem(s.env)
	t := s.env.Current()
	if t == "" {
		return "", false
	}
	return t, true
}
