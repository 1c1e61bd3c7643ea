package ingest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/load"
	"github.com/quarry-rag/quarry/split"
	"github.com/quarry-rag/quarry/store"
)

// TestSplitterSetting checks chunking.splitter is honoured: "auto" (or
// unset) cuts Markdown by headings; "sentence" cuts it by sentences, which
// know no headings, and re-ingests the sources that "auto" wrote.
func TestSplitterSetting(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"guide.md": "# Guide\n\n## Install\n\nRun the installer. Then restart.\n\n## Remove\n\nDelete the folder.\n"})
	e := newEnv(t, t.TempDir())
	headings := func() int {
		hits, err := e.coll.Search(context.Background(), store.SearchRequest{Mode: store.ModeKeyword, Query: "installer restart folder guide", TopK: 50})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, h := range hits {
			if len(h.Doc.Provenance.HeadingPath) > 0 {
				n++
			}
		}
		return n
	}
	if rep := e.ingest(t, ingest.Options{Splitter: "auto"}, root); rep.Written != 1 || headings() == 0 {
		t.Fatalf("auto: %+v, %d chunks with headings", rep, headings())
	}
	if rep := e.ingest(t, ingest.Options{}, root); rep.Written != 0 {
		t.Errorf("unset and auto must be the same setting, so nothing is redone: %+v", rep)
	}
	if rep := e.ingest(t, ingest.Options{Splitter: "sentence"}, root); rep.Written != 1 || headings() != 0 {
		t.Errorf("sentence: %+v, %d chunks with headings", rep, headings())
	}
	if _, err := ingest.Run(context.Background(), []string{root}, ingest.Options{Collection: e.coll, Embedder: e.emb, Loader: load.New(load.Options{}), Splitter: "magic"}); err == nil {
		t.Error("an unknown splitter was accepted")
	}
}

// TestSplitterFor checks the automatic choice by kind, which `quarry chunk`
// previews with the same function.
func TestSplitterFor(t *testing.T) {
	auto, err := ingest.NewSplitter("auto", split.RecursiveConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[load.Kind]string{
		load.KindMarkdown: "*split.Markdown", load.KindHTML: "*split.Markdown", load.KindDOCX: "*split.Markdown",
		load.KindCode: "*split.Code", load.KindPDF: "*split.Recursive", load.KindText: "*split.Recursive",
	} {
		if got := typeName(ingest.SplitterFor(auto, k)); got != want {
			t.Errorf("kind %v: %s, want %s", k, got, want)
		}
	}
	sent, err := ingest.NewSplitter("sentence", split.RecursiveConfig{MaxTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	if got := typeName(ingest.SplitterFor(sent, load.KindMarkdown)); got != "*split.Sentence" {
		t.Errorf("a named splitter cuts every kind: got %s", got)
	}
}

func typeName(v any) string { return fmt.Sprintf("%T", v) }
