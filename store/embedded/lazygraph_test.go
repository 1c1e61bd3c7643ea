package embedded_test

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/embedded"
)

// lockedBuffer is a log sink safe for the store's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// checkpointed writes four batches and closes the store, leaving a
// checkpoint at sequence 4.
func checkpointed(t *testing.T) string {
	dir := t.TempDir()
	s, _ := openStore(t, dir)
	c := ensure(t, s)
	for b := range 4 {
		if err := c.Upsert(t.Context(), batch(b)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func openLogged(t *testing.T, dir string) (*store.Store, *embedded.Backend, *lockedBuffer) {
	t.Helper()
	log := &lockedBuffer{}
	b, err := embedded.Open(t.Context(), dir, embedded.Options{Logger: slog.New(slog.NewTextHandler(log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return store.New(b), b, log
}

// TestKeywordSearchLeavesGraphOnDisk: a collection opened from a
// checkpoint reads its graph only when something needs it — keyword
// searches, counts and gets do not; a vector search or a write does.
func TestKeywordSearchLeavesGraphOnDisk(t *testing.T) {
	for _, first := range []string{"vector search", "write"} {
		t.Run(first, func(t *testing.T) {
			dir := checkpointed(t)
			s, b, log := openLogged(t, dir)
			defer s.Close()
			c := ensure(t, s)
			hits, err := c.Search(t.Context(), store.SearchRequest{Mode: store.ModeKeyword, Query: "batch document", TopK: 5})
			if err != nil || len(hits) != 5 {
				t.Fatalf("keyword search: %d hits, %v", len(hits), err)
			}
			if n, err := c.Count(t.Context(), nil); err != nil || n != 40 {
				t.Fatalf("count %d, %v", n, err)
			}
			if !b.GraphPending("docs") {
				t.Fatal("a keyword search read the graph")
			}
			if first == "write" {
				if err := c.Upsert(t.Context(), batch(9)); err != nil {
					t.Fatal(err)
				}
				if b.GraphPending("docs") {
					t.Fatal("a write left the graph on disk")
				}
			}
			present := verify(t, dir, c, 9)
			if b.GraphPending("docs") {
				t.Fatal("a vector search left the graph on disk")
			}
			if want := map[string]int{"vector search": 4, "write": 5}[first]; len(present) != want {
				t.Errorf("batches %v, want %d", present, want)
			}
			if strings.Contains(log.String(), "rebuilding") {
				t.Errorf("a sound checkpoint was rebuilt: %s", log)
			}
		})
	}
}

// TestDamagedGraphFoundLate: a graph damaged on disk is found when it is
// first read, after the collection opened and served keyword searches;
// the indexes are rebuilt from the rows, the damaged checkpoint dropped,
// and the next open reads a sound one.
func TestDamagedGraphFoundLate(t *testing.T) {
	dir := checkpointed(t)
	p := filepath.Join(dir, "index", "docs", "ckpt-4", "hnsw.bin")
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)/3] ^= 0x10
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	s, b, log := openLogged(t, dir)
	c := ensure(t, s)
	if _, err := c.Search(t.Context(), store.SearchRequest{Mode: store.ModeKeyword, Query: "batch", TopK: 3}); err != nil {
		t.Fatal(err)
	}
	if !b.GraphPending("docs") {
		t.Fatal("the graph was read at open")
	}
	if present := verify(t, dir, c, 4); len(present) != 4 {
		t.Errorf("batches after the repair: %v", present)
	}
	if !strings.Contains(log.String(), "checkpoint unusable, rebuilding from rows") {
		t.Errorf("the repair was not logged: %s", log)
	}
	s.Close()
	s, _, log = openLogged(t, dir)
	defer s.Close()
	c = ensure(t, s)
	if present := verify(t, dir, c, 4); len(present) != 4 {
		t.Errorf("batches after reopening: %v", present)
	}
	if strings.Contains(log.String(), "rebuilding") {
		t.Errorf("the checkpoint written after the repair was not sound: %s", log)
	}
}

// TestReplacedGraphNotTrusted: when another process's checkpoint replaces
// the graph file after this one opened (its ids may differ), the graph is
// not read from it: the indexes are rebuilt from the rows, and the newer
// checkpoint is left in place.
func TestReplacedGraphNotTrusted(t *testing.T) {
	dir := checkpointed(t)
	s, b, log := openLogged(t, dir)
	defer s.Close()
	c := ensure(t, s)
	if _, err := c.Count(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	// A graph of the same collection, written elsewhere: the same rows
	// in another order give other ids.
	other := t.TempDir()
	os2, _ := openStore(t, other)
	c2 := ensure(t, os2)
	for _, bt := range []int{3, 2, 1, 0} {
		if err := c2.Upsert(t.Context(), batch(bt)); err != nil {
			t.Fatal(err)
		}
	}
	os2.Close()
	p := filepath.Join(dir, "index", "docs", "ckpt-4", "hnsw.bin")
	raw, err := os.ReadFile(filepath.Join(other, "index", "docs", "ckpt-4", "hnsw.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if present := verify(t, dir, c, 4); len(present) != 4 {
		t.Errorf("batches: %v", present)
	}
	if b.GraphPending("docs") || !strings.Contains(log.String(), "a newer checkpoint replaced the one opened") {
		t.Errorf("the replaced file was read: %s", log)
	}
	if _, err := os.Stat(p); err != nil {
		t.Errorf("the newer checkpoint was removed: %v", err)
	}
}
