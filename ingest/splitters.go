package ingest

import (
	"fmt"

	"github.com/quarry-rag/quarry/load"
	"github.com/quarry-rag/quarry/split"
)

// splitters are the `auto` choices of SEMANTICS §3, sharing one tokenizer:
// Markdown, HTML (already converted to Markdown) and DOCX by headings; code
// by declarations; everything else, PDF pages included, recursively.
type splitters struct {
	markdown  *split.Markdown
	code      *split.Code
	recursive *split.Recursive
}

func newSplitters(cfg split.RecursiveConfig) (*splitters, error) {
	if cfg.Tokenizer == nil {
		cfg.Tokenizer = new(split.Tokenizer)
	}
	rec, err := split.NewRecursive(cfg)
	if err != nil {
		return nil, fmt.Errorf("ingest chunking: %w", err)
	}
	md, err := split.NewMarkdown(split.MarkdownConfig{Budget: cfg})
	if err != nil {
		return nil, fmt.Errorf("ingest chunking: %w", err)
	}
	code, err := split.NewCode(split.CodeConfig{})
	if err != nil {
		return nil, fmt.Errorf("ingest chunking: %w", err)
	}
	return &splitters{markdown: md, code: code, recursive: rec}, nil
}

func (s *splitters) forKind(k load.Kind) split.Splitter {
	switch k {
	case load.KindMarkdown, load.KindHTML, load.KindDOCX:
		return s.markdown
	case load.KindCode:
		return s.code
	}
	return s.recursive
}
