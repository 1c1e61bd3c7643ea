package split_test

import (
	"fmt"
	"strings"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/split"
)

func ExampleMarkdown() {
	md, err := split.NewMarkdown(split.MarkdownConfig{})
	if err != nil {
		panic(err)
	}
	doc := document.New("# Guide\n\nHow to use Quarry, briefly.\n\n## Install\n\nDownload the binary for your system.\n")
	doc.SourceType, doc.SourceName = document.SourceFile, "guide.md"
	chunks, err := md.Split(doc)
	if err != nil {
		panic(err)
	}
	for _, c := range chunks {
		p := c.Provenance
		fmt.Printf("%d/%d lines %d-%d %s\n", p.ChunkIndex+1, p.ChunkCount, p.LineStart, p.LineEnd, strings.Join(p.HeadingPath, " > "))
	}
	// Output:
	// 1/2 lines 1-3 Guide
	// 2/2 lines 5-7 Guide > Install
}

func ExampleNew() {
	maxWords, overlap := 6, 2
	s, err := split.New("sentence", split.Settings{MaxWords: &maxWords, OverlapWords: &overlap})
	if err != nil {
		panic(err)
	}
	chunks, err := s.Split(document.New("Quarry splits text. It keeps sentences whole. Overlap repeats context."))
	if err != nil {
		panic(err)
	}
	for _, c := range chunks {
		fmt.Println(c.Content)
	}
	// Output:
	// Quarry splits text.
	// splits text. It keeps sentences whole.
	// sentences whole. Overlap repeats context.
}
