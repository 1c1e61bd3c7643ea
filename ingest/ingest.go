// Package ingest turns folders into a searchable collection: walk → read →
// split → validate → embed (cache first) → write, synchronised by source.
//
// Each file is a source (SEMANTICS §1). A source whose content and chunking
// settings are unchanged since the last run is skipped before it is even
// split; a changed source is split and embedded first, then its old chunks
// are swapped for the new ones in one transaction, so a failure or a crash
// leaves the old version in place and a re-run finishes the job. With
// Prune, file sources no longer found are deleted.
package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/load"
	"github.com/quarry-rag/quarry/split"
	"github.com/quarry-rag/quarry/store"
)

// Options configure a run. Collection, Embedder and Loader are required.
type Options struct {
	Collection *store.Collection
	// Embedder embeds chunk texts; its model must be the collection's.
	Embedder embed.Embedder
	// Cache, when set, is consulted before the embedder (the store's
	// persistent embedding cache).
	Cache  embed.Cache
	Loader *load.Loader
	// Select narrows the files taken from the folders walked (--include,
	// --exclude); the zero Selection takes them all.
	Select load.Selection
	// Chunking sets the token budget of the splitters (zero: the
	// defaults, 512 tokens with 64 overlap).
	Chunking split.RecursiveConfig
	// Prefix namespaces the sources of this run: each is named
	// Prefix/name, so two folders holding a README.md can both be kept.
	Prefix string
	// Replace lets a file take over a source name that another file holds
	// (ErrNameTaken otherwise).
	Replace bool
	// Splitter names the splitter (chunking.splitter): "auto" or "" picks
	// one by kind (SplitterFor); recursive, markdown, code, sentence or
	// delimiter cut every file.
	Splitter string
	// Metadata is added to every chunk (--meta k=v); chunk metadata from
	// the reader wins on a clash.
	Metadata map[string]any
	// Prune deletes file sources of the collection that the walk did not
	// find: the roots are taken as the complete set of its files.
	Prune bool
	// BatchSize is how many chunks are embedded per call (default 64).
	BatchSize int
	// Workers read and split files in parallel (default: one more than
	// the CPUs, so a core stays busy while the writer commits).
	Workers int
	// Progress receives events; nil discards them. It is called from one
	// goroutine at a time.
	Progress func(Event)
	Logger   *slog.Logger
	// Jobs, when set, records the run as a job with JobParams (what a
	// resume needs), updated as it goes and marked done or failed.
	Jobs      store.JobStore
	JobParams json.RawMessage
	// Describe, when set, is how a run's failure is written into its job
	// record, which callers outside the trust boundary read (err.Error()
	// when nil): the knowledge base puts its error classification there,
	// so a store's text stays in the log.
	Describe func(error) string
	// Finish, when set, runs after the sources are written, with every
	// file the walk found and the report so far: the command line and the
	// MCP server bring the knowledge hierarchy up to date there. Its error
	// fails the run.
	Finish func(ctx context.Context, files []load.Entry, rep *Report) error
}

// Event reports progress. Its JSON form is one line of `quarry ingest
// --json`.
type Event struct {
	// Event is start, file, skip, error, prune, folder (one left out for
	// its name, with its Note) or done.
	Event string `json:"event"`
	// Path is the file the event is about.
	Path string `json:"path,omitempty"`
	// Files is how many files have been handled, of Total.
	Files int `json:"files"`
	Total int `json:"total"`
	// Chunks and Tokens count what was embedded and written so far.
	// Tokens are estimated at four characters each.
	Chunks int `json:"chunks"`
	Tokens int `json:"tokens"`
	// Rate is chunks written per second; ETA the seconds left at that pace.
	Rate float64 `json:"rate"`
	ETA  float64 `json:"eta_s"`
	// Error explains an error event.
	Error string `json:"error,omitempty"`
	// Note is what reading a written file changed that the user should
	// know (text converted from a legacy encoding).
	Note string `json:"note,omitempty"`
}

