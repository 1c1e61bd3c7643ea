package quarry

import (
	"context"

	"github.com/quarry-rag/quarry/store"
)

// MigrateRequest copies collections into another store.
type MigrateRequest struct {
	// To is the target store's URL (postgres://…, embedded:DIR).
	To string
	// All copies every collection; otherwise the default one alone.
	All bool
	// Each, when set, sees every collection's report as it finishes.
	Each func(store.CopyReport)
	// Progress, when set, follows each copy (store.CopyOptions).
	Progress func(store.CopyProgress)
}

// Migrate copies collections — configuration, documents, vectors and the
// hashes that let ingestion skip unchanged files — into another store
// (store.CopyCollection): nothing is embedded again, and running it again
// skips the sources the target already holds.
func (kb *KB) Migrate(ctx context.Context, req MigrateRequest) ([]store.CopyReport, error) {
	dst, err := store.Open(ctx, req.To)
	if err != nil {
		return nil, invalid(err)
	}
	defer dst.Close()
	names := []string{kb.cfg.Collection}
	if req.All {
		cfgs, err := kb.store.Collections(ctx)
		if err != nil {
			return nil, err
		}
		names = names[:0]
		for _, c := range cfgs {
			names = append(names, c.Name)
		}
	}
	var reps []store.CopyReport
	for _, name := range names {
		c, err := kb.store.Collection(ctx, name)
		if err != nil {
			return reps, err
		}
		rep, err := store.CopyCollection(ctx, c, dst, store.CopyOptions{Progress: req.Progress})
		if err != nil {
			return reps, err
		}
		reps = append(reps, rep)
		if req.Each != nil {
			req.Each(rep)
		}
	}
	return reps, nil
}
