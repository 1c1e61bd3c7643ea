package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Job states.
const (
	JobRunning = "running"
	JobDone    = "done"
	JobFailed  = "failed"
)

// ErrJobNotFound is returned for an unknown job id.
var ErrJobNotFound = errors.New("job not found")

// Job is a long-running piece of work recorded in the store (an ingestion),
// so its progress can be followed from another process and an interrupted
// one resumed: a job still "running" whose Updated time has stopped moving
// was interrupted.
type Job struct {
	ID         string `json:"id"`
	Kind       string `json:"kind"`
	Collection string `json:"collection"`
	// Params are what is needed to run the job again.
	Params   json.RawMessage `json:"params"`
	State    string          `json:"state"`
	Files    int             `json:"files"`
	Total    int             `json:"total"`
	Chunks   int             `json:"chunks"`
	Failed   int             `json:"failed"`
	Error    string          `json:"error,omitempty"`
	Started  time.Time       `json:"started"`
	Updated  time.Time       `json:"updated"`
	Finished time.Time       `json:"finished,omitzero"`
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

// Jobs returns the store's job records, or ErrUnsupported.
func (s *Store) Jobs() (JobStore, error) {
	js, ok := s.b.(JobStore)
	if !ok {
		return nil, fmt.Errorf("%w: this store does not record jobs", ErrUnsupported)
	}
	return js, nil
}
