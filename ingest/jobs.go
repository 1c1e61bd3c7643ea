package ingest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/quarry-rag/quarry/store"
)

// ErrClosed is returned by Jobs.Start once the Jobs is closed.
var ErrClosed = errors.New("ingest: shutting down; no new ingestion starts")

// Jobs runs ingestions (folders, uploads, imports) in the background for a
// server: each run is a job recorded in the store, whose id Start (Go for
// work other than Run) returns as soon as it exists, and Close stops the
// runs and waits for them. An interrupted run leaves each
// source at its old or its new version and is recorded as failed, so
// running it again (quarry ingest --resume) finishes it.
type Jobs struct {
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex // guards closed and the wg.Add that must not race Close
	closed bool
	wg     sync.WaitGroup
}

// NewJobs returns a Jobs with nothing running.
func NewJobs() *Jobs {
	ctx, cancel := context.WithCancel(context.Background())
	return &Jobs{ctx: ctx, cancel: cancel}
}

// Started is a job Start launched.
type Started struct {
	ID string `json:"job_id"`
	// State is store.JobRunning, or JobDone or JobFailed for a run that
	// ended before Start returned.
	State string `json:"state"`
}

// Start runs Run(roots, opt) in a goroutine the Jobs owns, under a context
// Close cancels (not ctx, which only bounds the wait for the job's id), and
// returns once the job is recorded. opt.Jobs is required. done, when not
// nil, gets the run's report and error when it ends; cleanup, when not
// nil, runs after it (an upload's files are removed there), also when
// Start fails.
func (j *Jobs) Start(ctx context.Context, roots []string, opt Options, done func(*Report, error), cleanup func()) (Started, error) {
	if cleanup == nil {
		cleanup = func() {}
	}
	if opt.Jobs == nil {
		cleanup()
		return Started{}, errors.New("ingest: a background ingestion needs a job store")
	}
	rec := &firstJob{JobStore: opt.Jobs, id: make(chan string, 1)}
	opt.Jobs = rec
	ended := make(chan error, 1)
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		cleanup()
		return Started{}, ErrClosed
	}
	j.wg.Add(1)
	j.mu.Unlock()
	go func() {
		defer j.wg.Done()
		defer cleanup()
		rep, err := Run(j.ctx, roots, opt)
		if done != nil {
			done(rep, err)
		}
		ended <- err
	}()
	select {
	case id := <-rec.id:
		return Started{ID: id, State: store.JobRunning}, nil
	case err := <-ended:
		select {
		case id := <-rec.id:
			if err != nil {
				return Started{ID: id, State: store.JobFailed}, nil
			}
			return Started{ID: id, State: store.JobDone}, nil
		default:
			if err == nil {
				err = errors.New("the ingestion recorded no job")
			}
			return Started{}, fmt.Errorf("ingest: %w", err)
		}
	case <-ctx.Done():
		return Started{}, ctx.Err()
	}
}

// Progress is how work run by Go reports: it applies change to the job's
// record, which is saved at most once a second while the work runs.
type Progress func(change func(*store.Job))

// Go records job (its Kind, Collection, Params and Total set by the
// caller) as running in this process, then runs work in a goroutine the
// Jobs owns, under a context Close cancels (not ctx, which only bounds
// recording the job), with the heartbeat Run keeps; when work returns the
// job is recorded done, or failed with describe's text for the error
// (the error's own text when describe is nil). It returns once the job is
// recorded.
func (j *Jobs) Go(ctx context.Context, js store.JobStore, job store.Job, describe func(error) string, work func(context.Context, Progress) error) (Started, error) {
	now := time.Now().UTC()
	job.ID, job.State, job.Owner, job.Started, job.Updated = uuid.NewString(), store.JobRunning, store.CurrentOwner(), now, now
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return Started{}, ErrClosed
	}
	j.wg.Add(1)
	j.mu.Unlock()
	if err := js.PutJob(ctx, job); err != nil {
		j.wg.Done()
		return Started{}, fmt.Errorf("record the job: %w", err)
	}
	started := Started{ID: job.ID, State: store.JobRunning}
	go func() {
		defer j.wg.Done()
		var mu sync.Mutex
		saved := now
		save := func(force bool) {
			mu.Lock()
			if !force && time.Since(saved) < time.Second {
				mu.Unlock()
				return
			}
			job.Updated = time.Now().UTC()
			saved = job.Updated
			rec := job
			mu.Unlock()
			// A record lost only delays what a follower sees.
			_ = js.PutJob(context.WithoutCancel(j.ctx), rec)
		}
		stop, beatDone := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(beatDone)
			t := time.NewTicker(store.JobHeartbeat)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					save(true)
				}
			}
		}()
		err := work(j.ctx, func(change func(*store.Job)) {
			mu.Lock()
			change(&job)
			mu.Unlock()
			save(false)
		})
		close(stop)
		<-beatDone
		mu.Lock()
		job.State, job.Finished = store.JobDone, time.Now().UTC()
		if err != nil {
			job.State, job.Error = store.JobFailed, err.Error()
			if describe != nil {
				job.Error = describe(err)
			}
		}
		mu.Unlock()
		save(true)
	}()
	return started, nil
}

// Done is closed when Close begins, for followers of a job's progress
// that should stop with the jobs.
func (j *Jobs) Done() <-chan struct{} { return j.ctx.Done() }

// Close cancels the running ingestions and waits for them to stop.
func (j *Jobs) Close() error {
	j.mu.Lock()
	j.closed = true
	j.mu.Unlock()
	j.cancel()
	j.wg.Wait()
	return nil
}

// firstJob passes PutJob through and hands over the id of the first job
// recorded: how a run started in a goroutine reports its id.
type firstJob struct {
	store.JobStore
	once sync.Once
	id   chan string // buffered, 1
}

func (f *firstJob) PutJob(ctx context.Context, j store.Job) error {
	err := f.JobStore.PutJob(ctx, j)
	f.once.Do(func() { f.id <- j.ID })
	return err
}
