package quarry

import (
	"context"
	"fmt"
	"strings"

	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/postgres"
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
	// LeaveHierarchy copies into a store that keeps no knowledge
	// hierarchy, leaving it behind (store.CopyOptions.LeaveHierarchy).
	LeaveHierarchy bool
}

// MigrateResult is what Migrate copied.
type MigrateResult struct {
	Collections []store.CopyReport `json:"collections"`
	// Jobs is the ingestion jobs' history copied with them, Threads the
	// conversation threads.
	Jobs    int `json:"jobs"`
	Threads int `json:"threads"`
}

// Migrate copies collections — configuration, documents, vectors, the
// hashes that let ingestion skip unchanged files, and the knowledge
// hierarchy — into another store (store.CopyCollection), then the
// ingestion jobs' history and the conversation threads (store.CopyJobs,
// store.CopyThreads): nothing is embedded again,
// and running it again skips the sources the target already holds.
func (kb *KB) Migrate(ctx context.Context, req MigrateRequest) (*MigrateResult, error) {
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
	res := &MigrateResult{}
	for _, name := range names {
		c, err := kb.store.Collection(ctx, name)
		if err != nil {
			return res, err
		}
		rep, err := store.CopyCollection(ctx, c, dst, store.CopyOptions{Progress: req.Progress, LeaveHierarchy: req.LeaveHierarchy})
		if err != nil {
			return res, err
		}
		res.Collections = append(res.Collections, rep)
		if req.Each != nil {
			req.Each(rep)
		}
	}
	if res.Jobs, err = store.CopyJobs(ctx, kb.store, dst, 0); err != nil {
		return res, err
	}
	res.Threads, err = store.CopyThreads(ctx, kb.store, dst)
	return res, err
}

// UpgradeStore brings a store an older Quarry set up to this Quarry's
// layout in place (store/postgres.Upgrade: one transaction, the documents
// table held exclusively; partial or foreign tables refused) and returns
// the version it had and the one it has now. Only PostgreSQL stores have layouts to upgrade: the
// embedded store brings its own up to date when it is opened.
func UpgradeStore(ctx context.Context, url string) (from, to int, err error) {
	if !strings.HasPrefix(url, "postgres://") && !strings.HasPrefix(url, "postgresql://") {
		return 0, 0, invalid(fmt.Errorf("upgrade %q: only PostgreSQL stores (postgres://…) have layouts to upgrade; the embedded store upgrades itself when opened", url))
	}
	from, err = postgres.Upgrade(ctx, url)
	return from, postgres.SchemaVersion, err
}