// Report sums up a run.
type Report struct {
	Files     int           `json:"files"`           // files seen
	Skipped   int           `json:"skipped"`         // unchanged sources
	Written   int           `json:"written"`         // sources (re)written
	Pruned    int           `json:"pruned"`          // sources deleted
	Ignored   int           `json:"ignored"`         // files not read on purpose: images, binaries, too large (load.ErrSkipped)
	NoText    int           `json:"no_text"`         // files read that hold no text: empty, a scan, encrypted (load.ErrNoText)
	Failed    int           `json:"failed"`          // files that could not be parsed or split
	Notes     []string      `json:"notes,omitempty"` // one line per ignored or textless file, with the reason, and per converted one
	Chunks    int           `json:"chunks"`          // chunks written
	Tokens    int           `json:"tokens"`          // estimated tokens written
	Embedded  int           `json:"embedded"`        // texts sent to the embedder (cache misses)
	Errors    []string      `json:"errors"`          // one line per failed file
	Duration  time.Duration `json:"duration"`        // wall time
	ChunksPer float64       `json:"chunks_per_second"`
	// Calibrated names the search default a calibration after the run
	// chose, when one ran (quarry.AutoCalibrateDocuments).
	Calibrated string `json:"calibrated,omitempty"`
	// Changed are the sources the run wrote, emptied or deleted, and
	// ChunkIDs the chunks it wrote: what the work after the files (the
	// hierarchy's refresh) covers, instead of the whole collection.
	Changed  []document.Source `json:"-"`
	ChunkIDs []string          `json:"-"`
}

// Verdict is the run's outcome as a whole, for a caller that needs one
// (the command's exit status): every file has its own outcome in the
// report, and files that could not be parsed fail the run only when no
// file could be read at all, or when strict asks that any failure does.
func (r *Report) Verdict(strict bool) error {
	if r.Failed == 0 {
		return nil
	}
	if r.Written+r.Skipped == 0 {
		return fmt.Errorf("no file could be read: %d could not be parsed (listed above)", r.Failed)
	}
	if strict {
		return fmt.Errorf("%d of %d files could not be parsed (listed above); the others were ingested", r.Failed, r.Files)
	}
	return nil
}

// flushBatches is how many embedding batches of chunks are gathered before
// writing: one transaction per group amortises commits while bounding memory.
const flushBatches = 8

