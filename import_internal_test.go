package quarry

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/hierarchy"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/store"
)

// crashFile is an import of three levels and importBatch+600 chunks, so
// its chunks take two batches: 40 fundamentals, 10 specializations under
// each, 6 leaves under each of those with one chunk, and one more chunk on
// every specialization.
func crashFile() *ImportFile {
	f := &ImportFile{Collection: "vault"}
	words := []string{"refund", "invoice", "parcel", "voucher", "ledger", "tariff", "courier", "receipt"}
	for a := range 40 {
		top := fmt.Sprintf("Area %d", a)
		f.Nodes = append(f.Nodes, ImportNode{Name: top, Triggers: []string{words[a%len(words)]}})
		for b := range 10 {
			mid := fmt.Sprintf("Topic %d.%d", a, b)
			f.Nodes = append(f.Nodes, ImportNode{Name: mid, Parent: top, Tags: []string{"t" + strconv.Itoa(b)},
				Chunks: []ImportChunk{{Text: fmt.Sprintf("Overview of %s: how a %s is handled.", mid, words[b%len(words)])}}})
			for c := range 6 {
				// Leaves share names across topics, so some are qualified.
				f.Nodes = append(f.Nodes, ImportNode{Name: fmt.Sprintf("Case %d", c), Parent: "/Root/" + top + "/" + mid,
					Chunks: []ImportChunk{{Text: fmt.Sprintf("Case %d of %s: the %s is checked, then filed.", c, mid, words[(b+c)%len(words)])}}})
			}
		}
	}
	return f
}

