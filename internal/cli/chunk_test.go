package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/internal/cli"
	"github.com/quarry-rag/quarry/split"
)

// wireChunk is one line of quarry chunk --json.
type wireChunk struct {
	ID         string         `json:"id"`
	Content    string         `json:"content"`
	SourceType string         `json:"sourceType"`
	SourceName string         `json:"sourceName"`
	Metadata   map[string]any `json:"metadata"`
	Provenance struct {
		Source     string   `json:"source"`
		Page       int      `json:"page"`
		LineStart  int      `json:"lineStart"`
		LineEnd    int      `json:"lineEnd"`
		Headings   []string `json:"headings"`
		CharStart  int      `json:"charStart"`
		CharEnd    int      `json:"charEnd"`
		ChunkIndex int      `json:"chunkIndex"`
		ChunkCount int      `json:"chunkCount"`
	} `json:"provenance"`
}

func (w wireChunk) String() string { return fmt.Sprintf("%+v", struct{ wireChunk }{w}) }

const chunkGuide = `# Quarry

Quarry turns documents into a knowledge base you can search.

## Install

Download a release and put it on your PATH, or build it from source.

### From source

Run go install with the module path of Quarry.

## Use

Ingest a folder, then ask it questions and read the cited answers.
`

const chunkGo = `// Package shapes computes areas.
package shapes

import "math"

// Circle is a round shape.
type Circle struct{ R float64 }

// Area returns the area of the circle.
func (c Circle) Area() float64 {
	return math.Pi * c.R * c.R
}
`

