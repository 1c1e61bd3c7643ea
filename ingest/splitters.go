package ingest

import (
	"fmt"

	"github.com/quarry-rag/quarry/load"
	"github.com/quarry-rag/quarry/split"
)

// NewSplitter builds the splitter the chunking settings name: "auto" (or
// "") chooses by kind (SplitterFor), any other of split.Names() cuts every
// file. The token budget applies to the splitters that take one (auto,
// recursive, markdown); delimiter, sentence and code keep their defaults.
func NewSplitter(name string, budget split.RecursiveConfig) (split.Splitter, error) {
	if name == "" {
		name = "auto"
	}
	var s split.Settings
	switch name {
	case "auto", "recursive", "markdown":
		if budget.MaxTokens > 0 {
			s.MaxTokens = &budget.MaxTokens
		}
		if budget.OverlapTokens > 0 || budget.NoOverlap {
			s.OverlapTokens = &budget.OverlapTokens
		}
	}
	sp, err := split.New(name, s)
	if err != nil {
		return nil, fmt.Errorf("chunking: %w", err)
	}
	return sp, nil
}

// SplitterFor is the splitter a file of kind k is cut with: with the
// automatic splitter, the choice of SEMANTICS §3 by the kind the loader
// found (Markdown, HTML converted to Markdown and DOCX by headings; code by
// declarations; everything else, PDF pages included, recursively); any
// other splitter cuts every kind. Ingestion and `quarry chunk` both use it,
// so the preview is what ingestion runs.
func SplitterFor(s split.Splitter, k load.Kind) split.Splitter {
	a, ok := s.(*split.Auto)
	if !ok {
		return s
	}
	switch k {
	case load.KindMarkdown, load.KindHTML, load.KindDOCX:
		return a.ForKind(split.KindMarkdown)
	case load.KindCode:
		return a.ForKind(split.KindCode)
	}
	return a.ForKind(split.KindText)
}