// TestImportCrashChild is the process TestImportCrashResumes kills: it
// imports crashFile into QUARRY_IMPORT_CRASH_KB and kills itself, without
// any cleanup, after batch QUARRY_IMPORT_CRASH_AT of chunks is stored.
func TestImportCrashChild(t *testing.T) {
	dir, at := os.Getenv("QUARRY_IMPORT_CRASH_KB"), os.Getenv("QUARRY_IMPORT_CRASH_AT")
	if dir == "" {
		t.Skip("run by TestImportCrashResumes")
	}
	stop, _ := strconv.Atoi(at)
	kb, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	batches := 0
	_, err = kb.importFile(context.Background(), Developer(), "", crashFile(), func(r ImportReport) {
		if r.Nodes == 0 { // a batch of chunks was stored
			batches++
			fmt.Printf("batch %d stored\n", batches)
			if batches == stop {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
		}
	})
	t.Fatalf("the import ended (%v) before batch %d", err, stop)
}

// importState is what an import leaves: every chunk's text and node path
// by id, every node's triggers by path, and the links.
type importState struct {
	Chunks map[string]string
	Placed map[string]string
	Nodes  map[string][]string
	Links  int
}

func stateOf(t *testing.T, kb *KB) importState {
	t.Helper()
	ctx := context.Background()
	c, err := kb.collection(ctx, Developer(), "vault", false)
	if err != nil {
		t.Fatal(err)
	}
	st := importState{Chunks: map[string]string{}, Placed: map[string]string{}, Nodes: map[string][]string{}}
	if err := c.Scan(ctx, 500, func(docs []*document.Document) error {
		for _, d := range docs {
			st.Chunks[d.ID] = d.Content
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	h, err := hierarchy.Open(c)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := h.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	path := map[int64]string{}
	for _, n := range nodes {
		path[n.ID] = n.Path
		st.Nodes[n.Path] = n.Triggers
	}
	hs, _ := c.Store().Hierarchy()
	atts, err := hs.Attachments(ctx, "vault")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range atts {
		st.Placed[a.DocID] = path[a.NodeID]
	}
	links, err := hs.Links(ctx, "vault")
	if err != nil {
		t.Fatal(err)
	}
	st.Links = len(links)
	return st
}

// TestImportCrashResumes kills an import's process after its first batch
// of chunks is stored, and again after its last (before any node is
// written), then imports the same file again: the knowledge base ends as
// one uninterrupted import leaves it, and the second run embeds only the
// chunks the first did not store.
func TestImportCrashResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	ctx := context.Background()
	f := crashFile()
	total := 0
	for _, n := range f.Nodes {
		total += len(n.Chunks)
	}
	if total <= importBatch || total > 2*importBatch {
		t.Fatalf("the file has %d chunks: want two batches of %d", total, importBatch)
	}

	clean, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer clean.Close()
	if _, err := clean.Import(ctx, Developer(), "", crashFile()); err != nil {
		t.Fatal(err)
	}
	want := stateOf(t, clean)
	if len(want.Chunks) != total || len(want.Placed) != total || want.Links == 0 {
		t.Fatalf("a clean import left %d chunks, %d placed, %d links; want %d, %d and some", len(want.Chunks), len(want.Placed), want.Links, total, total)
	}

	for _, at := range []int{1, 2} {
		t.Run(fmt.Sprintf("killed after batch %d", at), func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestImportCrashChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), "QUARRY_IMPORT_CRASH_KB="+dir, "QUARRY_IMPORT_CRASH_AT="+strconv.Itoa(at))
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var lines []string
			for sc := bufio.NewScanner(out); sc.Scan(); {
				lines = append(lines, sc.Text())
			}
			err = cmd.Wait()
			if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("the import process ended with %v, not killed; it printed %q", err, lines)
			}
			if !slices.Contains(lines, fmt.Sprintf("batch %d stored", at)) {
				t.Fatalf("killed before batch %d: %q", at, lines)
			}

			kb, err := Open(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			defer kb.Close()
			cut := stateOf(t, kb)
			if len(cut.Chunks) != min(at*importBatch, total) || len(cut.Placed) != 0 {
				t.Fatalf("after the crash: %d chunks, %d placed; want %d and none", len(cut.Chunks), len(cut.Placed), min(at*importBatch, total))
			}
			rep, err := kb.Import(ctx, Developer(), "", crashFile())
			if err != nil {
				t.Fatal(err)
			}
			if rep.Written != total-len(cut.Chunks) {
				t.Errorf("the second run embedded %d chunks, want the %d missing", rep.Written, total-len(cut.Chunks))
			}
			if got := stateOf(t, kb); !reflect.DeepEqual(got, want) {
				t.Errorf("after the second run: %d chunks, %d placed, %d nodes, %d links; one uninterrupted import: %d, %d, %d, %d",
					len(got.Chunks), len(got.Placed), len(got.Nodes), got.Links, len(want.Chunks), len(want.Placed), len(want.Nodes), want.Links)
			}
		})
	}
}

// TestOneImportJobAtATime: while a background import holds its file, a
// second is refused as a conflict, and one may start once it ends.
func TestOneImportJobAtATime(t *testing.T) {
	ctx := context.Background()
	kb, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer kb.Close()
	jobs := ingest.NewJobs()
	defer jobs.Close()
	small := func() *ImportFile {
		return &ImportFile{Nodes: []ImportNode{{Name: "Billing", Chunks: []ImportChunk{{Text: "Refunds take fourteen days."}}}}}
	}
	kb.importing.Lock()
	_, err = kb.StartImport(ctx, Developer(), "", small(), jobs)
	if !errors.Is(err, ErrImportRunning) || Fail(ctx, nil, err).Code != CodeConflict {
		t.Fatalf("a second import: %v, want ErrImportRunning (conflict)", err)
	}
	kb.importing.Unlock()
	st, err := kb.StartImport(ctx, Developer(), "", small(), jobs)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := kb.store.Jobs()
	for {
		j, err := js.GetJob(ctx, st.ID)
		if err != nil {
			t.Fatal(err)
		}
		if j.State != store.JobRunning {
			if j.State != store.JobDone || j.Kind != ImportJobKind || j.Nodes != 1 || j.Chunks != 1 || j.Total != 1 {
				t.Fatalf("job: %+v", j)
			}
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !kb.importing.TryLock() {
		t.Fatal("the import's hold outlived its job")
	}
	kb.importing.Unlock()
}