// Run ingests roots (files or folders) into the collection.
func Run(ctx context.Context, roots []string, opt Options) (*Report, error) {
	if opt.Collection == nil || opt.Embedder == nil || opt.Loader == nil {
		return nil, errors.New("ingest: a collection, an embedder and a loader are required")
	}
	if m, cm := opt.Embedder.Model(), opt.Collection.Config().Model; m != cm {
		return nil, fmt.Errorf("%w: collection %q was built with %s; the embedder is %s", store.ErrModelMismatch, opt.Collection.Name(), cm, m)
	}
	if opt.BatchSize <= 0 {
		opt.BatchSize = embed.DefaultBatchSize
	}
	if opt.Workers <= 0 {
		opt.Workers = runtime.NumCPU() + 1
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	splitter, err := NewSplitter(opt.Splitter, opt.Chunking)
	if err != nil {
		return nil, err
	}
	for k, v := range opt.Metadata {
		if err := document.New("").SetMetadata(k, v); err != nil {
			return nil, fmt.Errorf("ingest metadata: %w", err)
		}
	}
	r := &run{opt: opt, splitter: splitter, start: time.Now(), rep: &Report{}}
	r.fingerprint, err = fingerprint(opt)
	if err != nil {
		return nil, err
	}
	r.pdfFingerprint = r.fingerprint
	if opt.Loader.OCR() {
		// Scans read with OCR give chunks they did not give without it:
		// turning OCR on re-reads every PDF, and only PDFs.
		r.pdfFingerprint += "\x00ocr"
	}
	entries, leftOut, err := opt.Loader.List(roots, opt.Select)
	if err != nil {
		return nil, err
	}
	r.total = len(entries)

	// The sources' hashes are read under the collection's ingestion lock,
	// so a run that waited for another sees what that one committed.
	if lk, ok := opt.Collection.Store().Backend().(store.IngestLocker); ok {
		unlock, err := lk.LockIngest(ctx, opt.Collection.Name())
		if err != nil {
			return nil, fmt.Errorf("ingest: %w", err)
		}
		defer unlock()
	}
	states, err := opt.Collection.Sources(ctx)
	if err != nil {
		return nil, err
	}
	r.known = make(map[document.Source]string, len(states))
	for _, s := range states {
		r.known[s.Source] = s.Hash
	}
	if r.origins, err = claimNames(entries, states, opt); err != nil {
		return nil, err
	}
	if err := claimObjects(ctx, opt.Collection, entries, r.known, opt.Replace); err != nil {
		return nil, err
	}
	r.retyped = retyped(entries, states, r.origins)
	r.roots = make([]string, len(roots))
	for i, root := range roots {
		r.roots[i] = originOf(root)
	}
	if err := r.startJob(ctx); err != nil {
		return nil, err
	}
	r.emit(Event{Event: "start"})
	for _, f := range leftOut {
		// Not a file's outcome, but never silent: a folder of real
		// sources can bear such a name (Go's go/build).
		note := fmt.Sprintf("%s: left out: a folder named %s, taken for dependencies or build output (ingest.skip_folders)", f, filepath.Base(f))
		r.mu.Lock()
		r.rep.Notes = append(r.rep.Notes, note)
		r.mu.Unlock()
		r.emit(Event{Event: "folder", Path: f, Note: note})
	}
	err = r.walk(ctx, entries)
	if err == nil {
		// A run stopped while its workers were between files hands back
		// no error of its own; it must not be recorded as done.
		err = ctx.Err()
	}
	if err == nil && opt.Prune {
		err = r.prune(ctx, states)
	}
	if err == nil && opt.Finish != nil {
		err = opt.Finish(ctx, entries, r.rep)
	}
	if err != nil {
		r.finishJob(err)
		return r.rep, err
	}
	if err := opt.Collection.Store().Checkpoint(ctx); err != nil {
		opt.Logger.Warn("ingest: checkpoint failed; indexes will be rebuilt on next open", "err", err)
	}
	// A server store plans queries from table statistics, which lag a bulk
	// load until its own maintenance catches up; refresh them now.
	if r.rep.Chunks >= analyzeMin {
		if err := opt.Collection.Store().Analyze(ctx); err != nil {
			opt.Logger.Warn("ingest: refreshing the store's statistics failed; queries may be slow until its maintenance runs", "err", err)
		}
	}
	r.rep.Duration = time.Since(r.start)
	if s := r.rep.Duration.Seconds(); s > 0 {
		r.rep.ChunksPer = float64(r.rep.Chunks) / s
	}
	r.emit(Event{Event: "done"})
	r.finishJob(nil)
	return r.rep, nil
}

// analyzeMin is the number of chunks written from which an ingestion asks
// the store to refresh its statistics (PostgreSQL's ANALYZE).
const analyzeMin = 1000

// JobKind is the kind of job an ingestion records.
const JobKind = "ingest"

func (r *run) startJob(ctx context.Context) error {
	if r.opt.Jobs == nil {
		return nil
	}
	now := time.Now().UTC()
	r.job = &store.Job{ID: uuid.NewString(), Kind: JobKind, Collection: r.opt.Collection.Name(), Params: r.opt.JobParams,
		State: store.JobRunning, Owner: store.CurrentOwner(), Total: r.total, Started: now, Updated: now}
	if err := r.opt.Jobs.PutJob(ctx, *r.job); err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	// The heartbeat keeps the job's Updated time moving through long
	// embedding calls, so only a dead process's job reads as interrupted.
	r.beatStop, r.beatDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(r.beatDone)
		t := time.NewTicker(store.JobHeartbeat)
		defer t.Stop()
		for {
			select {
			case <-r.beatStop:
				return
			case <-t.C:
				r.recordJob(context.WithoutCancel(ctx), true)
			}
		}
	}()
	return nil
}

