package embedded_test

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

// TestSweepTemporaryCheckpoints plants what a checkpoint write killed
// midway leaves (its ckpt-<seq>.tmp folder and CURRENT.tmp) beside a good
// checkpoint: opening the collection removes exactly those, while a
// writer holds the checkpoint lock (here another Backend of the folder,
// as another process would be) they stay, and the store reads its rows
// either way.
func TestSweepTemporaryCheckpoints(t *testing.T) {
	dir := t.TempDir()
	s, _ := openStore(t, dir)
	c := ensure(t, s)
	for b := range 3 {
		if err := c.Upsert(t.Context(), batch(b)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	idx := filepath.Join(dir, "index", "docs")
	plant := func() {
		t.Helper()
		for _, d := range []string{"ckpt-0.tmp", "ckpt-3.tmp"} {
			if err := os.MkdirAll(filepath.Join(idx, d), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(idx, d, "hnsw.bin"), []byte("half a graph"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(idx, "CURRENT.tmp"), []byte("ckpt-"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Names the writer never uses are not Quarry's to remove.
	for _, keep := range []string{"notes.tmp", "ckpt-x.tmp"} {
		if err := os.MkdirAll(filepath.Join(idx, keep), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	plant()
	names := func() []string {
		t.Helper()
		entries, err := os.ReadDir(idx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out
	}
	planted := []string{"CURRENT", "CURRENT.tmp", "ckpt-0.tmp", "ckpt-3", "ckpt-3.tmp", "ckpt-x.tmp", "notes.tmp"}
	if got := names(); !slices.Equal(got, planted) {
		t.Fatalf("planted %v", got)
	}

	if runtime.GOOS != "windows" && runtime.GOOS != "plan9" {
		_, writer := openStore(t, dir)
		release, err := writer.HoldCheckpointWrite("docs")
		if err != nil {
			t.Fatal(err)
		}
		s, _ = openStore(t, dir)
		c = ensure(t, s)
		if got := names(); !slices.Equal(got, planted) {
			t.Errorf("swept while a checkpoint writer held the lock: %v", got)
		}
		if present := verify(t, dir, c, 2); len(present) != 3 {
			t.Errorf("batches while the lock was held: %v", present)
		}
		s.Close()
		release()
		writer.Close()
	}

	s, _ = openStore(t, dir)
	defer s.Close()
	c = ensure(t, s)
	if got, want := names(), []string{"CURRENT", "ckpt-3", "ckpt-x.tmp", "notes.tmp"}; !slices.Equal(got, want) {
		t.Errorf("index folder after reopen: %v, want %v", got, want)
	}
	if present := verify(t, dir, c, 2); len(present) != 3 {
		t.Errorf("batches after the sweep: %v", present)
	}
}
