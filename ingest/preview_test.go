package ingest_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/load"
	"github.com/quarry-rag/quarry/split"
)

// TestPreviewOutcomes checks every file ends in one of Preview's outcomes
// and that a file named on its own may not be skipped.
func TestPreviewOutcomes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("guide.md", "# Refunds\n\nRefunds take five days.\n\n# Returns\n\nReturns are free.\n")
	write("empty.txt", "")
	png := write("logo.png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	s, err := ingest.NewSplitter("auto", split.RecursiveConfig{})
	if err != nil {
		t.Fatal(err)
	}
	l := load.New(load.Options{})
	defer l.Close()
	for _, tc := range []struct {
		name                                 string
		paths                                []string
		chunks, skipped, notext, failed, all int
	}{
		{"folder", []string{dir}, 1, 1, 1, 0, 3},
		{"named image", []string{png}, 0, 0, 0, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []*document.Document
			rep, err := ingest.Preview(context.Background(), l, s, tc.paths, func(d *document.Document) error {
				got = append(got, d)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) < tc.chunks || len(rep.Skipped) != tc.skipped || len(rep.NoText) != tc.notext || len(rep.Failed) != tc.failed || rep.Files != tc.all {
				t.Fatalf("chunks %d, report %+v", len(got), rep)
			}
			for _, d := range got {
				if d.Provenance.Source != filepath.ToSlash(filepath.Join(dir, "guide.md")) || d.Provenance.ChunkCount != len(got) {
					t.Errorf("chunk provenance %+v", d.Provenance)
				}
			}
		})
	}
	if _, err := ingest.Preview(context.Background(), l, s, []string{filepath.Join(dir, "missing.md")}, nil); !os.IsNotExist(err) {
		t.Errorf("a missing path: %v, want not exist", err)
	}
}
