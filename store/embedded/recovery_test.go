package embedded_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/embedded"
	"github.com/quarry-rag/quarry/store/storetest"
)

const batchSize = 10

func openStore(t testing.TB, dir string) (*store.Store, *embedded.Backend) {
	t.Helper()
	b, err := embedded.Open(context.Background(), dir, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return store.New(b), b
}

func batch(b int) []*document.Document {
	r := rand.New(rand.NewPCG(uint64(b), 3))
	docs := make([]*document.Document, batchSize)
	for i := range docs {
		d := document.New(fmt.Sprintf("batch %d document %d", b, i))
		d.ID = fmt.Sprintf("b%04d-%02d", b, i)
		d.Embedding = []float32{r.Float32() + 0.1, r.Float32(), r.Float32(), r.Float32()}
		d.Metadata = map[string]any{"tenant": "acme", "batch": int64(b), "tags": []any{"t" + strconv.Itoa(b%3)}}
		d.SourceType, d.SourceName = "file", fmt.Sprintf("src/%d.md", b)
		docs[i] = d
	}
	return docs
}

func ensure(t testing.TB, s *store.Store) *store.Collection {
	t.Helper()
	c, err := s.EnsureCollection(context.Background(), store.CollectionConfig{Name: "docs", Schema: storetest.Schema(), Model: storetest.Model(4)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// verify checks that the indexes agree with the rows: every batch is whole
// or absent, counts through the filter index equal SQL counts, and every
// document is found by its own vector.
func verify(t *testing.T, dir string, c *store.Collection, maxBatch int) map[int]bool {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, embedded.DBFile)+"?_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	present := map[int]bool{}
	for b := 0; b <= maxBatch; b++ {
		var rows int
		if err := db.QueryRow(`SELECT count(*) FROM documents WHERE id LIKE ?`, fmt.Sprintf("b%04d-%%", b)).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		n, err := c.Count(ctx, filter.Eq("batch", b))
		if err != nil {
			t.Fatal(err)
		}
		if n != rows {
			t.Fatalf("batch %d: filter index counts %d, SQLite holds %d rows", b, n, rows)
		}
		if rows != 0 && rows != batchSize {
			t.Fatalf("batch %d is partial: %d of %d rows", b, rows, batchSize)
		}
		if rows == batchSize {
			present[b] = true
			d := batch(b)[b%batchSize]
			hits, err := c.Search(ctx, store.SearchRequest{Embedding: d.Embedding, TopK: 1, Filter: filter.Eq("batch", b)})
			if err != nil || len(hits) != 1 || hits[0].Doc.ID != d.ID {
				t.Fatalf("batch %d: document %s not found by its vector: %v", b, d.ID, err)
			}
		}
	}
	var total int
	if err := db.QueryRow(`SELECT count(*) FROM documents`).Scan(&total); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Count(ctx, nil); n != total {
		t.Fatalf("index counts %d documents, SQLite %d", n, total)
	}
	return present
}

func TestReopenUsesCheckpoint(t *testing.T) {
	dir := t.TempDir()
	s, _ := openStore(t, dir)
	c := ensure(t, s)
	for b := range 5 {
		if err := c.Upsert(t.Context(), batch(b)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Delete(t.Context(), filter.Eq("batch", 2)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	cur, err := os.ReadFile(filepath.Join(dir, "index", "docs", "CURRENT"))
	if err != nil || strings.TrimSpace(string(cur)) != "ckpt-6" {
		t.Fatalf("no checkpoint at sequence 6 after close: %q %v", cur, err)
	}
	s, _ = openStore(t, dir)
	defer s.Close()
	c = ensure(t, s)
	present := verify(t, dir, c, 5)
	if len(present) != 4 || present[2] {
		t.Errorf("batches after reopen: %v", present)
	}
}

// TestConcurrentCheckpoints checkpoints from several goroutines while
// writes go on: each must succeed and the last must be the one on disk.
func TestConcurrentCheckpoints(t *testing.T) {
	dir := t.TempDir()
	s, b := openStore(t, dir)
	c := ensure(t, s)
	errs := make(chan error, 64)
	var wg sync.WaitGroup
	for i := range 8 {
		if err := c.Upsert(t.Context(), batch(i)); err != nil {
			t.Fatal(err)
		}
		for range 4 {
			wg.Go(func() { errs <- b.Checkpoint(t.Context()) })
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "index", "docs"))
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
		}
	}
	if len(dirs) != 1 || dirs[0] != "ckpt-8" {
		t.Errorf("checkpoint directories after close: %v, want [ckpt-8]", dirs)
	}
}

// TestCheckpointDamage damages the checkpoint in every way and expects the
// store to repair it from the rows.
func TestCheckpointDamage(t *testing.T) {
	damage := map[string]func(t *testing.T, ck string){
		"missing": func(t *testing.T, ck string) { os.RemoveAll(filepath.Dir(ck)) },
		"truncated graph": func(t *testing.T, ck string) {
			p := filepath.Join(ck, "hnsw.bin")
			st, _ := os.Stat(p)
			os.Truncate(p, st.Size()/2)
		},
		"flipped byte": func(t *testing.T, ck string) {
			p := filepath.Join(ck, "meta.gob")
			b, _ := os.ReadFile(p)
			b[len(b)/2] ^= 0xff
			os.WriteFile(p, b, 0o644)
		},
		"flipped byte in the graph": func(t *testing.T, ck string) {
			p := filepath.Join(ck, "hnsw.bin")
			b, _ := os.ReadFile(p)
			b[len(b)/3] ^= 0x10
			os.WriteFile(p, b, 0o644)
		},
		"flipped byte in the keyword index": func(t *testing.T, ck string) {
			p := filepath.Join(ck, "bm25.bin")
			b, _ := os.ReadFile(p)
			b[len(b)/2] ^= 0x01
			os.WriteFile(p, b, 0o644)
		},
		"garbage manifest": func(t *testing.T, ck string) {
			os.WriteFile(filepath.Join(ck, "manifest.json"), []byte("{not json"), 0o644)
		},
		"CURRENT points nowhere": func(t *testing.T, ck string) {
			os.WriteFile(filepath.Join(filepath.Dir(ck), "CURRENT"), []byte("ckpt-999\n"), 0o644)
		},
	}
	for name, fn := range damage {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s, _ := openStore(t, dir)
			c := ensure(t, s)
			for b := range 4 {
				if err := c.Upsert(t.Context(), batch(b)); err != nil {
					t.Fatal(err)
				}
			}
			s.Close()
			ck := filepath.Join(dir, "index", "docs", "ckpt-4")
			fn(t, ck)
			s, _ = openStore(t, dir)
			c = ensure(t, s)
			if present := verify(t, dir, c, 4); len(present) != 4 {
				t.Errorf("batches after repair: %v", present)
			}
			// The repaired indexes are checkpointed again on close.
			s.Close()
			if _, err := os.Stat(filepath.Join(dir, "index", "docs", "ckpt-4", "manifest.json")); err != nil {
				t.Errorf("no fresh checkpoint after a repair: %v", err)
			}
		})
	}
}

// TestStaleCheckpointReplaysJournal writes after a checkpoint without
// closing, as a crash would leave it, and expects the journal to be
// replayed on open.
func TestStaleCheckpointReplaysJournal(t *testing.T) {
	dir := t.TempDir()
	s, b := openStore(t, dir)
	c := ensure(t, s)
	for bt := range 3 {
		c.Upsert(t.Context(), batch(bt))
	}
	if err := b.Checkpoint(t.Context()); err != nil {
		t.Fatal(err)
	}
	c.Upsert(t.Context(), batch(3))
	c.Delete(t.Context(), filter.Eq("batch", 0))
	// A second store on the same directory stands in for the process
	// after a crash: it never saw the writes after the checkpoint.
	s2, _ := openStore(t, dir)
	defer s2.Close()
	c2 := ensure(t, s2)
	present := verify(t, dir, c2, 4)
	if len(present) != 3 || present[0] || !present[3] {
		t.Errorf("after replay: %v", present)
	}
	// Writes through one handle become visible through the other.
	c.Upsert(t.Context(), batch(4))
	if n, _ := c2.Count(t.Context(), filter.Eq("batch", 4)); n != batchSize {
		t.Errorf("second handle sees %d documents of a new batch", n)
	}
	s.Close()
}

// crashChildEnv makes the test binary act as a writer that the parent kills.
const crashChildEnv = "QUARRY_CRASH_CHILD_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir)
		return
	}
	os.Exit(m.Run())
}

