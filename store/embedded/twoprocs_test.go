package embedded_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/store/embedded"
)

// TestCheckpointKeepsAnotherWritersTemporaryFiles: a checkpoint write
// removes the older checkpoints it replaces, never a temporary folder that
// another process (quarry serve beside quarry ingest) is still filling;
// before, the second writer's checkpoint failed with "no such file".
func TestCheckpointKeepsAnotherWritersTemporaryFiles(t *testing.T) {
	dir := checkpointed(t)
	s, b := openStore(t, dir)
	defer s.Close()
	c := ensure(t, s)
	if err := c.Upsert(t.Context(), batch(5)); err != nil {
		t.Fatal(err)
	}
	// Made after the open, as a live process would: what a crash left is
	// swept on open, what a running writer holds must survive the
	// cleanup that follows this process's own checkpoint.
	other := filepath.Join(dir, "index", "docs", "ckpt-9.999999.tmp")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "bm25.bin"), []byte("half written"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := b.Checkpoint(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(other, "bm25.bin")); err != nil {
		t.Fatalf("another writer's temporary checkpoint was removed: %v", err)
	}
}

// TestNewerCheckpointOpenedNotRebuilt: when another process checkpoints
// past what this one has read, and removes the checkpoint this one opened,
// this one opens the newer checkpoint and replays the journal after it
// instead of indexing every row again, and finds every document.
func TestNewerCheckpointOpenedNotRebuilt(t *testing.T) {
	dir := checkpointed(t)
	s, _, log := openLogged(t, dir)
	defer s.Close()
	c := ensure(t, s)
	if _, err := c.Count(t.Context(), nil); err != nil { // opens ckpt-4, reading no index yet
		t.Fatal(err)
	}
	// Another process writes two batches and checkpoints them: ckpt-4
	// goes, and the journal it covered is trimmed.
	s2, b2 := openStore(t, dir)
	c2 := ensure(t, s2)
	for _, bt := range []int{4, 5} {
		if err := c2.Upsert(t.Context(), batch(bt)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b2.Checkpoint(t.Context()); err != nil {
		t.Fatal(err)
	}
	s2.Close()
	if _, err := os.Stat(filepath.Join(dir, "index", "docs", "ckpt-4")); !os.IsNotExist(err) {
		t.Fatalf("the first checkpoint is still there (%v): the test does not test the replacement", err)
	}
	if present := verify(t, dir, c, 6); len(present) != 6 {
		t.Errorf("batches: %v", present)
	}
	if strings.Contains(log.String(), "rebuilding from rows") {
		t.Errorf("indexed every row again instead of opening the newer checkpoint: %s", log)
	}
}

// TestScansMapNothing: whole-collection scans (the hierarchy's, a
// rebuild's) read through a connection that maps nothing, so a scan of a
// large collection does not pull the whole database into the process's
// resident set; searches keep their map.
func TestScansMapNothing(t *testing.T) {
	s, b := openStore(t, t.TempDir())
	defer s.Close()
	reader, scan, err := b.MmapSizes()
	if err != nil {
		t.Fatal(err)
	}
	if reader != embedded.DefaultMmapBytes || scan != 0 {
		t.Errorf("mmap_size: readers %d, scans %d; want %d and 0", reader, scan, int64(embedded.DefaultMmapBytes))
	}
}

// TestAWriteBesideABulkLoadDoesNotReplayIt: a process that writes a few
// documents while another loads many (quarry serve's adds during quarry
// ingest) commits them without first indexing the whole load, which
// competed with the load for the cores; its next read catches up, and
// finds every document, the load's and its own.
func TestAWriteBesideABulkLoadDoesNotReplayIt(t *testing.T) {
	dir := checkpointed(t) // batches 0-3
	s, b := openStore(t, dir)
	defer s.Close()
	c := ensure(t, s)
	if _, err := c.Count(t.Context(), nil); err != nil { // opens the checkpoint, reading no index
		t.Fatal(err)
	}
	s2, _ := openStore(t, dir)
	defer s2.Close()
	c2 := ensure(t, s2)
	const loaded = 120 // batches of 10: more than lagRows behind
	for bt := 4; bt < 4+loaded; bt++ {
		if err := c2.Upsert(t.Context(), batch(bt)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Upsert(t.Context(), batch(4+loaded)); err != nil {
		t.Fatal(err)
	}
	if graph, keyword := b.Pending("docs"); !graph || !keyword {
		t.Errorf("the write read the indexes (graph %v, keyword %v) to replay the load first", !graph, !keyword)
	}
	present := verify(t, dir, c, 4+loaded)
	if len(present) != 5+loaded {
		t.Errorf("%d of %d batches found after the catch-up", len(present), 5+loaded)
	}
	// And the loading process, a write behind the other's, still
	// applies its own writes: the lag it sees is one batch.
	if err := c2.Upsert(t.Context(), batch(5+loaded)); err != nil {
		t.Fatal(err)
	}
	if present := verify(t, dir, c2, 5+loaded); len(present) != 6+loaded {
		t.Errorf("the loader finds %d of %d batches", len(present), 6+loaded)
	}
}
