package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/quarry-rag/quarry/document"
)

// CopyReport sums up a copy of one collection.
type CopyReport struct {
	Collection string `json:"collection"`
	// Documents were written to the target; Sources is the number of
	// tracked sources written, Skipped those the target already held with
	// the same hash and chunk count (from an earlier, interrupted run).
	Documents int `json:"documents"`
	Sources   int `json:"sources"`
	Skipped   int `json:"skipped_sources"`
}

// CopyProgress is reported as a copy goes: Done of Total documents of the
// collection have been written or found already there.
type CopyProgress struct {
	Collection string `json:"collection"`
	Done       int    `json:"done"`
	Total      int    `json:"total"`
}

// CopyOptions tune CopyCollection; the zero value is ready to use.
type CopyOptions struct {
	// Progress, when set, is called after each page and each source.
	Progress func(CopyProgress)
}

// CopyCollection copies a collection — configuration, documents with their
// embeddings (nothing is embedded again) and the hashes of its tracked
// sources — into another store, where it is created (or must already
// match). Tracked sources are written whole, one transaction each, and a
// source the target already holds with the same hash and chunk count is
// skipped, so a copy interrupted midway resumes where it stopped; other
// documents are upserted in pages. The copy is checked by counting.
func CopyCollection(ctx context.Context, from *Collection, to *Store, opt CopyOptions) (CopyReport, error) {
	rep := CopyReport{Collection: from.Name()}
	dst, err := to.EnsureCollection(ctx, from.Config())
	if err != nil {
		return rep, err
	}
	total, err := from.Count(ctx, nil)
	if err != nil {
		return rep, err
	}
	done := 0
	progress := func(n int) {
		done += n
		if opt.Progress != nil {
			opt.Progress(CopyProgress{Collection: from.Name(), Done: done, Total: total})
		}
	}
	states, err := from.Sources(ctx)
	if err != nil && !errors.Is(err, ErrUnsupported) {
		return rep, err
	}
	tracked := make(map[document.Source]SourceState, len(states))
	for _, s := range states {
		tracked[s.Source] = s
	}
	there := map[document.Source]SourceState{}
	if len(states) > 0 {
		have, err := dst.Sources(ctx)
		if err != nil {
			return rep, fmt.Errorf("copy %q: %w", from.Name(), err)
		}
		for _, s := range have {
			there[s.Source] = s
		}
	}
	// One pass lists each tracked source's ids and copies everything else.
	bySource := map[document.Source][]string{}
	err = from.Scan(ctx, 500, func(page []*document.Document) error {
		var loose []*document.Document
		for _, d := range page {
			src := document.Source{Type: d.SourceType, Name: d.SourceName}
			if _, ok := tracked[src]; ok {
				bySource[src] = append(bySource[src], d.ID)
				continue
			}
			loose = append(loose, d)
		}
		if err := dst.Upsert(ctx, loose); err != nil {
			return err
		}
		rep.Documents += len(loose)
		progress(len(loose))
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("copy %q: %w", from.Name(), err)
	}
	for _, s := range states {
		ids := bySource[s.Source]
		if t, ok := there[s.Source]; ok && t.Hash == s.Hash && t.Chunks == len(ids) {
			rep.Skipped++
			progress(len(ids))
			continue
		}
		var docs []*document.Document
		if len(ids) > 0 {
			if docs, err = from.Get(ctx, ids); err != nil {
				return rep, fmt.Errorf("copy %q: %w", from.Name(), err)
			}
		}
		if err := dst.ReplaceSources(ctx, []SourceUpdate{{Source: s.Source, Hash: s.Hash, Docs: docs}}); err != nil {
			return rep, fmt.Errorf("copy %q: source %s: %w", from.Name(), s.Source.Name, err)
		}
		rep.Documents += len(docs)
		rep.Sources++
		progress(len(docs))
	}
	got, err := dst.Count(ctx, nil)
	if err != nil {
		return rep, err
	}
	if got != total {
		return rep, fmt.Errorf("copy %q: the target holds %d documents, the source %d (the target had others before?)", from.Name(), got, total)
	}
	return rep, nil
}
