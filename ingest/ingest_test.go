package ingest_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/embed/hash"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/load"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/embedded"
)

func writeTree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func corpus() map[string]string {
	files := map[string]string{
		"guide/refunds.md":  "# Refunds\n\nRefunds are paid within five days of the return.\n\n## Exceptions\n\nGift cards are never refunded, whatever the reason.\n",
		"guide/shipping.md": "# Shipping\n\nShipping takes two days. Express shipping takes one day and costs more.\n",
		"notes.txt":         "Plain notes about the warehouse and its opening hours, Monday to Friday.",
		"code/main.go":      "package main\n\n// Greet says hello to a customer by name.\nfunc Greet(name string) string {\n\treturn \"hello \" + name\n}\n",
		"data/items.json":   `[{"id":"w1","name":"Widget","price":9.5},{"id":"g1","name":"Gadget","price":12}]`,
	}
	for i := range 6 {
		files[fmt.Sprintf("many/page-%02d.md", i)] = fmt.Sprintf("# Page %d\n\nThis page talks about topic number %d in some detail so it is not tiny.\n", i, i)
	}
	return files
}

type env struct {
	dir  string
	s    *store.Store
	b    *embedded.Backend
	coll *store.Collection
	emb  *counting
}

// counting counts texts embedded, and can fail on demand.
type counting struct {
	embed.Embedder
	texts  int
	failOn string
}

func (c *counting) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	for _, t := range texts {
		if c.failOn != "" && strings.Contains(t, c.failOn) {
			return nil, errors.New("embedding service unavailable")
		}
	}
	c.texts += len(texts)
	return c.Embedder.Embed(ctx, texts)
}

