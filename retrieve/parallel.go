package retrieve

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/quarry-rag/quarry/document"
)

// DefaultSourceTimeout bounds one source of a Parallel retriever.
const DefaultSourceTimeout = 10 * time.Second

// Source is one named source of a Parallel retriever.
type Source struct {
	// Name identifies the source in failures ("docs", "web").
	Name      string
	Retriever Retriever
	// Timeout bounds this source; the Parallel's Timeout when 0.
	Timeout time.Duration
}

// SourceError is a source that failed or ran out of time.
type SourceError struct {
	Source   string `json:"source"`
	Message  string `json:"error"`
	TimedOut bool   `json:"timedOut,omitempty"`
}

// Error implements error.
func (e SourceError) Error() string { return "source " + e.Source + ": " + e.Message }

// Result is what a multi-source retrieval found and which sources failed.
type Result struct {
	Docs     []*document.Document
	Failures []SourceError
}

// Reporter is a retriever over several sources that keeps going when some
// fail, and says which. A pipeline reports the failures with its answer.
type Reporter interface {
	RetrieveReport(ctx context.Context, req Request) (Result, error)
}

// Parallel searches its sources concurrently, each under its own timeout.
// A source that fails or runs out of time is reported and skipped; it never
// cancels the others. Results are concatenated in source order, as
// Composite's are (SEMANTICS §5), for the post-processors to rerank and
// pack. Sources must honour their context: Parallel waits for each to
// return.
type Parallel struct {
	Sources []Source
	// Timeout bounds each source without its own; DefaultSourceTimeout
	// when 0.
	Timeout time.Duration
}

// ErrAllSourcesFailed is returned when no source answered.
var ErrAllSourcesFailed = errors.New("every source failed")

// Retrieve implements Retriever: the passages of the sources that
// answered; an error only when none did.
func (p *Parallel) Retrieve(ctx context.Context, req Request) ([]*document.Document, error) {
	res, err := p.RetrieveReport(ctx, req)
	return res.Docs, err
}

// RetrieveReport implements Reporter.
func (p *Parallel) RetrieveReport(ctx context.Context, req Request) (Result, error) {
	type outcome struct {
		docs []*document.Document
		err  error
		late bool
	}
	outs := make([]outcome, len(p.Sources))
	var wg sync.WaitGroup
	for i, s := range p.Sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sctx, cancel := context.WithTimeout(ctx, p.timeout(s))
			defer cancel()
			if s.Retriever == nil {
				outs[i].err = errors.New("no retriever")
				return
			}
			docs, err := s.Retriever.Retrieve(sctx, req)
			if err == nil && sctx.Err() != nil && ctx.Err() == nil {
				err = sctx.Err() // it answered, but too late to count
			}
			outs[i] = outcome{docs: docs, err: err, late: errors.Is(sctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("retrieve: %w", err)
	}
	var res Result
	for i, o := range outs {
		name := p.Sources[i].Name
		if name == "" {
			name = fmt.Sprintf("source %d", i+1)
		}
		if o.err != nil {
			msg := o.err.Error()
			if o.late {
				msg = "no answer within " + p.timeout(p.Sources[i]).String()
			}
			res.Failures = append(res.Failures, SourceError{Source: name, Message: msg, TimedOut: o.late})
			continue
		}
		res.Docs = append(res.Docs, o.docs...)
	}
	if len(p.Sources) > 0 && len(res.Failures) == len(p.Sources) {
		return res, fmt.Errorf("retrieve: %w: %v", ErrAllSourcesFailed, res.Failures)
	}
	return res, nil
}

func (p *Parallel) timeout(s Source) time.Duration {
	switch {
	case s.Timeout > 0:
		return s.Timeout
	case p.Timeout > 0:
		return p.Timeout
	}
	return DefaultSourceTimeout
}
