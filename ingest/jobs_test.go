package ingest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/load"
	"github.com/quarry-rag/quarry/store"
)

// blockingEmbedder holds every embedding call until its context ends.
type blockingEmbedder struct{ embed.Embedder }

func (b blockingEmbedder) Embed(ctx context.Context, _ []string) ([][]float32, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestJobs checks a background run returns its recorded id at once, Close
// stops it (recorded as failed, its done called) and waits, and nothing
// starts after Close.
func TestJobs(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.md": "# A\n\nSome words to embed.\n"})
	e := newEnv(t, t.TempDir())
	js, err := e.s.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	jobs := ingest.NewJobs()
	loader := load.New(load.Options{})
	defer loader.Close()
	opt := ingest.Options{Collection: e.coll, Embedder: blockingEmbedder{e.emb}, Loader: loader, Jobs: js}
	ended := make(chan error, 1)
	cleaned := make(chan bool, 1)
	st, err := jobs.Start(context.Background(), []string{root}, opt, func(rep *ingest.Report, err error) { t.Logf("report %+v", rep); ended <- err }, func() { cleaned <- true })
	if err != nil || st.ID == "" || st.State != store.JobRunning {
		t.Fatalf("start: %+v %v", st, err)
	}
	if j, err := js.GetJob(context.Background(), st.ID); err != nil || j.State != store.JobRunning {
		t.Fatalf("recorded: %+v %v", j, err)
	}
	jobs.Close()
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Errorf("the run ended with %v, want it cancelled", err)
	}
	if !<-cleaned {
		t.Error("cleanup did not run")
	}
	if j, _ := js.GetJob(context.Background(), st.ID); j.State != store.JobFailed {
		t.Errorf("after Close the job is %s", j.State)
	}
	cleanup := false
	if _, err := jobs.Start(context.Background(), []string{root}, opt, nil, func() { cleanup = true }); !errors.Is(err, ingest.ErrClosed) || !cleanup {
		t.Errorf("start after Close: %v, cleanup %v", err, cleanup)
	}
}