func newEnv(t testing.TB, kb string) *env {
	t.Helper()
	e, err := openEnv(kb)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func openEnv(kb string) (*env, error) {
	b, err := embedded.Open(context.Background(), kb, embedded.Options{})
	if err != nil {
		return nil, err
	}
	s := store.New(b)
	h, _ := hash.New(hash.Config{})
	coll, err := s.EnsureCollection(context.Background(), store.CollectionConfig{Name: "default", Model: h.Model()})
	if err != nil {
		return nil, err
	}
	return &env{dir: kb, s: s, b: b, coll: coll, emb: &counting{Embedder: h}}, nil
}

func (e *env) ingest(t testing.TB, opt ingest.Options, roots ...string) *ingest.Report {
	t.Helper()
	opt.Collection, opt.Embedder, opt.Cache = e.coll, e.emb, e.b.EmbeddingCache()
	if opt.Loader == nil {
		opt.Loader = load.New(load.Options{})
	}
	rep, err := ingest.Run(context.Background(), roots, opt)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func chunkSet(t testing.TB, c *store.Collection) []string {
	t.Helper()
	hits, err := c.Search(context.Background(), store.SearchRequest{Mode: store.ModeKeyword, Query: "page refunds shipping notes widget gadget greet hello topic doc document body part words package", TopK: 1000})
	if err != nil {
		t.Fatal(err)
	}
	n, _ := c.Count(context.Background(), nil)
	var out []string
	for _, h := range hits {
		out = append(out, h.Doc.ID+" "+h.Doc.SourceName)
	}
	slices.Sort(out)
	if len(out) != n {
		t.Fatalf("keyword search reached %d of %d chunks", len(out), n)
	}
	return out
}

func TestSyncBySource(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, corpus())
	e := newEnv(t, t.TempDir())
	defer e.s.Close()

	var events []ingest.Event
	rep := e.ingest(t, ingest.Options{Progress: func(ev ingest.Event) { events = append(events, ev) }}, root)
	if rep.Files != 11 || rep.Written != 11 || rep.Failed != 0 || rep.Chunks < 12 {
		t.Fatalf("first run: %+v", rep)
	}
	if e.emb.texts != rep.Chunks || rep.Embedded != rep.Chunks {
		t.Errorf("embedded %d texts for %d chunks", e.emb.texts, rep.Chunks)
	}
	if events[0].Event != "start" || events[len(events)-1].Event != "done" || events[len(events)-1].Files != 11 || events[0].Total != 11 {
		t.Errorf("events: first %+v last %+v", events[0], events[len(events)-1])
	}
	before := chunkSet(t, e.coll)

	// Hits carry provenance: a Markdown chunk knows its headings.
	hits, _ := e.coll.Search(context.Background(), store.SearchRequest{Mode: store.ModeKeyword, Query: "gift cards", TopK: 1})
	if len(hits) != 1 || hits[0].Doc.SourceName != "guide/refunds.md" || !slices.Equal(hits[0].Doc.Provenance.HeadingPath, []string{"Refunds", "Exceptions"}) {
		t.Errorf("gift cards: %+v", hits)
	}

	// Second run: nothing changed, nothing embedded or written.
	e.emb.texts = 0
	rep = e.ingest(t, ingest.Options{}, root)
	if rep.Skipped != 11 || rep.Written != 0 || e.emb.texts != 0 {
		t.Errorf("unchanged run: %+v, %d texts embedded", rep, e.emb.texts)
	}
	if got := chunkSet(t, e.coll); !slices.Equal(got, before) {
		t.Error("an unchanged run changed the chunks")
	}

	// Touching one file re-embeds only its new chunk texts.
	writeTree(t, root, map[string]string{"guide/shipping.md": "# Shipping\n\nShipping takes three days now. Express shipping takes one day and costs more.\n"})
	rep = e.ingest(t, ingest.Options{}, root)
	if rep.Written != 1 || rep.Skipped != 10 || e.emb.texts != 1 {
		t.Errorf("one changed file: %+v, %d texts embedded", rep, e.emb.texts)
	}
	hits, _ = e.coll.Search(context.Background(), store.SearchRequest{Mode: store.ModeKeyword, Query: "three days", TopK: 5, Filter: filter.Eq("sourceName", "guide/shipping.md")})
	if len(hits) != 1 || !strings.Contains(hits[0].Doc.Content, "three days") {
		t.Errorf("changed file not re-indexed: %+v", hits)
	}

	// Deleting a file and pruning removes exactly its chunks.
	n0, _ := e.coll.Count(context.Background(), nil)
	nNotes, _ := e.coll.Count(context.Background(), filter.Eq("sourceName", "notes.txt"))
	os.Remove(filepath.Join(root, "notes.txt"))
	rep = e.ingest(t, ingest.Options{}, root)
	if rep.Pruned != 0 {
		t.Errorf("pruned without --prune: %+v", rep)
	}
	rep = e.ingest(t, ingest.Options{Prune: true}, root)
	n1, _ := e.coll.Count(context.Background(), nil)
	if rep.Pruned != 1 || n1 != n0-nNotes || nNotes == 0 {
		t.Errorf("prune: %+v, %d → %d chunks (notes had %d)", rep, n0, n1, nNotes)
	}
	if n, _ := e.coll.Count(context.Background(), filter.Eq("sourceName", "notes.txt")); n != 0 {
		t.Error("pruned source still has chunks")
	}

	// New ingest settings re-ingest every source.
	rep = e.ingest(t, ingest.Options{Metadata: map[string]any{"team": "support"}}, root)
	if rep.Written != 10 {
		t.Errorf("changed --meta: %+v", rep)
	}
	got, _ := e.coll.Get(context.Background(), []string{hits[0].Doc.ID})
	_ = got
	res, _ := e.coll.Search(context.Background(), store.SearchRequest{Mode: store.ModeKeyword, Query: "widget", TopK: 1})
	if len(res) != 1 || res[0].Doc.Metadata["team"] != "support" || res[0].Doc.Metadata["title"] != "Widget" {
		t.Errorf("metadata on chunks: %+v", res)
	}
}

func TestFailuresKeepOldVersions(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, corpus())
	e := newEnv(t, t.TempDir())
	defer e.s.Close()
	e.ingest(t, ingest.Options{}, root)
	before := chunkSet(t, e.coll)

	// A file that becomes unreadable is reported and keeps its old chunks.
	writeTree(t, root, map[string]string{"data/items.json": `[{"id":"w1","name":`})
	rep := e.ingest(t, ingest.Options{}, root)
	if rep.Failed != 1 || len(rep.Errors) != 1 || !strings.Contains(rep.Errors[0], "items.json") {
		t.Errorf("bad file: %+v", rep)
	}
	if got := chunkSet(t, e.coll); !slices.Equal(got, before) {
		t.Error("a failed file lost its old version")
	}

	// An embedding failure stops the run and writes nothing of the group.
	writeTree(t, root, map[string]string{"notes.txt": "Fresh notes that mention the outage keyword."})
	e.emb.failOn = "outage"
	opt := ingest.Options{Collection: e.coll, Embedder: e.emb, Loader: load.New(load.Options{})}
	if _, err := ingest.Run(context.Background(), []string{root}, opt); err == nil {
		t.Fatal("embedding failure not reported")
	}
	if got := chunkSet(t, e.coll); !slices.Equal(got, before) {
		t.Error("an embedding failure changed the collection")
	}
	e.emb.failOn = ""
	rep = e.ingest(t, ingest.Options{}, root)
	if rep.Written != 1 {
		t.Errorf("re-run after the failure: %+v", rep)
	}
}

