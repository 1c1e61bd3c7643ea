package ingest_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed/hash"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/load"
	"github.com/quarry-rag/quarry/store"
	_ "github.com/quarry-rag/quarry/store/memory"
)

// systemDocs is whatever documentation the machine's packages installed:
// HTML, text, Markdown, man-page sources, compressed changelogs.
const systemDocs = "/usr/share/doc"

// TestSystemDocs ingests the machine's whole /usr/share/doc, files nobody
// here wrote, and checks every file ends in exactly one outcome that is
// counted, that the formats Quarry reads never fail to parse, and that no
// chunk carries a non-character or mojibake.
func TestSystemDocs(t *testing.T) {
	if os.Getenv("QUARRY_TEST_SYSTEM_DOCS") != "1" {
		t.Skip("QUARRY_TEST_SYSTEM_DOCS is not 1: the ingestion of all of /usr/share/doc (minutes) runs in .ci/run's corpus tests")
	}
	if _, err := os.Stat(systemDocs); err != nil {
		t.Skipf("%s is absent", systemDocs)
	}
	if testing.Short() || raceEnabled {
		t.Skip("reads thousands of files; runs in CI's plain pass (.ci/run, corpus tests)")
	}
	ctx := context.Background()
	s, err := store.Open(ctx, "memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	emb, err := hash.New(hash.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.CreateCollection(ctx, store.CollectionConfig{Name: "docs", Model: emb.Model()})
	if err != nil {
		t.Fatal(err)
	}
	loader := load.New(load.Options{})
	defer loader.Close()
	listed, err := loader.Select([]string{systemDocs}, load.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ingest.Run(ctx, []string{systemDocs}, ingest.Options{Collection: c, Embedder: emb, Loader: loader})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d files: %d written, %d not read, %d without text, %d could not be parsed; %d chunks",
		rep.Files, rep.Written, rep.Ignored, rep.NoText, rep.Failed, rep.Chunks)
	if rep.Files != len(listed) || rep.Files != rep.Written+rep.Skipped+rep.Ignored+rep.NoText+rep.Failed {
		t.Errorf("%d files listed, %d seen, %d outcomes: each file must end in exactly one", len(listed), rep.Files,
			rep.Written+rep.Skipped+rep.Ignored+rep.NoText+rep.Failed)
	}
	for _, e := range rep.Errors {
		t.Logf("could not parse: %s", e)
		// A file of a format Quarry reads by extension (text, Markdown,
		// HTML) is never "could not parse".
		for _, ext := range []string{".html:", ".htm:", ".txt:", ".md:"} {
			if strings.Contains(e, ext) {
				t.Errorf("could not parse: %s", e)
			}
		}
	}
	bad := 0
	err = c.Scan(ctx, 1000, func(docs []*document.Document) error {
		for _, d := range docs {
			mojibake := strings.Contains(d.Content, "Ã©") || strings.Contains(d.Content, "â€”")
			if mojibake {
				// Documents about encodings quote mojibake on purpose
				// (Node.js's Buffer pages): only what the file does not
				// hold is a reader's.
				if raw, err := os.ReadFile(filepath.Join(systemDocs, filepath.FromSlash(d.SourceName))); err == nil && (strings.Contains(string(raw), "Ã©") || strings.Contains(string(raw), "â€”") || strings.Contains(string(raw), "&Atilde;")) {
					mojibake = false
				}
			}
			if strings.IndexFunc(d.Content, document.NonCharacter) >= 0 || mojibake {
				if bad++; bad <= 5 {
					t.Errorf("%s: a non-character or mojibake: %.120q", d.SourceName, d.Content)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
