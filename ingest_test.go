package quarry_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/ingest"
)

// TestStartIngest checks background ingestion is authorized as Ingest is,
// except that a write scope may upload, and that an upload ignores the
// run's patterns and takes over the names of earlier uploads.
func TestStartIngest(t *testing.T) {
	ctx := context.Background()
	kb, err := quarry.Open(ctx, t.TempDir(), quarry.Create())
	if err != nil {
		t.Fatal(err)
	}
	defer kb.Close()
	schema, err := document.ParseSchema([]byte(`{"fields":[{"name":"tenant","type":"string","filterable":true}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kb.EnsureCollection(ctx, "", schema); err != nil {
		t.Fatal(err)
	}
	jobs := ingest.NewJobs()
	defer jobs.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.md"), []byte("# A\n\nUploaded refunds text.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	scoped := quarry.Scope{Filter: filter.Eq("tenant", "acme")}
	run := func(sc quarry.Scope, req quarry.IngestRequest) (*ingest.Report, error) {
		done := make(chan *ingest.Report, 1)
		cleaned := make(chan struct{})
		_, err := kb.StartIngest(ctx, sc, req, quarry.Background{Jobs: jobs,
			Done:    func(rep *ingest.Report, err error) { done <- rep },
			Cleanup: func() { close(cleaned) }})
		if err != nil {
			<-cleaned // cleanup runs when the job cannot start, too
			return nil, err
		}
		select {
		case rep := <-done:
			<-cleaned
			return rep, nil
		case <-time.After(30 * time.Second):
			t.Fatal("the job did not end")
			return nil, nil
		}
	}
	for _, tc := range []struct {
		name string
		sc   quarry.Scope
		req  quarry.IngestRequest
		want error
	}{
		{"read-only", quarry.Scope{ReadOnly: true}, quarry.IngestRequest{Paths: []string{dir}, Uploaded: true}, quarry.ErrForbidden},
		{"folder under a scope filter", scoped, quarry.IngestRequest{Paths: []string{dir}}, quarry.ErrForbidden},
		{"folder below admin", quarry.Scope{NoServerPaths: true}, quarry.IngestRequest{Paths: []string{dir}}, quarry.ErrForbidden},
		{"no paths", quarry.Developer(), quarry.IngestRequest{}, quarry.ErrInvalid},
		{"folder", quarry.Developer(), quarry.IngestRequest{Paths: []string{dir}, Prefix: "docs"}, nil},
		{"upload under a scope filter, patterns ignored", scoped, quarry.IngestRequest{Paths: []string{dir}, Uploaded: true, Exclude: []string{"*.md"}, Metadata: map[string]any{"tenant": "acme"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := run(tc.sc, tc.req)
			if tc.want != nil {
				if !errors.Is(err, tc.want) {
					t.Fatalf("error %v, want %v", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rep.Written != 1 {
				t.Fatalf("report %+v, want the file written", rep)
			}
		})
	}
	// The same file uploaded again, from a new folder, takes its name over.
	again := t.TempDir()
	if err := os.WriteFile(filepath.Join(again, "a.md"), []byte("# A\n\nUploaded refunds text, changed.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if rep, err := run(scoped, quarry.IngestRequest{Paths: []string{again}, Uploaded: true, Metadata: map[string]any{"tenant": "acme"}}); err != nil || rep.Written != 1 {
		t.Fatalf("upload again: %+v, %v", rep, err)
	}
}
