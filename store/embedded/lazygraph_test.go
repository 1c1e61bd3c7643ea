package embedded_test

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/quarry-rag/quarry/filter"
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

// TestIndexesReadWhenNeeded: a collection opened from a checkpoint reads
// each index only when something needs it — counts read neither, a
// keyword search only the BM25 index, a vector search only the graph, a
// hybrid search or a write both; the metadata postings wait for a filter
// or a write.
func TestIndexesReadWhenNeeded(t *testing.T) {
	type pending struct{ graph, keyword, meta bool }
	search := func(mode store.Mode) func(t *testing.T, c *store.Collection) {
		return func(t *testing.T, c *store.Collection) {
			d := batch(1)[3]
			hits, err := c.Search(t.Context(), store.SearchRequest{Mode: mode, Query: "batch document", Embedding: d.Embedding, TopK: 5})
			if err != nil || len(hits) != 5 {
				t.Fatalf("%s search: %d hits, %v", mode, len(hits), err)
			}
		}
	}
	for _, tc := range []struct {
		name  string
		first func(t *testing.T, c *store.Collection)
		left  pending
	}{
		{"count", func(t *testing.T, c *store.Collection) {
			if n, err := c.Count(t.Context(), nil); err != nil || n != 40 {
				t.Fatalf("count %d, %v", n, err)
			}
		}, pending{true, true, true}},
		{"filtered count", func(t *testing.T, c *store.Collection) {
			if n, err := c.Count(t.Context(), filter.Eq("sourceName", "nowhere.md")); err != nil || n != 0 {
				t.Fatalf("count %d, %v", n, err)
			}
		}, pending{true, true, false}},
		{"keyword search", search(store.ModeKeyword), pending{true, false, true}},
		{"vector search", search(store.ModeVector), pending{false, true, true}},
		{"hybrid search", search(store.ModeHybrid), pending{false, false, true}},
		{"write", func(t *testing.T, c *store.Collection) {
			if err := c.Upsert(t.Context(), batch(9)); err != nil {
				t.Fatal(err)
			}
		}, pending{false, false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := checkpointed(t)
			s, b, log := openLogged(t, dir)
			defer s.Close()
			c := ensure(t, s)
			if g, k := b.Pending("docs"); !g || !k || !b.PendingMeta("docs") {
				t.Fatalf("opening read an index: graph pending %v, keyword %v, metadata %v", g, k, b.PendingMeta("docs"))
			}
			tc.first(t, c)
			if g, k := b.Pending("docs"); (pending{g, k, b.PendingMeta("docs")}) != tc.left {
				t.Fatalf("after a %s: pending %+v, want %+v", tc.name, pending{g, k, b.PendingMeta("docs")}, tc.left)
			}
			want := 4
			if tc.name == "write" {
				want = 5
			}
			if present := verify(t, dir, c, 9); len(present) != want {
				t.Errorf("batches %v, want %d", present, want)
			}
			if hits, err := c.Search(t.Context(), store.SearchRequest{Mode: store.ModeKeyword, Query: "batch 2 document 7", TopK: 1}); err != nil || len(hits) != 1 || hits[0].Doc.ID != "b0002-07" {
				t.Errorf("keyword search after: %+v %v", hits, err)
			}
			if strings.Contains(log.String(), "rebuilding") {
				t.Errorf("a sound checkpoint was rebuilt: %s", log)
			}
		})
	}
}

// TestDamagedIndexFoundLate: an index damaged on disk is found when it is
// first read, after the collection opened and served what did not need
// it; the indexes are rebuilt from the rows, the damaged checkpoint
// dropped, and the next open reads a sound one.
func TestDamagedIndexFoundLate(t *testing.T) {
	for _, tc := range []struct{ file, serve string }{{"hnsw.bin", "keyword"}, {"bm25.bin", "vector"}} {
		t.Run(tc.file, func(t *testing.T) { damagedLate(t, tc.file, store.Mode(tc.serve)) })
	}
}

func damagedLate(t *testing.T, file string, serve store.Mode) {
	dir := checkpointed(t)
	p := filepath.Join(dir, "index", "docs", "ckpt-4", file)
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)/3] ^= 0x10
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	s, _, log := openLogged(t, dir)
	c := ensure(t, s)
	if _, err := c.Search(t.Context(), store.SearchRequest{Mode: serve, Query: "batch", Embedding: batch(0)[0].Embedding, TopK: 3}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log.String(), "rebuilding") {
		t.Fatalf("the damage was found before the index was needed: %s", log)
	}
	if _, err := c.Search(t.Context(), store.SearchRequest{Mode: store.ModeHybrid, Query: "batch", Embedding: batch(0)[0].Embedding, TopK: 3}); err != nil {
		t.Fatal(err)
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
	if g, _ := b.Pending("docs"); g || !strings.Contains(log.String(), "a newer checkpoint replaced the one opened") {
		t.Errorf("the replaced file was read: %s", log)
	}
	if _, err := os.Stat(p); err != nil {
		t.Errorf("the newer checkpoint was removed: %v", err)
	}
}
