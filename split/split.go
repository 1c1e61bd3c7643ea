// Package split cuts documents into chunks for embedding and retrieval.
//
// Five splitters share one contract (Splitter): Delimiter and Sentence follow
// SEMANTICS §3 to the letter; Markdown keeps the heading path of each section;
// Code cuts at declarations (Go through go/ast, other languages by definition
// lines); Recursive packs paragraphs, then sentences, then words under a
// cl100k_base token budget with overlap. Auto picks one by file kind.
//
// Each splitter has a config struct whose zero value means the defaults and a
// constructor that validates it. Surfaces that take settings as people state
// them (flags, configuration files, API requests) go through New and Settings,
// where an explicit zero is checked rather than taken for "default".
package split

import (
	"errors"
	"fmt"
	"sort"
	"unicode/utf8"

	"github.com/quarry-rag/quarry/document"
)

// Splitter cuts one document into chunks.
//
// Split returns the chunks of doc in text order and never modifies doc. Each
// chunk is a new document whose ID is document.ChunkID(sourceType,
// sourceName, index, content); SourceType and SourceName are copied and
// Metadata is deep-copied from doc; Embedding and Score are unset. Provenance
// keeps doc's Source and Page, and records the chunk's 1-based inclusive line
// range (shifted when doc's own provenance starts at a later line), its
// heading path (doc's, extended by Markdown), the byte range [CharStart,
// CharEnd) of doc.Content the chunk was taken from, ChunkIndex and
// ChunkCount. Splitters that normalise whitespace (Delimiter, Sentence) store
// normalised text, so Content may differ from that byte range; the others
// store it verbatim.
//
// Empty or blank content gives no chunks and no error. Content that is not
// valid UTF-8 is an error. Splitters are safe for concurrent use.
type Splitter interface {
	Split(doc *document.Document) ([]*document.Document, error)
}

// SplitAll splits docs in order with s and numbers the chunks per source
// across documents, so that several documents of one source (the pages of a
// PDF) get distinct chunk indexes and ids. A document without chunks adds
// nothing.
func SplitAll(s Splitter, docs []*document.Document) ([]*document.Document, error) {
	type source struct{ typ, name string }
	var out []*document.Document
	counts := map[source]int{}
	for _, d := range docs {
		chunks, err := s.Split(d)
		if err != nil {
			return nil, err
		}
		for _, c := range chunks {
			src := source{c.SourceType, c.SourceName}
			c.Provenance.ChunkIndex = counts[src]
			counts[src]++
			out = append(out, c)
		}
	}
	for _, c := range out {
		c.Provenance.ChunkCount = counts[source{c.SourceType, c.SourceName}]
		c.ID = document.ChunkID(c.SourceType, c.SourceName, c.Provenance.ChunkIndex, c.Content)
	}
	return out, nil
}

// errNotUTF8 is wrapped with the source by every splitter: byte offsets and
// token counts are only meaningful on valid text.
var errNotUTF8 = errors.New("content is not valid UTF-8")

func checkText(doc *document.Document) error {
	if !utf8.ValidString(doc.Content) {
		return wrapSource(doc, errNotUTF8)
	}
	return nil
}

func wrapSource(doc *document.Document, err error) error {
	return fmt.Errorf("split %s %s: %w", doc.SourceType, doc.SourceName, err)
}

// piece is one chunk before it becomes a document: the byte range of the
// input it was taken from and, for splitters that normalise whitespace, the
// text to store instead of that range.
type piece struct {
	start, end int
	text       string
	normalised bool
	headings   []string
}

// lineIndex maps byte offsets to 1-based line numbers.
type lineIndex []int // byte offset of the start of each line

func newLineIndex(s string) lineIndex {
	idx := lineIndex{0}
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			idx = append(idx, i+1)
		}
	}
	return idx
}

// line returns the 1-based line holding byte offset off.
func (l lineIndex) line(off int) int {
	return sort.Search(len(l), func(i int) bool { return l[i] > off })
}

// chunks turns pieces into documents that carry doc's source, metadata and
// provenance.
func chunks(doc *document.Document, pieces []piece) []*document.Document {
	if len(pieces) == 0 {
		return nil
	}
	lines := newLineIndex(doc.Content)
	shift := 0
	if doc.Provenance.LineStart > 0 {
		shift = doc.Provenance.LineStart - 1
	}
	out := make([]*document.Document, len(pieces))
	for i, p := range pieces {
		content := p.text
		if !p.normalised {
			content = doc.Content[p.start:p.end]
		}
		c := doc.Clone()
		c.ID = document.ChunkID(doc.SourceType, doc.SourceName, i, content)
		c.Content = content
		c.Embedding = nil
		c.ClearScore()
		if c.Metadata == nil {
			c.Metadata = map[string]any{}
		}
		last := p.end - 1
		if last < p.start {
			last = p.start
		}
		var headings []string
		if len(doc.Provenance.HeadingPath)+len(p.headings) > 0 {
			headings = append(append([]string(nil), doc.Provenance.HeadingPath...), p.headings...)
		}
		c.Provenance = document.Provenance{
			Source:      doc.Provenance.Source,
			Page:        doc.Provenance.Page,
			LineStart:   lines.line(p.start) + shift,
			LineEnd:     lines.line(last) + shift,
			HeadingPath: headings,
			CharStart:   p.start,
			CharEnd:     p.end,
			ChunkIndex:  i,
			ChunkCount:  len(pieces),
		}
		out[i] = c
	}
	return out
}
