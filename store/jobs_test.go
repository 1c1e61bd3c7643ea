package store_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/store"
)

// deadPID is the pid of a process of this host that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestJobObserved(t *testing.T) {
	now := time.Now()
	host, _ := os.Hostname()
	dead := deadPID(t)
	for _, tc := range []struct {
		name string
		job  store.Job
		want string
	}{
		{"live owner, fresh", store.Job{State: store.JobRunning, Owner: store.CurrentOwner(), Updated: now}, store.JobRunning},
		{"dead owner on this host", store.Job{State: store.JobRunning, Owner: store.JobOwner{Host: host, PID: dead}, Updated: now}, store.JobInterrupted},
		{"owner on another host, fresh", store.Job{State: store.JobRunning, Owner: store.JobOwner{Host: host + "-other", PID: dead}, Updated: now}, store.JobRunning},
		{"silent heartbeat", store.Job{State: store.JobRunning, Owner: store.JobOwner{Host: host + "-other", PID: 1}, Updated: now.Add(-time.Minute)}, store.JobInterrupted},
		{"no owner, silent", store.Job{State: store.JobRunning, Updated: now.Add(-time.Minute)}, store.JobInterrupted},
		{"done stays done", store.Job{State: store.JobDone, Owner: store.JobOwner{Host: host, PID: dead}, Updated: now.Add(-time.Hour)}, store.JobDone},
	} {
		if got := tc.job.Observed(now).State; got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestJobsReadInterrupted: a job left running by a dead process reads as
// interrupted through Store.Jobs, and is recorded so.
func TestJobsReadInterrupted(t *testing.T) {
	ctx := context.Background()
	s, err := store.Open(ctx, "memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	js, err := s.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	now := time.Now().UTC()
	if err := js.PutJob(ctx, store.Job{ID: "j1", Kind: "ingest", State: store.JobRunning, Owner: store.JobOwner{Host: host, PID: deadPID(t)}, Started: now, Updated: now}); err != nil {
		t.Fatal(err)
	}
	j, err := js.GetJob(ctx, "j1")
	if err != nil || j.State != store.JobInterrupted || j.Finished.IsZero() {
		t.Fatalf("GetJob = %+v, %v", j, err)
	}
	list, err := js.ListJobs(ctx, 10)
	if err != nil || len(list) != 1 || list[0].State != store.JobInterrupted {
		t.Fatalf("ListJobs = %+v, %v", list, err)
	}
}