// recordJob saves the job's counters, at most once a second while running.
func (r *run) recordJob(ctx context.Context, force bool) {
	r.mu.Lock()
	if r.job == nil || (!force && time.Since(r.job.Updated) < time.Second) {
		r.mu.Unlock()
		return
	}
	r.job.Files, r.job.Chunks, r.job.Failed, r.job.Updated = r.rep.Files, r.rep.Chunks, r.rep.Failed, time.Now().UTC()
	r.job.Ignored, r.job.NoText = r.rep.Ignored, r.rep.NoText
	j := *r.job
	r.mu.Unlock()
	if err := r.opt.Jobs.PutJob(ctx, j); err != nil {
		r.opt.Logger.Warn("ingest: could not record job progress", "job", j.ID, "err", err)
	}
}

func (r *run) finishJob(err error) {
	if r.beatStop != nil {
		close(r.beatStop)
		<-r.beatDone
	}
	r.mu.Lock()
	if r.job == nil {
		r.mu.Unlock()
		return
	}
	r.job.State = store.JobDone
	if err != nil {
		msg := err.Error()
		if r.opt.Describe != nil {
			msg = r.opt.Describe(err)
		}
		r.job.State, r.job.Error = store.JobFailed, msg
	}
	r.job.Finished = time.Now().UTC()
	r.mu.Unlock()
	r.recordJob(context.WithoutCancel(context.Background()), true)
}

// run is the state of one ingestion.
type run struct {
	opt         Options
	splitter    split.Splitter
	fingerprint string
	// pdfFingerprint is the fingerprint of PDFs (by name, so a file is
	// checked and recorded alike): the settings and whether scans are OCRed.
	pdfFingerprint string
	known          map[document.Source]string // source → recorded hash
	seen           map[document.Source]bool
	total          int
	start          time.Time
	rep            *Report

	pending       []store.SourceUpdate
	pendingChunks int
	groups        chan []store.SourceUpdate

	// mu guards rep and job, which the walk and the writer both update,
	// and serialises Progress calls.
	mu  sync.Mutex
	job *store.Job
	// beatStop ends the job's heartbeat; beatDone closes when it has.
	beatStop, beatDone chan struct{}
	// origins maps each source of the run to the file it is read from;
	// roots are the run's roots, resolved the same way.
	origins map[document.Source]string
	roots   []string
	// retyped maps a source of the run to the stored source of the same
	// file under its former type (a JSON file once stored as "file" and
	// now as "object"), which the new version replaces in its write.
	retyped map[document.Source]document.Source
}

// prepared is one file after reading and splitting.
type prepared struct {
	res    load.Result
	hash   string
	chunks []*document.Document
	skip   bool
	err    error
}

