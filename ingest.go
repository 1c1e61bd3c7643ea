package quarry

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/quarry-rag/quarry/hierarchy"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/load"
	"github.com/quarry-rag/quarry/split"
	"github.com/quarry-rag/quarry/store"
)

// IngestOptions are the settings every ingestion into c shares, on every
// surface: the embedder, the loader, chunking, batch size, the configured
// include/exclude patterns, the store's embedding cache (for model and API
// embedders: the offline hash embedder is cheaper than a lookup) and, when
// a run ends, the refresh of the knowledge hierarchy. Callers add a run's
// own paths, metadata, patterns (Selection.Plus) and job records.
func (kb *KB) IngestOptions(c *store.Collection) ingest.Options {
	opt := ingest.Options{
		Collection: c,
		Embedder:   kb.emb,
		Loader:     kb.Loader(),
		Chunking:   kb.chunking(),
		Splitter:   kb.cfg.Chunking.Splitter,
		BatchSize:  kb.cfg.Ingest.BatchSize,
		Select:     load.Selection{Include: kb.cfg.Ingest.Include, Exclude: kb.cfg.Ingest.Exclude},
		Logger:     kb.log,
	}
	if cache, ok := kb.store.EmbeddingCache(); ok && kb.emb.Model().Provider != "hash" {
		opt.Cache = cache
	}
	opt.Finish = func(ctx context.Context, files []load.Entry, rep *ingest.Report) error {
		_, _, err := RefreshHierarchy(ctx, c, files, rep)
		return err
	}
	return opt
}

// chunking is the configured chunk budget.
func (kb *KB) chunking() split.RecursiveConfig {
	ch := kb.cfg.Chunking
	return split.RecursiveConfig{MaxTokens: ch.MaxTokens, OverlapTokens: ch.OverlapTokens, NoOverlap: ch.OverlapTokens == 0}
}

// RefreshHierarchy brings the collection's knowledge hierarchy up to what
// an ingestion of files wrote (reading only what rep says it changed; the
// whole collection when rep is nil) and rebuilds its links. A store without a
// hierarchy is skipped, and so is a run that changed nothing in a
// collection whose hierarchy exists (nil reports): the build reads every
// chunk.
func RefreshHierarchy(ctx context.Context, c *store.Collection, files []load.Entry, rep *ingest.Report) (*hierarchy.BuildReport, *hierarchy.LinkReport, error) {
	h, err := hierarchy.Open(c)
	if errors.Is(err, store.ErrUnsupported) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if rep != nil && rep.Written == 0 && rep.Pruned == 0 {
		nodes, err := h.Nodes(ctx)
		if err != nil {
			return nil, nil, err
		}
		if len(nodes) > 0 {
			return nil, nil, nil
		}
	}
	paths := make(map[string]string, len(files))
	for _, e := range files {
		if abs, err := filepath.Abs(e.Path); err == nil {
			paths[e.Source.Name] = abs
		}
	}
	var br hierarchy.BuildReport
	if rep != nil {
		// What the run changed, not the whole collection.
		br, err = h.Update(ctx, paths, hierarchy.Changes{Sources: rep.Changed, Chunks: rep.ChunkIDs})
	} else {
		br, err = h.Build(ctx, paths)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("knowledge hierarchy: %w", err)
	}
	lr, err := h.RebuildLinks(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("knowledge hierarchy: %w", err)
	}
	return &br, &lr, nil
}

// IngestRequest is one ingestion run over files and folders.
type IngestRequest struct {
	// Collection is created when missing; "" for the default.
	Collection string
	Paths      []string
	// Metadata is added to every chunk.
	Metadata map[string]any
	// Prune removes the collection's sources no longer under Paths.
	Prune bool
	// Include and Exclude narrow the files taken from folders, after the
	// configured patterns (load.Selection).
	Include, Exclude []string
	// Prefix names this run's sources Prefix/name; Replace lets its files
	// take over names other files hold (ingest.ErrNameTaken otherwise).
	Prefix  string
	Replace bool
	// Uploaded marks files a caller sent one by one into a new folder of
	// their own (an HTTP upload): no include/exclude patterns apply, they
	// take over the names earlier uploads hold, and the hierarchy records
	// no path for them (the folder is removed after the run). A scope that
	// may write may upload; folders need one that reaches everything. The
	// caller holds each uploaded file to the scope's filter.
	Uploaded bool
	// Progress receives the run's events; nil for none.
	Progress func(ingest.Event)
	// Hierarchy receives the knowledge hierarchy's refresh when the run
	// changed it; nil for none.
	Hierarchy func(*hierarchy.BuildReport, *hierarchy.LinkReport)
}

// Interrupted is the request of the newest ingestion when it failed or
// its process stopped (ingest.Interrupted), to run again: the re-run skips
// what the first one finished. An ErrInvalid error says there is none.
func (kb *KB) Interrupted(ctx context.Context) (IngestRequest, error) {
	js, err := kb.store.Jobs()
	if err != nil {
		return IngestRequest{}, err
	}
	p, ok, err := ingest.Interrupted(ctx, js)
	if err != nil {
		return IngestRequest{}, err
	}
	if !ok {
		return IngestRequest{}, invalid(errors.New("no interrupted ingestion to resume"))
	}
	return IngestRequest{Collection: p.Collection, Paths: p.Roots, Metadata: p.Meta, Prune: p.Prune,
		Include: p.Include, Exclude: p.Exclude, Prefix: p.Prefix, Replace: p.Replace}, nil
}

