package weaviate

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/quarry-rag/quarry/store"
)

// PutJob implements store.JobStore: a job is one object, written whole.
func (b *Backend) PutJob(ctx context.Context, j store.Job) error {
	body, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("weaviate: encode job: %w", err)
	}
	return b.putObjects(ctx, []object{{Class: b.jobsClass(), ID: objectID("job", j.ID),
		Properties: map[string]any{"started": j.Started.UnixMicro(), "body": string(body)}}})
}

// GetJob implements store.JobStore.
func (b *Backend) GetJob(ctx context.Context, id string) (store.Job, error) {
	var obj struct {
		Properties struct {
			Body string `json:"body"`
		} `json:"properties"`
	}
	err := b.c.do(ctx, http.MethodGet, "/objects/"+url.PathEscape(b.jobsClass())+"/"+objectID("job", id), b.consistency(), nil, &obj)
	if isStatus(err, http.StatusNotFound) {
		return store.Job{}, fmt.Errorf("%w: %q", store.ErrJobNotFound, id)
	}
	if err != nil {
		return store.Job{}, err
	}
	var j store.Job
	if err := json.Unmarshal([]byte(obj.Properties.Body), &j); err != nil {
		return store.Job{}, fmt.Errorf("weaviate: job %s: %w", id, err)
	}
	return j, nil
}

// ListJobs implements store.JobStore: the newest first.
func (b *Backend) ListJobs(ctx context.Context, limit int) ([]store.Job, error) {
	if limit <= 0 || limit > maxResults {
		limit = maxResults
	}
	var data struct {
		Get map[string][]struct {
			Body string `json:"body"`
		} `json:"Get"`
	}
	q := fmt.Sprintf(`{Get{%s(sort:[{path:["started"],order:desc}],limit:%d%s){body}}}`, b.jobsClass(), limit, b.gqlConsistency())
	if err := b.c.graphql(ctx, q, &data); err != nil {
		return nil, fmt.Errorf("weaviate: list jobs: %w", err)
	}
	var out []store.Job
	for _, o := range data.Get[b.jobsClass()] {
		var j store.Job
		if err := json.Unmarshal([]byte(o.Body), &j); err != nil {
			return nil, fmt.Errorf("weaviate: job: %w", err)
		}
		out = append(out, j)
	}
	slices.SortStableFunc(out, func(a, b store.Job) int { return b.Started.Compare(a.Started) })
	return out, nil
}
