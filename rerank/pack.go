package rerank

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/split"
)

// Defaults of Pack.
const (
	// DefaultBudget is the token budget of the passages, 32768 tokens.
	DefaultBudget = 32768
	// DefaultBuffer is the reserve for citation markers and formatting.
	DefaultBuffer = 64
)

// Pack keeps the passages that fit a token budget together with what
// citing them costs (SEMANTICS §5): the citation overhead is the sum over
// the passages of len(source label) + len(identifier) + len(JSON of the
// citation metadata), divided by 4 and rounded down; the content budget is
// Budget − (overhead + Buffer). A content budget ≤ 0 keeps nothing — an
// answer is never given uncited. Otherwise passages go in rank order, each
// taken if its cl100k_base token count fits what is left.
//
// The zero value is ready to use; a Pack must not be copied after first
// use (it holds the tokenizer).
type Pack struct {
	// Budget is DefaultBudget when 0.
	Budget int
	// Buffer is DefaultBuffer when 0 and no reserve when negative.
	Buffer int

	tok split.Tokenizer
}

// Process implements rag.PostProcessor.
func (p *Pack) Process(_ context.Context, _ string, docs []*document.Document) ([]*document.Document, error) {
	budget := p.Budget
	if budget == 0 {
		budget = DefaultBudget
	}
	buffer := p.Buffer
	switch {
	case buffer == 0:
		buffer = DefaultBuffer
	case buffer < 0:
		buffer = 0
	}
	left := ChunkBudget(budget, CitationOverhead(docs), buffer)
	out := make([]*document.Document, 0, len(docs))
	if left <= 0 {
		return out, nil
	}
	for _, d := range docs {
		n, err := p.tok.Count(d.Content)
		if err != nil {
			return nil, fmt.Errorf("pack: %w", err)
		}
		if n <= left {
			out = append(out, d)
			left -= n
		}
	}
	return out, nil
}

// ChunkBudget is the content budget: budget − (overhead + buffer).
func ChunkBudget(budget, overhead, buffer int) int {
	return budget - (overhead + buffer)
}

// CitationOverhead estimates in tokens what citing the documents costs: the
// sum over them of the length in bytes of the source label (the source
// name), the identifier and the JSON of the citation metadata (page,
// headings, lines; "{}" when none), divided by 4, rounded down.
func CitationOverhead(docs []*document.Document) int {
	chars := 0
	for _, d := range docs {
		chars += len(d.SourceName) + len(d.ID) + len(citationMeta(d.Provenance))
	}
	return chars / 4
}

// citationMeta is the JSON of what a citation says about where a passage
// sits.
func citationMeta(p document.Provenance) []byte {
	b, _ := json.Marshal(struct {
		Page      int      `json:"page,omitempty"`
		Headings  []string `json:"headings,omitempty"`
		LineStart int      `json:"lineStart,omitempty"`
		LineEnd   int      `json:"lineEnd,omitempty"`
	}{p.Page, p.HeadingPath, p.LineStart, p.LineEnd})
	return b
}
