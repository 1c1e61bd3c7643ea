package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/internal/cli"
)

// TestIngestWatch checks ingest --watch re-ingests a file that changes,
// and only it, until it is stopped.
func TestIngestWatch(t *testing.T) {
	docs := t.TempDir()
	kb := filepath.Join(t.TempDir(), "kb")
	writeFiles(t, docs, map[string]string{"a.md": "# A\n\nAlpha text that is long enough.\n", "b.md": "# B\n\nBeta text that is long enough.\n"})
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, []string{"ingest", docs, "--kb", kb, "--watch", "--watch-interval", "20ms"}, cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	}()
	waitFor := func(what string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(out.String(), what) {
			if time.Now().After(deadline) {
				cancel()
				t.Fatalf("no %q in:\n%s\n%s", what, out.String(), errb.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("2 files: 2 written")
	waitFor("2 files: 0 written, 2 unchanged")
	writeFiles(t, docs, map[string]string{"b.md": "# B\n\nBeta text, changed while watched.\n"})
	waitFor("2 files: 1 written, 1 unchanged")
	os.Remove(filepath.Join(docs, "a.md"))
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("watch ended with %d: %s", code, errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("watch did not stop")
	}
}
