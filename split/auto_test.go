package split_test

import (
	"reflect"
	"testing"

	"github.com/quarry-rag/quarry/split"
)

func TestKindOf(t *testing.T) {
	for path, want := range map[string]split.Kind{
		"README.md": split.KindMarkdown, "docs/Guide.MARKDOWN": split.KindMarkdown, "a.mdx": split.KindMarkdown,
		"main.go": split.KindCode, `src\lib.rs`: split.KindCode, "app.tsx": split.KindCode, "x.py": split.KindCode,
		"notes.txt": split.KindText, "manual.rst": split.KindText,
		"LICENSE": split.KindOther, "data.json": split.KindOther, "photo.jpg": split.KindOther, "dir.md/file": split.KindOther,
	} {
		if got := split.KindOf(path); got != want {
			t.Errorf("KindOf(%q) = %v, want %v", path, got, want)
		}
	}
}

func TestAutoChoosesByKind(t *testing.T) {
	a, err := split.NewAuto(split.AutoConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]any{
		"a.md": &split.Markdown{}, "a.go": &split.Code{}, "a.py": &split.Code{}, "a.txt": &split.Recursive{}, "LICENSE": &split.Recursive{},
	} {
		if got := a.For(path); reflect.TypeOf(got) != reflect.TypeOf(want) {
			t.Errorf("For(%q) = %T, want %T", path, got, want)
		}
	}
	md := "# Title\n\nA section long enough to keep.\n\n## Sub\n\nAnother section long enough to keep."
	for _, tt := range []struct {
		name     string
		headings []string // of the last chunk
	}{{"a.md", []string{"Title", "Sub"}}, {"a.txt", nil}} {
		chunks, err := a.Split(fileDoc(tt.name, md))
		if err != nil {
			t.Fatal(err)
		}
		if got := chunks[len(chunks)-1].Provenance.HeadingPath; !reflect.DeepEqual(got, tt.headings) {
			t.Errorf("%s: headings %q, want %q", tt.name, got, tt.headings)
		}
	}
	// Without a provenance source, the source name tells the kind.
	doc := fileDoc("b.md", md)
	doc.Provenance.Source = ""
	if chunks, err := a.Split(doc); err != nil || len(chunks) != 2 {
		t.Errorf("by source name: %d chunks, %v", len(chunks), err)
	}
}
