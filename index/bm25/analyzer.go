package bm25

import (
	"bytes"
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
	a.words(&s, text, false, func(w []byte, _ bool) {
		if t, ok := a.term(&s, w); ok {
			terms = append(terms, t)
		}
	})
	return terms
}

// AnalyzeDocument returns the terms of a document's text as the index
// counts them: Analyze's terms, in order, and the code pairs of its code
// (all of it when code is set), which do not count towards its length.
func (a *Analyzer) AnalyzeDocument(text string, code bool) (terms, pairs []string) {
	return a.analyzePairs(text, code)
}

// AnalyzeQuery returns the terms of a query as the index searches them:
// Analyze's terms and the pairs of every stop word with its neighbours.
func (a *Analyzer) AnalyzeQuery(query string) (terms, pairs []string) {
	return a.analyzePairs(query, true)
}

func (a *Analyzer) analyzePairs(text string, code bool) (terms, pairs []string) {
	var s scratch
	var pr pairer
	a.words(&s, text, code, func(w []byte, code bool) {
		pr.next(a, w, code, func(p []byte) { pairs = append(pairs, string(p)) })
		if t, ok := a.term(&s, w); ok {
			terms = append(terms, t)
		}
	})
	return terms, pairs
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
// removed, and whether it stands inside code — between backticks (a code
// span or fence), or anywhere when code is set. Stop words and stemming
// come later (term) so callers can cache by normalised word. f must not
// keep the slice.
func (a *Analyzer) words(s *scratch, text string, code bool, f func(w []byte, code bool)) {
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
	inTicks := false
	for i, v := range s.vals {
		if s.types[i] == segment.None {
			// Each backtick opens or closes: a span's one, a fence's three.
			for _, c := range v {
				if c == '`' {
					inTicks = !inTicks
				}
			}
			continue
		}
		if len(v) > maxTokenBytes {
			continue
		}
		w := a.normalise(s, v)
		if len(w) > 0 {
			f(w, code || inTicks)
			joinedParts(w, func(part []byte) { f(part, code || inTicks) })
		}
	}
}

// joinedParts calls f with the parts of a word the segmenter joined across
// '.' or ':' — a qualified name such as "sync.mutex" or "l.trylock", a host
// name — that are worth a term of their own: two bytes or more, a letter
// among them. So "Mutex" finds "sync.Mutex" and "TryLock" finds
// "l.TryLock", while the whole word stays a term too. Numbers ("3.14")
// and abbreviations ("e.g") give no parts.
func joinedParts(w []byte, f func(part []byte)) {
	if !bytes.ContainsAny(w, ".:") {
		return
	}
	for part := range bytes.FieldsFuncSeq(w, func(r rune) bool { return r == '.' || r == ':' }) {
		if len(part) >= 2 && len(part) < len(w) && bytes.IndexFunc(part, unicode.IsLetter) >= 0 {
			f(part)
		}
	}
}

// isStop reports whether a normalised word is one of the language's stop
// words the analyzer drops.
func (a *Analyzer) isStop(w []byte) bool {
	_, ok := a.stop[string(w)]
	return ok
}

// pairer makes the code pairs of a run of words. Stop words are dropped
// from prose, but in code they are the syntax — "if let", "for … in",
// "is not None" — so inside code each stop word is also indexed joined to
// the word before it and the word after it ("if let", "is not",
// "not none"): a term of two normalised words and a space, which no
// single word can be. A query pairs its words wherever they stand, as it
// cannot say which of its words are code; prose is never paired, so a
// query's pairs only ever meet code.
type pairer struct {
	prev     []byte
	prevStop bool
	have     bool
	buf      []byte
}

// syntaxWords are the stop words that are also the keywords and
// operators of common languages (Go, Rust, Python, SQL, shell): only they
// pair. Articles and prepositions such as "a", "of" and "the" stay
// dropped, so the prose of a question ("rename a column of a table")
// makes no pairs to meet the comments of code blocks.
var syntaxWords = map[string]bool{"and": true, "as": true, "by": true, "do": true, "else": true,
	"for": true, "from": true, "if": true, "in": true, "into": true, "is": true, "no": true, "not": true,
	"on": true, "or": true, "then": true, "where": true, "while": true, "with": true}

// isPair reports whether an index term is a code pair: no word holds a
// space.
func isPair(t string) bool { return strings.IndexByte(t, ' ') >= 0 }

// next takes the next word; emit receives each pair it completes.
func (p *pairer) next(a *Analyzer, w []byte, code bool, emit func(pair []byte)) {
	if a.stop == nil || !code {
		p.have = false
		return
	}
	stop := a.isStop(w) && syntaxWords[string(w)]
	if a.isStop(w) && !stop {
		p.have = false // "a", "the": a break, neither half of a pair
		return
	}
	if p.have && (stop || p.prevStop) {
		p.buf = append(append(append(p.buf[:0], p.prev...), ' '), w...)
		emit(p.buf)
	}
	p.prev = append(p.prev[:0], w...)
	p.prevStop, p.have = stop, true
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