// chunkTree writes a small corpus and makes it the working directory.
func chunkTree(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	t.Chdir(dir)
	var notes strings.Builder
	for i := range 120 {
		fmt.Fprintf(&notes, "Sentence number %d talks about chunking and retrieval. ", i)
		if i%7 == 6 {
			notes.WriteString("\n\n")
		}
	}
	for name, content := range map[string]string{
		"docs/guide.md":                chunkGuide,
		"docs/notes.txt":               notes.String(),
		"docs/code/shapes.go":          chunkGo,
		"docs/.hidden/secret.md":       "# Secret\n\nNever walked into: a dot-folder.",
		"docs/node_modules/dep/x.md":   "# Dependency\n\nNever walked into: node_modules.",
		"docs/code/build/generated.md": "# Generated\n\nNever walked into: build.",
		"docs/image.png":               "\x89PNG\r\n\x1a\n\x00\x00",
		"blob.txt":                     "binary\x00content",
	} {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func decodeChunks(t *testing.T, out string) []wireChunk {
	t.Helper()
	var chunks []wireChunk
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var c wireChunk
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		chunks = append(chunks, c)
	}
	return chunks
}

// libraryChunks splits a file with the library, as quarry chunk should.
func libraryChunks(t *testing.T, s split.Splitter, path, name string) []wireChunk {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := document.New(string(b))
	doc.SourceType, doc.SourceName, doc.Provenance.Source = document.SourceFile, name, path
	docs, err := s.Split(doc)
	if err != nil {
		t.Fatal(err)
	}
	var out []wireChunk
	for _, d := range docs {
		w := wireChunk{ID: d.ID, Content: d.Content, SourceType: d.SourceType, SourceName: d.SourceName, Metadata: d.Metadata}
		p := d.Provenance
		w.Provenance.Source, w.Provenance.Page, w.Provenance.LineStart, w.Provenance.LineEnd = p.Source, p.Page, p.LineStart, p.LineEnd
		w.Provenance.Headings, w.Provenance.CharStart, w.Provenance.CharEnd = p.HeadingPath, p.CharStart, p.CharEnd
		w.Provenance.ChunkIndex, w.Provenance.ChunkCount = p.ChunkIndex, p.ChunkCount
		if w.Provenance.Headings == nil {
			w.Provenance.Headings = []string{}
		}
		out = append(out, w)
	}
	return out
}

func TestChunkPrintsTheLibrarysChunks(t *testing.T) {
	chunkTree(t)
	tests := []struct {
		splitter string
		flags    []string
		settings split.Settings
	}{
		{"auto", nil, split.Settings{}},
		{"auto", []string{"--max-tokens", "40", "--overlap-tokens", "0", "--max-lines", "5"}, split.Settings{MaxTokens: intp(40), OverlapTokens: intp(0), MaxLines: intp(5)}},
		{"recursive", []string{"--max-tokens", "64", "--overlap-tokens", "8"}, split.Settings{MaxTokens: intp(64), OverlapTokens: intp(8)}},
		{"markdown", []string{"--max-tokens", "30"}, split.Settings{MaxTokens: intp(30)}},
		{"code", []string{"--max-lines", "3"}, split.Settings{MaxLines: intp(3)}},
		{"sentence", []string{"--max-words", "25", "--overlap-words", "5", "--min-words", "4"}, split.Settings{MaxWords: intp(25), OverlapWords: intp(5), MinWords: intp(4)}},
		{"delimiter", []string{"--max-length", "120", "--separator", ". ", "--word-overlap", "1", "--min-length", "20"},
			split.Settings{MaxLength: intp(120), Separator: strp(". "), WordOverlap: intp(1), MinLength: intp(20)}},
	}
	files := []string{"docs/guide.md", "docs/notes.txt", "docs/code/shapes.go"}
	for _, tt := range tests {
		t.Run(tt.splitter+strings.Join(tt.flags, " "), func(t *testing.T) {
			args := append(append([]string{"chunk", "--json", "--splitter", tt.splitter}, tt.flags...), files...)
			code, out, errOut := run(t, "", args...)
			if code != cli.ExitOK || errOut != "" {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			s, err := split.New(tt.splitter, tt.settings)
			if err != nil {
				t.Fatal(err)
			}
			var want []wireChunk
			for _, f := range files {
				want = append(want, libraryChunks(t, s, f, f)...)
			}
			if got := decodeChunks(t, out); !reflect.DeepEqual(got, want) {
				t.Errorf("CLI and library differ\n got %v\nwant %v", got, want)
			}
		})
	}
}

func TestChunkHeadingsAndSourceNames(t *testing.T) {
	chunkTree(t)
	code, out, errOut := run(t, "", "chunk", "--json", "docs")
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	chunks := decodeChunks(t, out)
	type got struct {
		name     string
		headings []string
		lines    [2]int
	}
	var gs []got
	for _, c := range chunks {
		if c.SourceType != "file" || c.Provenance.Source != "docs/"+c.SourceName {
			t.Errorf("chunk source %s %s from %s", c.SourceType, c.SourceName, c.Provenance.Source)
		}
		gs = append(gs, got{c.SourceName, c.Provenance.Headings, [2]int{c.Provenance.LineStart, c.Provenance.LineEnd}})
	}
	want := []got{
		// Walked in lexical order; dot-folders, node_modules and build are skipped.
		{"code/shapes.go", []string{}, [2]int{1, 4}},
		{"code/shapes.go", []string{}, [2]int{6, 7}},
		{"code/shapes.go", []string{}, [2]int{9, 12}},
		{"guide.md", []string{"Quarry"}, [2]int{1, 3}},
		{"guide.md", []string{"Quarry", "Install"}, [2]int{5, 7}},
		{"guide.md", []string{"Quarry", "Install", "From source"}, [2]int{9, 11}},
		{"guide.md", []string{"Quarry", "Use"}, [2]int{13, 15}},
	}
	if len(gs) < len(want) || !reflect.DeepEqual(gs[:len(want)], want) {
		t.Fatalf("got %+v\nwant first %+v", gs, want)
	}
	for _, g := range gs[len(want):] {
		if g.name != "notes.txt" {
			t.Errorf("unexpected chunk of %s", g.name)
		}
	}
}

func TestChunkPlainOutput(t *testing.T) {
	chunkTree(t)
	code, out, errOut := run(t, "", "chunk", "docs/guide.md")
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"--- docs/guide.md | chunk 1/4 | lines 1-3 | Quarry | ",
		"--- docs/guide.md | chunk 3/4 | lines 9-11 | Quarry > Install > From source | 14 tokens, 63 chars\n### From source\n\nRun go install with the module path of Quarry.\n\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestChunkErrors(t *testing.T) {
	chunkTree(t)
	tests := []struct {
		args []string
		code int
		says []string
	}{
		{[]string{"chunk"}, cli.ExitUsage, []string{"at least one"}},
		{[]string{"chunk", "--splitter", "delimiter", "--max-length", "0", "docs"}, cli.ExitUsage, []string{"--max-length", "greater than 0"}},
		{[]string{"chunk", "--splitter", "delimiter", "--separator", "", "docs"}, cli.ExitUsage, []string{"--separator", "empty"}},
		{[]string{"chunk", "--splitter", "sentence", "--max-words", "10", "--overlap-words", "10", "docs"}, cli.ExitUsage, []string{"--overlap-words", "maxWords"}},
		{[]string{"chunk", "--splitter", "delimiter", "--max-words", "10", "docs"}, cli.ExitUsage, []string{"--max-words", "does not apply"}},
		{[]string{"chunk", "--max-tokens", "-5", "docs"}, cli.ExitUsage, []string{"--max-tokens"}},
		{[]string{"chunk", "--splitter", "words", "docs"}, cli.ExitUsage, []string{"--splitter", `"words"`}},
		{[]string{"chunk", "--max-length", "x", "docs"}, cli.ExitUsage, []string{"--max-length"}},
		{[]string{"chunk", "missing.md"}, cli.ExitRuntime, []string{"missing.md"}},
	}
	for _, tt := range tests {
		code, out, errOut := run(t, "", tt.args...)
		if code != tt.code || out != "" {
			t.Errorf("%v: exit %d, output %q", tt.args, code, out)
		}
		for _, s := range tt.says {
			if !strings.Contains(errOut, s) {
				t.Errorf("%v: error %q does not say %q", tt.args, errOut, s)
			}
		}
	}
	// A file that cannot be chunked is reported; the others are still printed.
	code, out, errOut := run(t, "", "chunk", "--json", "blob.txt", "docs/guide.md")
	if code != cli.ExitRuntime || !strings.Contains(errOut, "blob.txt") || len(decodeChunks(t, out)) != 4 {
		t.Errorf("exit %d, err %q, out %q", code, errOut, out)
	}
}

func intp(v int) *int       { return &v }
func strp(s string) *string { return &s }
