package ingest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/load"
	"github.com/quarry-rag/quarry/split"
)

// PreviewReport is what Preview saw besides the chunks: every file ends in
// exactly one of its counts or is split.
type PreviewReport struct {
	Files int
	// Skipped are the files found in folders that are not read (images,
	// binaries, too large), NoText those with nothing to index, Failed the
	// files that could not be read or split, and the files named on their
	// own that were skipped: each a message naming the file.
	Skipped, NoText, Failed []string
}

// Preview reads and splits files as ingestion does, without storing or
// embedding anything: each file's documents are cut with the splitter
// ingestion uses for their kind (SplitterFor) and numbered across the file
// (the pages of a PDF), and fn sees every chunk in order. A chunk names
// its file by the path it was found at. Every path must exist; an error
// from fn stops the walk.
func Preview(ctx context.Context, l *load.Loader, s split.Splitter, paths []string, fn func(*document.Document) error) (*PreviewReport, error) {
	// A file named on its own must be read; one found in a folder may be
	// skipped.
	named := map[string]bool{}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err // a PathError names the file
		}
		if !st.IsDir() {
			named[p] = true
		}
	}
	rep := &PreviewReport{}
	err := l.Walk(ctx, paths, func(r load.Result) error {
		rep.Files++
		switch {
		case r.Err == nil:
		case errors.Is(r.Err, load.ErrNoText):
			rep.NoText = append(rep.NoText, r.Err.Error())
			return nil
		case errors.Is(r.Err, load.ErrSkipped) && !named[r.Path]:
			rep.Skipped = append(rep.Skipped, r.Err.Error())
			return nil
		default:
			rep.Failed = append(rep.Failed, r.Err.Error())
			return nil
		}
		for _, d := range r.Docs {
			d.Provenance.Source = filepath.ToSlash(r.Path)
		}
		chunks, err := split.SplitAll(SplitterFor(s, r.Kind), r.Docs)
		if err != nil {
			rep.Failed = append(rep.Failed, fmt.Sprintf("%s: %v", r.Path, err))
			return nil
		}
		if len(chunks) == 0 {
			// As ingestion counts it: read, but nothing to index.
			rep.NoText = append(rep.NoText, fmt.Sprintf("%s: %s: the file is empty", r.Path, load.ErrNoText))
		}
		for _, c := range chunks {
			if err := fn(c); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("preview: %w", err)
	}
	return rep, nil
}