func TestModelMismatch(t *testing.T) {
	e := newEnv(t, t.TempDir())
	defer e.s.Close()
	other, _ := hash.New(hash.Config{Dimension: 64})
	_, err := ingest.Run(context.Background(), []string{t.TempDir()}, ingest.Options{Collection: e.coll, Embedder: other, Loader: load.New(load.Options{})})
	if !errors.Is(err, store.ErrModelMismatch) {
		t.Errorf("mismatched embedder: %v", err)
	}
}

// The crash test re-executes the test binary as an ingesting child that
// the parent kills with SIGKILL.
const childEnv = "QUARRY_INGEST_CHILD"

func TestMain(m *testing.M) {
	if v := os.Getenv(childEnv); v != "" {
		kb, root, _ := strings.Cut(v, "|")
		e, err := openEnv(kb)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		e.emb.Embedder = slowEmbedder{e.emb.Embedder}
		fmt.Println("ready")
		progress := func(ev ingest.Event) {
			if ev.Event == "progress" {
				fmt.Println("flushed", ev.Chunks)
			}
		}
		_, err = ingest.Run(context.Background(), []string{root}, ingest.Options{Collection: e.coll, Embedder: e.emb, Cache: e.b.EmbeddingCache(),
			Loader: load.New(load.Options{}), BatchSize: 4, Progress: progress})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		e.s.Close()
		fmt.Println("finished")
		return
	}
	os.Exit(m.Run())
}

// slowEmbedder makes a run last long enough to be killed in the middle.
type slowEmbedder struct{ embed.Embedder }

func (s slowEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	time.Sleep(2 * time.Millisecond)
	return s.Embedder.Embed(ctx, texts)
}

func TestKillDuringIngest(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	root := t.TempDir()
	files := corpus()
	for i := range 120 {
		files[fmt.Sprintf("bulk/doc-%03d.md", i)] = fmt.Sprintf("# Doc %d\n\nBody of document %d with enough words to be a chunk of its own.\n\n## Part\n\nMore words for document %d here.\n", i, i, i)
	}
	writeTree(t, root, files)

	clean := newEnv(t, t.TempDir())
	clean.ingest(t, ingest.Options{}, root)
	want := chunkSet(t, clean.coll)
	clean.s.Close()

	exe, _ := os.Executable()
	kb := t.TempDir()
	for run, flushes := range []int{1, 2, 3} {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+kb+"|"+root)
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		seen := 0
		for seen < flushes && sc.Scan() {
			if strings.HasPrefix(sc.Text(), "flushed") {
				seen++
			}
		}
		time.Sleep(time.Duration(run) * 3 * time.Millisecond) // sometimes inside the next write
		cmd.Process.Kill()
		go func() {
			for sc.Scan() {
			}
		}()
		cmd.Wait()
	}
	e := newEnv(t, kb)
	defer e.s.Close()
	partial, _ := e.coll.Sources(context.Background())
	t.Logf("after 3 kills: %d of %d sources written", len(partial), len(files))
	e.ingest(t, ingest.Options{}, root)
	if got := chunkSet(t, e.coll); !slices.Equal(got, want) {
		t.Errorf("after kills and a re-run: %d chunks, a clean run has %d", len(got), len(want))
	}
	srcs, _ := e.coll.Sources(context.Background())
	if len(srcs) != len(files) {
		t.Errorf("%d sources recorded, want %d", len(srcs), len(files))
	}
	_ = document.SourceFile
}

// TestPostgresManual ingests Debian's PostgreSQL manual (1,169 HTML pages)
// twice: the second run must make no embedding call and write nothing. The
// durations are logged, not asserted (see BenchmarkIngestPostgresDocs).
func TestPostgresManual(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("ingests a large corpus: skipped in -short and -race runs")
	}
	if _, err := os.Stat(pgDocs); err != nil {
		t.Skipf("%s not found (apt-get install postgresql-doc-15): skipped", pgDocs)
	}
	e := newEnv(t, t.TempDir())
	defer e.s.Close()
	first := e.ingest(t, ingest.Options{}, pgDocs)
	if first.Files < 1100 || first.Failed != 0 || first.Chunks < first.Files {
		t.Fatalf("first run: %+v", first)
	}
	e.emb.texts = 0
	second := e.ingest(t, ingest.Options{}, pgDocs)
	if second.Written != 0 || second.Skipped != first.Files || e.emb.texts != 0 || second.Embedded != 0 {
		t.Errorf("second run: %+v, %d texts embedded", second, e.emb.texts)
	}
	t.Logf("first run %v (%d files, %d chunks, %.0f chunks/s); second run %v (%.1f%% of the first)",
		first.Duration, first.Files, first.Chunks, first.ChunksPer, second.Duration, 100*second.Duration.Seconds()/first.Duration.Seconds())
}
