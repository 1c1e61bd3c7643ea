package split_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/split"
)

func intp(v int) *int { return &v }

// mustNew builds a splitter from settings or fails the test.
func mustNew(t testing.TB, name string, s split.Settings) split.Splitter {
	t.Helper()
	sp, err := split.New(name, s)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// fileDoc is a document as ingestion makes it from a file.
func fileDoc(name, content string) *document.Document {
	d := document.New(content)
	d.SourceType = document.SourceFile
	d.SourceName = name
	d.Provenance.Source = name
	return d
}

func contents(chunks []*document.Document) []string {
	out := make([]string, len(chunks))
	for i, c := range chunks {
		out[i] = c.Content
	}
	return out
}

// TestEverySplitterKeepsSourceAndMetadata checks the common contract on every
// splitter: source and metadata copied (deeply), ids from document.ChunkID,
// provenance filled, the input untouched.
func TestEverySplitterKeepsSourceAndMetadata(t *testing.T) {
	text := "# Title\n\nFirst paragraph with enough words to matter here.\n\n## Part\n\nSecond paragraph. It has two sentences.\n"
	for _, name := range split.Names() {
		t.Run(name, func(t *testing.T) {
			doc := fileDoc("notes/a.md", text)
			doc.Provenance.Page = 3
			if err := doc.AddMetadata(map[string]any{"tags": []any{"go", "rag"}, "nested": map[string]any{"k": "v"}}); err != nil {
				t.Fatal(err)
			}
			before := doc.Clone()
			chunks, err := mustNew(t, name, split.Settings{}).Split(doc)
			if err != nil {
				t.Fatal(err)
			}
			if len(chunks) == 0 {
				t.Fatal("no chunks")
			}
			if !reflect.DeepEqual(doc, before) {
				t.Errorf("input changed: %+v", doc)
			}
			for i, c := range chunks {
				if c.SourceType != "file" || c.SourceName != "notes/a.md" {
					t.Errorf("chunk %d source %s %s", i, c.SourceType, c.SourceName)
				}
				if c.ID != document.ChunkID("file", "notes/a.md", i, c.Content) {
					t.Errorf("chunk %d id %s", i, c.ID)
				}
				p := c.Provenance
				if p.Source != "notes/a.md" || p.Page != 3 || p.ChunkIndex != i || p.ChunkCount != len(chunks) {
					t.Errorf("chunk %d provenance %+v", i, p)
				}
				if p.LineStart < 1 || p.LineEnd < p.LineStart || p.CharEnd <= p.CharStart || p.CharEnd > len(text) {
					t.Errorf("chunk %d ranges %+v", i, p)
				}
				if !reflect.DeepEqual(c.Metadata, doc.Metadata) {
					t.Errorf("chunk %d metadata %v", i, c.Metadata)
				}
				c.Metadata["tags"].([]any)[0] = "changed"
				c.Metadata["nested"].(map[string]any)["k"] = "changed"
				if doc.Metadata["tags"].([]any)[0] != "go" || doc.Metadata["nested"].(map[string]any)["k"] != "v" {
					t.Fatalf("chunk %d shares metadata with its document", i)
				}
				if err := c.Check(); err != nil {
					t.Errorf("chunk %d: %v", i, err)
				}
			}
		})
	}
}

func TestEmptyAndInvalidText(t *testing.T) {
	for _, name := range split.Names() {
		s := mustNew(t, name, split.Settings{})
		for _, text := range []string{"", " \n\t\n "} {
			chunks, err := s.Split(fileDoc("a.txt", text))
			// The delimiter keeps text within its maximum verbatim, blanks included (SEMANTICS §3).
			if err != nil || (len(chunks) != 0 && !(name == "delimiter" && text != "")) {
				t.Errorf("%s %q: %d chunks, %v", name, text, len(chunks), err)
			}
		}
		_, err := s.Split(fileDoc("a.txt", "ok \xff bad"))
		if err == nil || !strings.Contains(err.Error(), "UTF-8") || !strings.Contains(err.Error(), "a.txt") {
			t.Errorf("%s: invalid UTF-8 gave %v", name, err)
		}
	}
}

func TestLinesShiftWithTheDocumentsOwnStart(t *testing.T) {
	doc := fileDoc("a.txt", "one\ntwo\nthree")
	doc.Provenance.LineStart, doc.Provenance.LineEnd = 10, 12
	chunks, err := mustNew(t, "recursive", split.Settings{}).Split(doc)
	if err != nil || len(chunks) != 1 {
		t.Fatal(chunks, err)
	}
	if p := chunks[0].Provenance; p.LineStart != 10 || p.LineEnd != 12 {
		t.Errorf("lines %d-%d, want 10-12", p.LineStart, p.LineEnd)
	}
}

func TestSplitAllNumbersChunksPerSource(t *testing.T) {
	s := mustNew(t, "sentence", split.Settings{MaxWords: intp(2)})
	page1, page2, other := fileDoc("a.pdf", "One two. Three four."), fileDoc("a.pdf", "Five six."), fileDoc("b.txt", "Seven eight.")
	chunks, err := split.SplitAll(s, []*document.Document{page1, other, page2})
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		name, content string
		index, count  int
	}
	want := []got{{"a.pdf", "One two.", 0, 3}, {"a.pdf", "Three four.", 1, 3}, {"b.txt", "Seven eight.", 0, 1}, {"a.pdf", "Five six.", 2, 3}}
	for i, c := range chunks {
		g := got{c.SourceName, c.Content, c.Provenance.ChunkIndex, c.Provenance.ChunkCount}
		if i >= len(want) || g != want[i] {
			t.Errorf("chunk %d: %+v", i, g)
		}
		if c.ID != document.ChunkID(c.SourceType, c.SourceName, g.index, c.Content) {
			t.Errorf("chunk %d: id not renumbered", i)
		}
	}
	if len(chunks) != len(want) {
		t.Errorf("%d chunks, want %d", len(chunks), len(want))
	}
}