// Ingest runs one ingestion into a collection the scope may write, with
// the settings of IngestOptions, recording the run as a job where the
// store keeps jobs (so `quarry ingest --resume` can re-run it). Paths are
// the caller's to confine: a server passes only paths inside its roots.
func (kb *KB) Ingest(ctx context.Context, sc Scope, req IngestRequest) (*ingest.Report, error) {
	opt, err := kb.prepareIngest(ctx, sc, req, nil)
	if err != nil {
		return nil, err
	}
	return ingest.Run(ctx, req.Paths, opt)
}

// Background is how StartIngest runs a job.
type Background struct {
	// Jobs owns the job's goroutine (ingest.Jobs); required.
	Jobs *ingest.Jobs
	// Options, when set, replaces IngestOptions as the run's base (a
	// server observing its runs).
	Options func(*store.Collection) ingest.Options
	// Done gets the run's report and error when it ends; Cleanup runs
	// after it, and also when the job cannot start (an upload's files are
	// removed there).
	Done    func(*ingest.Report, error)
	Cleanup func()
}

// StartIngest starts the ingestion req as a background job, with Ingest's
// checks and options, and returns once the job is recorded; follow it in
// the store's jobs. A store that keeps no jobs cannot run one.
func (kb *KB) StartIngest(ctx context.Context, sc Scope, req IngestRequest, bg Background) (ingest.Started, error) {
	cleanup := bg.Cleanup
	if cleanup == nil {
		cleanup = func() {}
	}
	opt, err := kb.prepareIngest(ctx, sc, req, bg.Options)
	if err == nil && opt.Jobs == nil {
		err = fmt.Errorf("%w: this store keeps no jobs, so ingestion cannot run in the background", store.ErrUnsupported)
	}
	if err != nil {
		cleanup()
		return ingest.Started{}, err
	}
	return bg.Jobs.Start(ctx, req.Paths, opt, bg.Done, cleanup)
}

// prepareIngest authorizes and checks a run and builds its options over
// base (IngestOptions when nil).
func (kb *KB) prepareIngest(ctx context.Context, sc Scope, req IngestRequest, base func(*store.Collection) ingest.Options) (ingest.Options, error) {
	if sc.ReadOnly {
		return ingest.Options{}, fmt.Errorf("%w: ingesting is not open to a read-only caller", ErrForbidden)
	}
	if !req.Uploaded {
		if err := sc.MayIngestPaths(); err != nil {
			return ingest.Options{}, err
		}
	}
	if len(req.Paths) == 0 {
		return ingest.Options{}, invalid(errors.New("give at least one file or folder"))
	}
	c, err := kb.collection(ctx, sc, req.Collection, true)
	if err != nil {
		return ingest.Options{}, err
	}
	if base == nil {
		base = kb.IngestOptions
	}
	return kb.runOptions(base(c), c, req)
}

// runOptions are a run's options: the base with the request's metadata,
// patterns, progress, hierarchy report and job record.
func (kb *KB) runOptions(opt ingest.Options, c *store.Collection, req IngestRequest) (ingest.Options, error) {
	opt.Collection = c
	opt.Describe = func(err error) string { return kb.Fail(context.Background(), err).Message }
	opt.Metadata, opt.Prune, opt.Progress = req.Metadata, req.Prune, req.Progress
	opt.Prefix, opt.Replace = req.Prefix, req.Replace
	run := load.Selection{Include: req.Include, Exclude: req.Exclude}
	opt.Select = opt.Select.Plus(run)
	if err := opt.Select.Check(); err != nil {
		return opt, invalid(err)
	}
	if req.Hierarchy != nil {
		opt.Finish = func(ctx context.Context, files []load.Entry, rep *ingest.Report) error {
			br, lr, err := RefreshHierarchy(ctx, c, files, rep)
			if err == nil && br != nil {
				req.Hierarchy(br, lr)
			}
			return err
		}
	}
	fin := opt.Finish
	opt.Finish = func(ctx context.Context, files []load.Entry, rep *ingest.Report) error {
		if fin != nil {
			if err := fin(ctx, files, rep); err != nil {
				return err
			}
		}
		kb.autoCalibrate(ctx, c, rep)
		return nil
	}
	if req.Uploaded {
		opt.Select, opt.Replace = load.Selection{}, true
		if opt.Loader == kb.Loader() {
			opt.Loader = kb.untrustedLoader()
		}
		if fin := opt.Finish; fin != nil {
			opt.Finish = func(ctx context.Context, _ []load.Entry, rep *ingest.Report) error { return fin(ctx, nil, rep) }
		}
	}
	if js, err := kb.store.Jobs(); err == nil {
		abs := make([]string, len(req.Paths))
		for i, p := range req.Paths {
			if abs[i], err = filepath.Abs(p); err != nil {
				return opt, fmt.Errorf("ingest %s: %w", p, err)
			}
		}
		opt.Jobs = js
		params := ingest.Params{Roots: abs, Collection: c.Name(), Meta: req.Metadata, Prune: req.Prune, Include: req.Include, Exclude: req.Exclude,
			Prefix: req.Prefix, Replace: req.Replace}
		if opt.JobParams, err = params.Marshal(); err != nil {
			return opt, err
		}
	}
	return opt, nil
}
