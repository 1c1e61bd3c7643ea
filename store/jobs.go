package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
)

// Job states.
const (
	JobRunning = "running"
	JobDone    = "done"
	JobFailed  = "failed"
	// JobInterrupted is a job whose process died while it ran: its owner
	// is gone from this host, or its heartbeat stopped. An interrupted
	// ingestion can be resumed (quarry ingest --resume).
	JobInterrupted = "interrupted"
)

// A running job's process refreshes Updated every JobHeartbeat, even when
// no progress is made; one not refreshed for JobStaleAfter was interrupted.
const (
	JobHeartbeat  = 5 * time.Second
	JobStaleAfter = 30 * time.Second
)

// JobOwner is the process running a job.
type JobOwner struct {
	Host string `json:"host,omitempty"`
	PID  int    `json:"pid,omitempty"`
}

// CurrentOwner is this process as a job owner.
func CurrentOwner() JobOwner {
	h, _ := os.Hostname()
	return JobOwner{Host: h, PID: os.Getpid()}
}

// Observed is the job as it stands at now: a running job whose owner is a
// process of this host that no longer exists, or whose heartbeat has been
// silent for JobStaleAfter, is interrupted. It is the one rule every
// surface reads job states by.
func (j Job) Observed(now time.Time) Job {
	if j.State != JobRunning {
		return j
	}
	dead := false
	if j.Owner.PID > 0 {
		if h, _ := os.Hostname(); h != "" && h == j.Owner.Host {
			dead = !processAlive(j.Owner.PID)
		}
	}
	if dead || now.Sub(j.Updated) > JobStaleAfter {
		j.State = JobInterrupted
		if j.Error == "" {
			j.Error = "the process running it stopped before it finished"
		}
	}
	return j
}

// ErrJobNotFound is returned for an unknown job id.
var ErrJobNotFound = errors.New("job not found")

// Job is a long-running piece of work recorded in the store (an ingestion),
// so its progress can be followed from another process and an interrupted
// one resumed (see Observed).
type Job struct {
	ID         string `json:"id"`
	Kind       string `json:"kind"`
	Collection string `json:"collection"`
	// Params are what is needed to run the job again.
	Params json.RawMessage `json:"params"`
	State  string          `json:"state"`
	Files  int             `json:"files"`
	Total  int             `json:"total"`
	Chunks int             `json:"chunks"`
	// Failed counts files that could not be parsed; Ignored those not
	// read on purpose (images, binaries, too large); NoText those read
	// without text (empty, a scan, encrypted).
	Failed int `json:"failed"`
	// Nodes counts the knowledge nodes an import placed (for an import,
	// Total counts the file's chunks and Chunks those stored so far).
	Nodes   int    `json:"nodes,omitempty"`
	Ignored int    `json:"ignored,omitempty"`
	NoText  int    `json:"no_text,omitempty"`
	Error   string `json:"error,omitempty"`
	// Owner is the process that runs the job; zero for jobs recorded
	// before owners were.
	Owner    JobOwner  `json:"owner,omitzero"`
	Started  time.Time `json:"started"`
	Updated  time.Time `json:"updated"`
	Finished time.Time `json:"finished,omitzero"`
}

// JobStore is implemented by backends that record jobs.
type JobStore interface {
	// PutJob inserts or replaces a job by id.
	PutJob(ctx context.Context, j Job) error
	// GetJob returns ErrJobNotFound for an unknown id.
	GetJob(ctx context.Context, id string) (Job, error)
	// ListJobs returns up to limit jobs, newest first.
	ListJobs(ctx context.Context, limit int) ([]Job, error)
}

// Jobs returns the store's job records, or ErrUnsupported. Jobs read
// through it are Observed: one whose process died reads as interrupted,
// and is recorded so.
func (s *Store) Jobs() (JobStore, error) {
	js, ok := s.b.(JobStore)
	if !ok {
		return nil, fmt.Errorf("%w: this store does not record jobs", ErrUnsupported)
	}
	return observedJobs{js}, nil
}

// observedJobs applies Job.Observed to every job it reads.
type observedJobs struct{ JobStore }

func (o observedJobs) GetJob(ctx context.Context, id string) (Job, error) {
	j, err := o.JobStore.GetJob(ctx, id)
	if err != nil {
		return j, err
	}
	return o.observe(ctx, j), nil
}

func (o observedJobs) ListJobs(ctx context.Context, limit int) ([]Job, error) {
	jobs, err := o.JobStore.ListJobs(ctx, limit)
	for i := range jobs {
		jobs[i] = o.observe(ctx, jobs[i])
	}
	return jobs, err
}

// observe records a job found interrupted, so later reads, and stores
// without this view, agree; a failure to record only leaves it to be
// found again.
func (o observedJobs) observe(ctx context.Context, j Job) Job {
	seen := j.Observed(time.Now())
	if seen.State != j.State {
		if seen.Finished.IsZero() {
			seen.Finished = j.Updated
		}
		_ = o.JobStore.PutJob(ctx, seen)
	}
	return seen
}
