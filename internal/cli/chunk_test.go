package cli_test

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
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
		Headings   []string `json:"headingPath"`
		CharStart  int      `json:"charStart"`
		CharEnd    int      `json:"charEnd"`
		ChunkIndex int      `json:"chunkIndex"`
		ChunkCount int      `json:"chunkCount"`
	} `json:"provenance"`
}

func (w wireChunk) String() string {
	type fields wireChunk // no String method, so %+v prints the fields
	return fmt.Sprintf("%+v", fields(w))
}

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
		if c.Provenance.Headings == nil { // left out when there are none
			c.Provenance.Headings = []string{}
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
		// Go chunks carry their symbol path.
		{"code/shapes.go", []string{"package shapes"}, [2]int{1, 4}},
		{"code/shapes.go", []string{"package shapes", "type Circle"}, [2]int{6, 7}},
		{"code/shapes.go", []string{"package shapes", "func (Circle) Area"}, [2]int{9, 12}},
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
		"--- docs/guide.md · Quarry · lines 1-3 | chunk 1/4 | ",
		"--- docs/guide.md · Quarry › Install › From source · lines 9-11 | chunk 3/4 | 14 tokens, 63 chars\n### From source\n\nRun go install with the module path of Quarry.\n\n",
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

// chunkPDF writes a small PDF by hand, one page per entry, in Helvetica.
func chunkPDF(pages ...string) []byte {
	var b bytes.Buffer
	var offsets []int
	obj := func(body string) {
		offsets = append(offsets, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", len(offsets), body)
	}
	b.WriteString("%PDF-1.4\n")
	kids := make([]string, len(pages))
	for i := range pages {
		kids[i] = fmt.Sprintf("%d 0 R", 4+2*i)
	}
	obj("<< /Type /Catalog /Pages 2 0 R >>")
	obj(fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(pages)))
	obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	for i, text := range pages {
		stream := fmt.Sprintf("BT /F1 12 Tf 72 720 Td (%s) Tj ET", text)
		obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", 5+2*i))
		obj(fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(stream), stream))
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, xref)
	return b.Bytes()
}