// crashChild writes batches forever, acknowledging each on stdout once
// Upsert has returned, and checkpoints now and then so kills land inside
// checkpoints too.
func crashChild(dir string) {
	ctx := context.Background()
	b, err := embedded.Open(ctx, dir, embedded.Options{})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	s := store.New(b)
	c, err := s.EnsureCollection(ctx, store.CollectionConfig{Name: "docs", Schema: storetest.Schema(), Model: storetest.Model(4)})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	start, _ := strconv.Atoi(os.Getenv("QUARRY_CRASH_START"))
	for bt := start; ; bt++ {
		if err := c.Upsert(ctx, batch(bt)); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("ack", bt)
		if bt%5 == 4 {
			if err := b.Checkpoint(ctx); err != nil {
				fmt.Println("error", err)
				os.Exit(1)
			}
		}
	}
}

func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test spawns processes")
	}
	runs := 20
	if v, err := strconv.Atoi(os.Getenv("QUARRY_CRASH_RUNS")); err == nil && v > 0 {
		runs = v
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(42, uint64(time.Now().UnixNano())))
	acked := map[int]bool{}
	next := 0
	for run := range runs {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, "QUARRY_CRASH_START="+strconv.Itoa(next))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAfter := 1 + r.IntN(12) // acknowledged batches before the kill
		delay := time.Duration(r.IntN(3000)) * time.Microsecond
		sc := bufio.NewScanner(out)
		seen := 0
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "error") {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("run %d: child: %s", run, line)
			}
			var bt int
			if _, err := fmt.Sscanf(line, "ack %d", &bt); err == nil {
				acked[bt] = true
				next = bt + 1
				seen++
			}
			if seen >= killAfter {
				time.Sleep(delay) // land anywhere in the next write or checkpoint
				break
			}
		}
		cmd.Process.Kill() // SIGKILL
		go func() {
			for sc.Scan() { // drain so the child never blocks before it dies
			}
		}()
		cmd.Wait()
		s, _ := openStore(t, dir)
		c := ensure(t, s)
		present := verify(t, dir, c, next+1)
		for bt := range acked {
			if !present[bt] {
				t.Fatalf("run %d: acknowledged batch %d lost", run, bt)
			}
		}
		for bt := range present {
			if bt >= next {
				next = bt + 1 // written but killed before the ack reached us
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d kills, %d acknowledged batches, all present and whole", runs, len(acked))
}