func TestNewChecksSettingsAsStated(t *testing.T) {
	tests := []struct {
		name     string
		settings split.Settings
		param    string // the setting the error must name; "" for no error
	}{
		{"delimiter", split.Settings{}, ""},
		{"delimiter", split.Settings{MaxLength: intp(0)}, "maxLength"},
		{"delimiter", split.Settings{MaxLength: intp(-3)}, "maxLength"},
		{"delimiter", split.Settings{Separator: new(string)}, "separator"},
		{"delimiter", split.Settings{WordOverlap: intp(-1)}, "wordOverlap"},
		{"delimiter", split.Settings{MinLength: intp(-1)}, "minLength"},
		{"delimiter", split.Settings{MinLength: intp(1000)}, "minLength"},
		{"delimiter", split.Settings{MaxLength: intp(10), MinLength: intp(10)}, "minLength"},
		{"delimiter", split.Settings{MaxWords: intp(10)}, "maxWords"},
		{"sentence", split.Settings{MaxWords: intp(0)}, "maxWords"},
		{"sentence", split.Settings{OverlapWords: intp(200)}, "overlapWords"},
		{"sentence", split.Settings{MinWords: intp(-1)}, "minWords"},
		{"sentence", split.Settings{MaxTokens: intp(100)}, "maxTokens"},
		{"recursive", split.Settings{MaxTokens: intp(0)}, "maxTokens"},
		{"recursive", split.Settings{MaxTokens: intp(32)}, ""}, // the default overlap shrinks to 4
		{"recursive", split.Settings{OverlapTokens: intp(0)}, ""},
		{"recursive", split.Settings{OverlapTokens: intp(-1)}, "overlapTokens"},
		{"recursive", split.Settings{MaxTokens: intp(64), OverlapTokens: intp(64)}, "overlapTokens"},
		{"markdown", split.Settings{OverlapTokens: intp(512)}, "overlapTokens"},
		{"markdown", split.Settings{MaxLines: intp(10)}, "maxLines"},
		{"code", split.Settings{MaxLines: intp(0)}, "maxLines"},
		{"code", split.Settings{MaxTokens: intp(10)}, "maxTokens"},
		{"auto", split.Settings{MaxTokens: intp(100), MaxLines: intp(50)}, ""},
		{"auto", split.Settings{MaxLength: intp(100)}, "maxLength"},
		{"words", split.Settings{}, "splitter"},
	}
	for _, tt := range tests {
		_, err := split.New(tt.name, tt.settings)
		if tt.param == "" {
			if err != nil {
				t.Errorf("%s %+v: %v", tt.name, tt.settings, err)
			}
			continue
		}
		var ce *split.ConfigError
		if !errors.As(err, &ce) || ce.Param != tt.param || !strings.Contains(err.Error(), tt.param) {
			t.Errorf("%s: got %v, want an error naming %s", tt.name, err, tt.param)
		}
	}
}

func TestConstructorsTakeZeroAsDefault(t *testing.T) {
	if _, err := split.NewDelimiter(split.DelimiterConfig{}); err != nil {
		t.Error(err)
	}
	if _, err := split.NewSentence(split.SentenceConfig{OverlapWords: 199}); err != nil {
		t.Error(err)
	}
	if _, err := split.NewRecursive(split.RecursiveConfig{NoOverlap: true, OverlapTokens: 5}); err == nil {
		t.Error("NoOverlap with OverlapTokens: no error")
	}
	if _, err := split.NewCode(split.CodeConfig{MaxLines: -1}); err == nil {
		t.Error("negative MaxLines: no error")
	}
	if _, err := split.NewMarkdown(split.MarkdownConfig{Budget: split.RecursiveConfig{MaxTokens: -1}}); err == nil {
		t.Error("negative MaxTokens: no error")
	}
}
