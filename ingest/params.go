package ingest

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/quarry-rag/quarry/store"
)

// Params are what an ingestion job records so that `quarry ingest
// --resume` can run it again: one shape for every surface that starts
// ingestions (the command line, the HTTP API, MCP).
type Params struct {
	Roots      []string       `json:"roots"`
	Collection string         `json:"collection"`
	Meta       map[string]any `json:"meta,omitempty"`
	Prune      bool           `json:"prune,omitempty"`
	Include    []string       `json:"include,omitempty"`
	Exclude    []string       `json:"exclude,omitempty"`
	Prefix     string         `json:"prefix,omitempty"`
	Replace    bool           `json:"replace,omitempty"`
}

// Marshal encodes the parameters for Options.JobParams.
func (p Params) Marshal() (json.RawMessage, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("record the job's parameters: %w", err)
	}
	return b, nil
}

// Interrupted returns the parameters of the newest ingestion when it
// failed or its process stopped (store.Job.Observed), for --resume; false
// when the newest ingestion finished or is running, or none is recorded.
func Interrupted(ctx context.Context, js store.JobStore) (Params, bool, error) {
	jobs, err := js.ListJobs(ctx, 20)
	if err != nil {
		return Params{}, false, err
	}
	for _, j := range jobs {
		if j.Kind != JobKind {
			continue
		}
		if j.State != store.JobFailed && j.State != store.JobInterrupted {
			return Params{}, false, nil
		}
		var p Params
		if err := json.Unmarshal(j.Params, &p); err != nil || len(p.Roots) == 0 {
			return Params{}, false, fmt.Errorf("job %s cannot be resumed: its parameters are unreadable", j.ID)
		}
		return p, true, nil
	}
	return Params{}, false, nil
}