// walk reads and splits files on workers and hands changed sources, in
// walk order, to the writer in groups.
func (r *run) walk(ctx context.Context, entries []load.Entry) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type job struct {
		i int
		e load.Entry
	}
	jobs := make(chan job, r.opt.Workers*4)
	results := make(chan struct {
		i int
		p prepared
	}, r.opt.Workers*4)
	var walkErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(jobs)
		for i, e := range entries {
			select {
			case jobs <- job{i, e}:
			case <-ctx.Done():
				walkErr = ctx.Err()
				return
			}
		}
	})
	var workers sync.WaitGroup
	for range r.opt.Workers {
		workers.Go(func() {
			for j := range jobs {
				src := j.e.Source
				res, unchanged := r.opt.Loader.ReadIf(ctx, j.e, func(h string) bool {
					return r.known[src] == sourceHash(h, r.fingerprintOf(j.e.Path))
				})
				p := prepared{res: res, skip: true}
				if !unchanged {
					p = r.prepare(res)
				}
				select {
				case results <- struct {
					i int
					p prepared
				}{j.i, p}:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	go func() {
		workers.Wait()
		close(results)
	}()
	// Groups flow through two more stages while the workers split the next
	// files: one goroutine embeds, another commits, so embedding a group
	// overlaps committing the one before.
	r.groups = make(chan []store.SourceUpdate, 1)
	embedded := make(chan []store.SourceUpdate, 1)
	var embedErr, writerErr error
	var writer sync.WaitGroup
	writer.Go(func() {
		defer close(embedded)
		for g := range r.groups {
			if embedErr != nil {
				continue // drain: later groups keep their old versions
			}
			if err := r.embed(ctx, g); err != nil {
				embedErr = err
				cancel()
				continue
			}
			select {
			case embedded <- g:
			case <-ctx.Done():
				embedErr = ctx.Err()
			}
		}
	})
	writer.Go(func() {
		for g := range embedded {
			if writerErr != nil {
				continue
			}
			if err := r.commit(ctx, g); err != nil {
				writerErr = err
				cancel()
			}
		}
	})
	// Results arrive out of order; handle them in walk order so runs are
	// deterministic.
	r.seen = map[document.Source]bool{}
	waiting := map[int]prepared{}
	next := 0
	var firstErr error
	for res := range results {
		if firstErr != nil {
			continue // drain
		}
		waiting[res.i] = res.p
		for {
			p, ok := waiting[next]
			if !ok {
				break
			}
			delete(waiting, next)
			next++
			if err := r.handle(ctx, p); err != nil {
				firstErr = err
				cancel()
				break
			}
		}
	}
	wg.Wait()
	if firstErr == nil && walkErr == nil {
		firstErr = r.dispatch(ctx)
	}
	close(r.groups)
	writer.Wait()
	switch {
	case writerErr != nil:
		return writerErr
	case embedErr != nil && !errors.Is(embedErr, context.Canceled):
		return embedErr
	case firstErr != nil:
		return firstErr
	case walkErr != nil:
		return fmt.Errorf("ingest: %w", walkErr)
	}
	return nil
}

// prepare runs on a worker: hash check, split, schema validation.
func (r *run) prepare(res load.Result) prepared {
	p := prepared{res: res}
	if res.Err != nil {
		p.err = res.Err
		return p
	}
	p.hash = sourceHash(res.Hash, r.fingerprintOf(res.Path)) // unchanged sources never get here (ReadIf)
	chunks, err := split.SplitAll(SplitterFor(r.splitter, res.Kind), res.Docs)
	if err != nil {
		p.err = fmt.Errorf("%s: split: %w", res.Path, err)
		return p
	}
	if !r.opt.Loader.KeepsData() {
		// Chunks of encoded data inside prose or code (a key in a test,
		// a table of constants) are left out, and the file says how many.
		kept := chunks[:0]
		for _, c := range chunks {
			if !load.EncodedChunk(res.Kind, c.Content) {
				kept = append(kept, c)
			}
		}
		if left := len(chunks) - len(kept); left > 0 {
			if len(kept) == 0 {
				p.err = fmt.Errorf("%s: %w: encoded data (base64, hex, a key or a number table) (ingest.keep_data reads it)", res.Path, load.ErrSkipped)
				return p
			}
			p.res.AddNote(fmt.Sprintf("left out %d of %d chunks of encoded data (ingest.keep_data keeps them)", left, len(chunks)))
		}
		chunks = kept
	}
	schema := r.opt.Collection.Config().Schema
	for _, c := range chunks {
		for k, v := range r.opt.Metadata {
			if _, ok := c.Metadata[k]; !ok {
				c.Metadata[k] = v
			}
		}
		if err := schema.ValidateDocument(c); err != nil {
			p.err = fmt.Errorf("%s: %w", res.Path, err)
			return p
		}
	}
	p.chunks = chunks
	return p
}

// handle consumes one prepared file in walk order.
func (r *run) handle(ctx context.Context, p prepared) error {
	src := p.res.Source
	r.seen[src] = true
	r.mu.Lock()
	r.rep.Files++
	switch {
	case errors.Is(p.err, load.ErrSkipped), errors.Is(p.err, load.ErrNoText):
		// A notice: the file holds nothing to index, and says why. Its
		// old version, if any, stays until it has text again.
		event := "ignored"
		if errors.Is(p.err, load.ErrNoText) {
			event = "no_text"
			r.rep.NoText++
		} else {
			r.rep.Ignored++
		}
		r.rep.Notes = append(r.rep.Notes, p.err.Error())
		r.mu.Unlock()
		r.emit(Event{Event: event, Path: p.res.Path, Error: p.err.Error()})
		return nil
	case p.err != nil:
		r.rep.Failed++
		r.rep.Errors = append(r.rep.Errors, p.err.Error())
		r.mu.Unlock()
		r.emit(Event{Event: "error", Path: p.res.Path, Error: p.err.Error()})
		return nil
	case p.skip:
		r.rep.Skipped++
		r.mu.Unlock()
		r.emit(Event{Event: "skip", Path: p.res.Path})
		return nil
	}
	note := ""
	if len(p.chunks) == 0 {
		// Read, but empty (or only white space): counted as a file
		// without text, not as written, and named like the others. It
		// keeps its hash and no chunks, so it is not read again.
		r.rep.NoText++
		note = fmt.Sprintf("%s: %s: the file is empty", p.res.Path, load.ErrNoText)
		r.rep.Notes = append(r.rep.Notes, note)
	} else if p.res.Note != "" {
		note = p.res.Path + ": " + p.res.Note
		r.rep.Notes = append(r.rep.Notes, note)
	}
	r.mu.Unlock()
	// A file without chunks keeps its hash and no chunks, so it is not
	// read again.
	r.pending = append(r.pending, store.SourceUpdate{Source: src, Hash: p.hash, Docs: p.chunks, Origin: r.origins[src]})
	if old, ok := r.retyped[src]; ok {
		// In the same group, so one transaction swaps the old type for
		// the new: never both, never neither.
		r.pending = append(r.pending, store.SourceUpdate{Source: old})
	}
	r.pendingChunks += len(p.chunks)
	r.emit(Event{Event: "file", Path: p.res.Path, Note: note})
	if r.pendingChunks >= flushBatches*r.opt.BatchSize {
		return r.dispatch(ctx)
	}
	return nil
}

// dispatch hands the pending sources to the writer.
func (r *run) dispatch(ctx context.Context) error {
	if len(r.pending) == 0 {
		return nil
	}
	select {
	case r.groups <- r.pending:
	case <-ctx.Done():
		return ctx.Err()
	}
	r.pending, r.pendingChunks = nil, 0
	return nil
}

// embed embeds a group's chunks. An embedding error stops the run with the
// group unwritten: earlier groups stay, this one and later ones keep their
// old version.
func (r *run) embed(ctx context.Context, group []store.SourceUpdate) error {
	var texts []string
	for _, u := range group {
		for _, d := range u.Docs {
			texts = append(texts, d.Content)
		}
	}
	counter := &countingEmbedder{Embedder: embed.Batched{Embedder: r.opt.Embedder, Size: r.opt.BatchSize}}
	var e embed.Embedder = counter
	if r.opt.Cache != nil {
		e = embed.Cached{Embedder: counter, Cache: r.opt.Cache}
	}
	vecs, err := e.Embed(ctx, texts)
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	i := 0
	for _, u := range group {
		for _, d := range u.Docs {
			d.Embedding = vecs[i]
			i++
		}
	}
	r.mu.Lock()
	r.rep.Embedded += counter.texts
	r.mu.Unlock()
	return nil
}

// commit swaps a group's sources in, one transaction for the group.
func (r *run) commit(ctx context.Context, group []store.SourceUpdate) error {
	if err := r.opt.Collection.ReplaceSources(ctx, group); err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	r.mu.Lock()
	for _, u := range group {
		if len(u.Docs) > 0 { // an empty file is counted as without text
			r.rep.Written++
		}
		r.rep.Chunks += len(u.Docs)
		r.rep.Changed = append(r.rep.Changed, u.Source)
		for _, d := range u.Docs {
			r.rep.Tokens += (len(d.Content) + 3) / 4
			r.rep.ChunkIDs = append(r.rep.ChunkIDs, d.ID)
		}
	}
	r.mu.Unlock()
	r.emit(Event{Event: "progress"})
	r.recordJob(ctx, false)
	return nil
}

// prune deletes file-backed sources (load.FileBacked) the walk did not see, among those read from
// under this run's roots (and those whose file was never recorded, as
// before origins were): another folder's sources are not this run's to
// prune.
func (r *run) prune(ctx context.Context, states []store.SourceState) error {
	var gone []store.SourceUpdate
	for _, s := range states {
		if load.FileBacked(s.Source, s.Origin) && !r.seen[s.Source] && (s.Origin == "" || under(s.Origin, r.roots)) {
			gone = append(gone, store.SourceUpdate{Source: s.Source})
		}
	}
	if len(gone) == 0 {
		return nil
	}
	if err := r.opt.Collection.ReplaceSources(ctx, gone); err != nil {
		return fmt.Errorf("ingest: prune: %w", err)
	}
	r.mu.Lock()
	r.rep.Pruned = len(gone)
	for _, g := range gone {
		r.rep.Changed = append(r.rep.Changed, g.Source)
	}
	r.mu.Unlock()
	for _, g := range gone {
		r.emit(Event{Event: "prune", Path: g.Source.Name})
	}
	return nil
}

func (r *run) emit(e Event) {
	if r.opt.Progress == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e.Files, e.Total, e.Chunks, e.Tokens = r.rep.Files, r.total, r.rep.Chunks, r.rep.Tokens
	if s := time.Since(r.start).Seconds(); s > 0 {
		e.Rate = float64(r.rep.Chunks) / s
		if r.rep.Files > 0 && r.total > r.rep.Files {
			e.ETA = s / float64(r.rep.Files) * float64(r.total-r.rep.Files)
		}
	}
	r.opt.Progress(e)
}

// sourceHash ties a source's recorded hash to its bytes and to everything
// that shapes its chunks, so changing the splitter settings, the embedder
// or --meta re-ingests it.
func sourceHash(contentHash, fingerprint string) string {
	s := sha256.Sum256([]byte(contentHash + "\x00" + fingerprint))
	return hex.EncodeToString(s[:])
}

// fingerprintOf is the fingerprint of the file at path.
func (r *run) fingerprintOf(path string) string {
	if strings.EqualFold(filepath.Ext(path), ".pdf") {
		return r.pdfFingerprint
	}
	return r.fingerprint
}

func fingerprint(opt Options) (string, error) {
	b, err := json.Marshal(struct {
		Model    embed.ModelInfo
		Chunking split.RecursiveConfig
		Meta     []string
		Version  int
		// Splitter is empty for auto, so sources ingested before the
		// setting was honoured keep their hashes.
		Splitter string `json:",omitempty"`
		// KeepData re-ingests every source when chunks of encoded data
		// are kept or left out anew.
		KeepData bool `json:",omitempty"`
	}{opt.Embedder.Model(), split.RecursiveConfig{MaxTokens: opt.Chunking.MaxTokens, OverlapTokens: opt.Chunking.OverlapTokens, NoOverlap: opt.Chunking.NoOverlap}, metaPairs(opt.Metadata), pipelineVersion, splitterName(opt.Splitter), opt.Loader.KeepsData()})
	if err != nil {
		return "", fmt.Errorf("ingest settings: %w", err)
	}
	return string(b), nil
}

func splitterName(s string) string {
	if s == "auto" {
		return ""
	}
	return s
}

// pipelineVersion changes when reading or splitting changes in a way that
// should re-ingest every source. 2: code chunks are held to the token
// budget and carry their symbol path; Markdown headings are plain text and
// inline HTML is dropped; legacy encodings are converted; encoded data is
// left out.
const pipelineVersion = 2

func metaPairs(m map[string]any) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b, _ := document.MarshalValue(m[k])
		out = append(out, k+"="+string(b))
	}
	return out
}

// countingEmbedder counts the texts that reach the embedder: the cache's
// misses.
type countingEmbedder struct {
	embed.Embedder
	texts int
}

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.texts += len(texts)
	return c.Embedder.Embed(ctx, texts)
}