// chunkDOCX writes a DOCX whose paragraphs are given as style, text pairs.
func chunkDOCX(t *testing.T, paras ...string) []byte {
	t.Helper()
	var body strings.Builder
	for i := 0; i+1 < len(paras); i += 2 {
		body.WriteString("<w:p>")
		if paras[i] != "" {
			body.WriteString(`<w:pPr><w:pStyle w:val="` + paras[i] + `"/></w:pPr>`)
		}
		body.WriteString("<w:r><w:t>" + paras[i+1] + "</w:t></w:r></w:p>")
	}
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, err := zw.Create("word/document.xml")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(w, `<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>%s</w:body></w:document>`, body.String())
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

const chunkHTML = `<!DOCTYPE html><html><head><title>Refunds | Acme</title></head><body>
<nav><a href="/">Home</a> <a href="/shop">Shop NAVMARKER</a></nav>
<header><div>Acme Store HEADERMARKER</div></header>
<main><h1>Refunds</h1><p>Acme refunds any order within thirty days of delivery, to the card that paid.</p>
<h2>Exceptions</h2><p>Gift cards and downloaded software cannot be refunded once they have been used.</p></main>
<footer>Copyright Acme FOOTERMARKER</footer></body></html>`

// formatTree writes one file of each format the loader reads, plus a
// corrupt PDF and a truncated DOCX, and makes it the working directory. The
// PDF engine's compilation cache is kept between test runs.
func formatTree(t *testing.T) {
	t.Helper()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(os.TempDir(), "quarry-cli-test-cache"))
	t.Setenv("QUARRY_KB", "")
	dir := t.TempDir()
	t.Chdir(dir)
	docx := chunkDOCX(t, "Heading1", "Policy", "", "Refunds are paid within thirty days of the request.",
		"Heading2", "Gift cards", "", "Gift cards are never refunded in cash, whatever the amount.")
	for name, content := range map[string][]byte{
		"in/page.html":   []byte(chunkHTML),
		"in/report.pdf":  chunkPDF("First page of the report.", "The marker word zanzibarite is on page two.", "Third page."),
		"in/policy.docx": docx,
		"in/cut.docx":    docx[:len(docx)/2],
		"in/broken.pdf":  []byte("%PDF-1.7\nnot really a PDF"),
		"in/rows.csv":    []byte("name,role\nAda,engineer\nGrace,admiral\n"),
		"in/big.txt":     []byte(strings.Repeat("big ", 1000)),
		"in/logo.png":    {0x89, 'P', 'N', 'G', 0, 0, 0},
	} {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestChunkFormats(t *testing.T) {
	formatTree(t)
	code, out, errOut := run(t, "", "chunk", "--json", "--max-file-size", "3000", "in")
	if code != cli.ExitRuntime {
		t.Fatalf("exit %d, want %d: %s", code, cli.ExitRuntime, errOut)
	}
	// The failures come last, after every chunk, and name file and reason;
	// the big file and the image are skipped, not failed.
	for _, want := range []string{"in/broken.pdf: pdf: corrupt", "in/cut.docx: docx: corrupt or truncated", "skipped in/big.txt", "skipped in/logo.png", "2 of 8 files failed"} {
		if !strings.Contains(errOut, filepath.FromSlash(want)) && !strings.Contains(errOut, want) {
			t.Errorf("errors lack %q:\n%s", want, errOut)
		}
	}
	byFile := map[string][]wireChunk{}
	for _, c := range decodeChunks(t, out) {
		byFile[c.SourceName] = append(byFile[c.SourceName], c)
		if regexp.MustCompile(`[A-Z]+MARKER`).MatchString(c.Content) {
			t.Errorf("navigation in %s: %q", c.SourceName, c.Content)
		}
	}
	var headings [][]string
	for _, c := range byFile["page.html"] {
		headings = append(headings, c.Provenance.Headings)
	}
	if want := [][]string{{"Refunds"}, {"Refunds", "Exceptions"}}; !reflect.DeepEqual(headings, want) {
		t.Errorf("html headings %q, want %q", headings, want)
	}
	headings = nil
	for _, c := range byFile["policy.docx"] {
		headings = append(headings, c.Provenance.Headings)
	}
	if want := [][]string{{"Policy"}, {"Policy", "Gift cards"}}; !reflect.DeepEqual(headings, want) {
		t.Errorf("docx headings %q, want %q", headings, want)
	}
	pdf := byFile["report.pdf"]
	if len(pdf) != 3 {
		t.Fatalf("%d pdf chunks, want one per page", len(pdf))
	}
	for i, c := range pdf {
		if c.Provenance.Page != i+1 || c.Provenance.ChunkIndex != i || c.Provenance.ChunkCount != 3 {
			t.Errorf("pdf chunk %d: page %d, chunk %d of %d", i, c.Provenance.Page, c.Provenance.ChunkIndex, c.Provenance.ChunkCount)
		}
	}
	if !strings.Contains(pdf[1].Content, "zanzibarite") {
		t.Errorf("page 2 text %q", pdf[1].Content)
	}
	if len(byFile["rows.csv"]) != 2 {
		t.Errorf("%d csv chunks, want one per row", len(byFile["rows.csv"]))
	}

	// One document per CSV file; the default size limit reads big.txt.
	code, out, errOut = run(t, "", "chunk", "--json", "--csv-per-file", "in/rows.csv", "in/big.txt")
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	chunks := decodeChunks(t, out)
	if len(chunks) < 2 || chunks[0].SourceName != "in/rows.csv" || !strings.Contains(chunks[0].Content, "Grace") || chunks[1].SourceName != "in/big.txt" {
		t.Errorf("csv per file: %v", chunks)
	}
	// A file named on the command line that is skipped is a failure.
	code, _, errOut = run(t, "", "chunk", "--max-file-size", "10", "in/big.txt")
	if code != cli.ExitRuntime || !strings.Contains(errOut, "above the 10-byte limit") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	code, _, errOut = run(t, "", "chunk", "--max-file-size", "-1", "in")
	if code != cli.ExitUsage || !strings.Contains(errOut, "--max-file-size") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	// People see the page of a PDF chunk.
	_, out, _ = run(t, "", "chunk", "in/report.pdf")
	if !strings.Contains(out, "--- in/report.pdf · page 2 · lines 1-1 | chunk 2/3 |") {
		t.Errorf("plain output:\n%s", out)
	}
}

func intp(v int) *int       { return &v }
func strp(s string) *string { return &s }

// TestChunkJSONFeedsFilterMatch checks quarry chunk --json prints Quarry's
// document JSON: quarry filter match reads it as it is.
func TestChunkJSONFeedsFilterMatch(t *testing.T) {
	chunkTree(t)
	code, out, errOut := run(t, "", "chunk", "--json", "docs/guide.md", "docs/notes.txt")
	if code != cli.ExitOK {
		t.Fatalf("chunk: exit %d: %s", code, errOut)
	}
	chunks := decodeChunks(t, out)
	name := chunks[0].SourceName // the guide's, as the loader names it
	var guide []string
	for _, c := range chunks {
		if c.SourceName == name {
			guide = append(guide, c.ID)
		}
	}
	if len(guide) == len(chunks) {
		t.Fatalf("every chunk is from %s", name)
	}
	code, ids, errOut := run(t, out, "filter", "match", "sourceName = '"+name+"'")
	if code != cli.ExitOK {
		t.Fatalf("filter match: exit %d: %s", code, errOut)
	}
	if got := strings.Fields(ids); len(guide) == 0 || !reflect.DeepEqual(got, guide) {
		t.Errorf("filter match printed %q, want the guide's chunks %q", got, guide)
	}
}
