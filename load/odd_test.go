package load

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestOddRealFiles: the files real trees hold beside the ordinary ones
// each end as one outcome of their own, never a failure of a readable file:
// legacy encodings are converted and say so, JSON of every shape is read
// as what it is, an empty JSON file has no text, and bytes that are not
// text are skipped as binary even without a NUL.
func TestOddRealFiles(t *testing.T) {
	tests := []struct {
		file string
		// want is text a document must hold; note, the Result's note.
		want, note string
		docs       int
		err        error
	}{
		{file: "latin1.txt", want: "Café crème: the menú of the day.\nA naïve résumé.", note: "converted from", docs: 1},
		{file: "koi8.txt", want: "Привет, мир.", note: "converted from KOI8-R", docs: 1},
		{file: "utf16.txt", want: "Hello from UTF-16, café.", note: "converted from UTF-16LE", docs: 1},
		{file: "events.json", want: "text: second event", docs: 2},
		{file: "strings.json", want: `["alpha","beta","gamma"]`, docs: 1},
		{file: "empty.json", err: ErrNoText},
		{file: "blank.json", err: ErrNoText},
		{file: "noise.txt", err: ErrSkipped},
	}
	l := New(Options{})
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, errs, results := walkAll(t, l, filepath.Join("testdata", "odd", tt.file))
			if len(results) != 1 {
				t.Fatalf("%d results", len(results))
			}
			r := results[0]
			if tt.err != nil {
				if !errors.Is(r.Err, tt.err) {
					t.Fatalf("err = %v; want %v", r.Err, tt.err)
				}
				return
			}
			if len(errs) > 0 {
				t.Fatalf("err = %v", r.Err)
			}
			if len(r.Docs) != tt.docs {
				t.Fatalf("%d documents; want %d", len(r.Docs), tt.docs)
			}
			var all []string
			for _, d := range r.Docs {
				all = append(all, d.Content)
			}
			if text := strings.Join(all, "\n"); !strings.Contains(text, tt.want) {
				t.Errorf("text %q does not hold %q", text, tt.want)
			}
			if !strings.Contains(r.Note, tt.note) || tt.note == "" && r.Note != "" {
				t.Errorf("note %q; want one with %q", r.Note, tt.note)
			}
		})
	}
}
