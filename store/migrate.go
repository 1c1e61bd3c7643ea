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
	Documents  int    `json:"documents"`
	Sources    int    `json:"sources"`
}

// CopyCollection copies a collection — configuration, documents and the
// hashes of its tracked sources — into another store, where it is created
// (or must already match). Tracked sources are written whole, one
// transaction each, so a copy interrupted midway can simply be run again;
// other documents are upserted in pages. The copy is checked by counting.
func CopyCollection(ctx context.Context, from *Collection, to *Store) (CopyReport, error) {
	rep := CopyReport{Collection: from.Name()}
	dst, err := to.EnsureCollection(ctx, from.Config())
	if err != nil {
		return rep, err
	}
	states, err := from.Sources(ctx)
	if err != nil && !errors.Is(err, ErrUnsupported) {
		return rep, err
	}
	tracked := make(map[document.Source]SourceState, len(states))
	for _, s := range states {
		tracked[s.Source] = s
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
		rep.Documents += len(loose)
		return dst.Upsert(ctx, loose)
	})
	if err != nil {
		return rep, fmt.Errorf("copy %q: %w", from.Name(), err)
	}
	for _, s := range states {
		var docs []*document.Document
		if ids := bySource[s.Source]; len(ids) > 0 {
			if docs, err = from.Get(ctx, ids); err != nil {
				return rep, fmt.Errorf("copy %q: %w", from.Name(), err)
			}
		}
		if err := dst.ReplaceSources(ctx, []SourceUpdate{{Source: s.Source, Hash: s.Hash, Docs: docs}}); err != nil {
			return rep, fmt.Errorf("copy %q: source %s: %w", from.Name(), s.Source.Name, err)
		}
		rep.Documents += len(docs)
		rep.Sources++
	}
	want, err := from.Count(ctx, nil)
	if err != nil {
		return rep, err
	}
	got, err := dst.Count(ctx, nil)
	if err != nil {
		return rep, err
	}
	if got != want {
		return rep, fmt.Errorf("copy %q: the target holds %d documents, the source %d (the target had others before?)", from.Name(), got, want)
	}
	return rep, nil
}
