package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/embedded"
	"github.com/quarry-rag/quarry/store/memory"
	"github.com/quarry-rag/quarry/store/storetest"
)

func TestCopyCollection(t *testing.T) {
	ctx := context.Background()
	b, err := embedded.Open(ctx, t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	src := store.New(b)
	defer src.Close()
	c, err := src.CreateCollection(ctx, store.CollectionConfig{Name: "docs", Schema: storetest.Schema(), Model: storetest.Model(2)})
	if err != nil {
		t.Fatal(err)
	}
	var updates []store.SourceUpdate
	for s := range 30 {
		name := fmt.Sprintf("file-%02d.md", s)
		var docs []*document.Document
		for i := range s % 4 {
			content := fmt.Sprintf("%s part %d", name, i)
			d := document.New(content)
			d.ID = document.ChunkID("file", name, i, content)
			d.SourceType, d.SourceName = "file", name
			d.Embedding = []float32{1, float32(s)}
			d.Metadata = map[string]any{"tenant": "acme", "year": int64(2000 + s)}
			docs = append(docs, d)
		}
		updates = append(updates, store.SourceUpdate{Source: document.Source{Type: "file", Name: name}, Hash: fmt.Sprintf("h%d", s), Docs: docs})
	}
	if err := c.ReplaceSources(ctx, updates); err != nil {
		t.Fatal(err)
	}
	manual := document.New("added by hand")
	manual.Embedding = []float32{0, 1}
	manual.Metadata = map[string]any{"tenant": "other"}
	if err := c.Upsert(ctx, []*document.Document{manual}); err != nil {
		t.Fatal(err)
	}
	dst := store.New(memory.New())
	defer dst.Close()
	// Interrupted after some sources: the run that follows skips them.
	cancelAt := 10
	cctx, cancel := context.WithCancel(ctx)
	_, err = store.CopyCollection(cctx, c, dst, store.CopyOptions{Progress: func(p store.CopyProgress) {
		if cancelAt--; cancelAt == 0 {
			cancel()
		}
	}})
	cancel()
	if err == nil {
		t.Fatal("a cancelled copy reported success")
	}
	var last store.CopyProgress
	rep, err := store.CopyCollection(ctx, c, dst, store.CopyOptions{Progress: func(p store.CopyProgress) { last = p }})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Skipped == 0 || rep.Sources+rep.Skipped != 30 || rep.Documents >= 44 {
		t.Errorf("resumed copy %+v: want some of the 30 sources skipped", rep)
	}
	if last.Done != 44 || last.Total != 44 {
		t.Errorf("last progress %+v, want 44 of 44", last)
	}
	rep, err = store.CopyCollection(ctx, c, dst, store.CopyOptions{}) // a third run writes only the untracked document
	if err != nil {
		t.Fatal(err)
	}
	if rep.Skipped != 30 || rep.Sources != 0 || rep.Documents != 1 {
		t.Errorf("repeated copy %+v", rep)
	}
	d, _ := dst.Collection(ctx, "docs")
	srcStates, _ := c.Sources(ctx)
	dstStates, _ := d.Sources(ctx)
	if fmt.Sprint(srcStates) != fmt.Sprint(dstStates) {
		t.Errorf("sources differ:\n%v\n%v", srcStates, dstStates)
	}
	for _, f := range []filter.Expr{nil, filter.Gte("year", 2020), filter.Eq("tenant", "other")} {
		a, _ := c.Count(ctx, f)
		z, _ := d.Count(ctx, f)
		if a != z {
			t.Errorf("count %v: %d vs %d", f, a, z)
		}
	}
	got, _ := d.Get(ctx, []string{manual.ID})
	if len(got) != 1 || got[0].Content != "added by hand" {
		t.Errorf("manual document: %v", got)
	}
	other := store.New(memory.New())
	defer other.Close()
	if _, err := other.CreateCollection(ctx, store.CollectionConfig{Name: "docs", Model: storetest.Model(3)}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.CopyCollection(ctx, c, other, store.CopyOptions{}); err == nil {
		t.Error("copied into a collection with another model")
	}
}

// TestCopyKeepsTheHierarchy copies nodes (one whose parent has a later
// id), attachments and links, and checks a second copy updates them
// instead of adding them again; jobs are copied by id.
func TestCopyKeepsTheHierarchy(t *testing.T) {
	ctx := context.Background()
	b, err := embedded.Open(ctx, t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	src := store.New(b)
	defer src.Close()
	c, err := src.CreateCollection(ctx, store.CollectionConfig{Name: "docs", Model: storetest.Model(2)})
	if err != nil {
		t.Fatal(err)
	}
	d := document.New("a chunk under b")
	d.ID, d.Embedding = "d1", []float32{1, 0}
	if err := c.Upsert(ctx, []*document.Document{d}); err != nil {
		t.Fatal(err)
	}
	hs, err := src.Hierarchy()
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := hs.PutNodes(ctx, "docs", []store.Node{
		{Kind: store.NodeRoot, Name: "Root", Path: "/Root"},
	})
	if err != nil {
		t.Fatal(err)
	}
	root := nodes[0].ID
	nodes, err = hs.PutNodes(ctx, "docs", []store.Node{
		{ParentID: root, Kind: store.NodeFundamental, Name: "a", Path: "/Root/b/a", Triggers: []string{"alpha"}},
		{ParentID: root, Kind: store.NodeFundamental, Name: "b", Path: "/Root/b", Triggers: []string{"beta"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	a, bn := nodes[0], nodes[1]
	a.ParentID, a.Kind = bn.ID, store.NodeSpecialization // a's parent has the later id
	if _, err := hs.PutNodes(ctx, "docs", []store.Node{a}); err != nil {
		t.Fatal(err)
	}
	if err := hs.Attach(ctx, "docs", []store.Attachment{{DocID: "d1", NodeID: a.ID, Source: document.Source{Type: "manual", Name: d.SourceName}}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := hs.PutLinks(ctx, "docs", []store.Link{{From: a.ID, To: bn.ID, Type: store.LinkSemantic, Weight: 0.5, Evidence: "by hand"}}, nil); err != nil {
		t.Fatal(err)
	}
	js, err := src.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	if err := js.PutJob(ctx, store.Job{ID: "job-1", Kind: "ingest", Collection: "docs", State: store.JobDone}); err != nil {
		t.Fatal(err)
	}

	ts, err := src.Threads()
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.AppendTurns(ctx, "t-1", []store.Turn{{Role: "user", Content: "What is a refund?"}, {Role: "assistant", Content: "Money back."}}); err != nil {
		t.Fatal(err)
	}
	dst := store.New(memory.New())
	defer dst.Close()
	for run := range 2 {
		if n, err := store.CopyThreads(ctx, src, dst); err != nil || n != 1-run {
			t.Errorf("copy threads %d: %d, %v", run, n, err)
		}
		rep, err := store.CopyCollection(ctx, c, dst, store.CopyOptions{})
		if err != nil {
			t.Fatalf("copy %d: %v", run, err)
		}
		if rep.Nodes != 3 || rep.Attachments != 1 || rep.Links != 1 {
			t.Errorf("copy %d: %+v", run, rep)
		}
		if n, err := store.CopyJobs(ctx, src, dst, 0); err != nil || n != 1 {
			t.Errorf("copy jobs %d: %d, %v", run, n, err)
		}
	}
	dh, _ := dst.Hierarchy()
	got, err := dh.Nodes(ctx, "docs")
	if err != nil || len(got) != 3 {
		t.Fatalf("target nodes: %v %v", got, err)
	}
	byPath := map[string]store.Node{}
	for _, n := range got {
		byPath[n.Path] = n
	}
	ga, gb := byPath["/Root/b/a"], byPath["/Root/b"]
	if ga.ParentID != gb.ID || gb.ParentID != byPath["/Root"].ID || fmt.Sprint(ga.Triggers) != "[alpha]" {
		t.Errorf("target tree: %+v", got)
	}
	atts, _ := dh.Attachments(ctx, "docs")
	links, _ := dh.Links(ctx, "docs")
	if len(atts) != 1 || atts[0].NodeID != ga.ID || len(links) != 1 || links[0].From != ga.ID || links[0].To != gb.ID || links[0].Evidence != "by hand" {
		t.Errorf("target attachments %+v, links %+v", atts, links)
	}
	dts, _ := dst.Threads()
	if turns, err := dts.Turns(ctx, "t-1", 0); err != nil || len(turns) != 2 || turns[1].Content != "Money back." {
		t.Errorf("target thread: %+v, %v", turns, err)
	}
	djs, _ := dst.Jobs()
	if j, err := djs.GetJob(ctx, "job-1"); err != nil || j.State != store.JobDone {
		t.Errorf("target job: %+v, %v", j, err)
	}
}

// backendOnly is a store that keeps no collection settings: only the
// Backend methods show through.
type backendOnly struct{ store.Backend }

// TestCopyKeepsSettings checks a copy carries the collection's settings
// (its calibration), and counts those a target without settings cannot
// take instead of dropping them unseen.
func TestCopyKeepsSettings(t *testing.T) {
	ctx := context.Background()
	b, err := embedded.Open(ctx, t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	src := store.New(b)
	defer src.Close()
	c, err := src.CreateCollection(ctx, store.CollectionConfig{Name: "docs", Model: storetest.Model(2)})
	if err != nil {
		t.Fatal(err)
	}
	d := document.New("a chunk")
	d.ID, d.Embedding = "d1", []float32{1, 0}
	if err := c.Upsert(ctx, []*document.Document{d}); err != nil {
		t.Fatal(err)
	}
	if err := c.PutSetting(ctx, "calibration", json.RawMessage(`{"choice":{"name":"hybrid-convex-0.1"}}`)); err != nil {
		t.Fatal(err)
	}
	dst := store.New(memory.New())
	defer dst.Close()
	rep, err := store.CopyCollection(ctx, c, dst, store.CopyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	copied, err := dst.Collection(ctx, "docs")
	if err != nil {
		t.Fatal(err)
	}
	got, err := copied.Setting(ctx, "calibration")
	if err != nil || rep.Settings != 1 || string(got) != `{"choice":{"name":"hybrid-convex-0.1"}}` {
		t.Errorf("copied %d settings: %s, %v", rep.Settings, got, err)
	}
	bare := store.New(backendOnly{memory.New()})
	defer bare.Close()
	rep, err = store.CopyCollection(ctx, c, bare, store.CopyOptions{})
	if err != nil || rep.Settings != 0 || rep.SettingsLeft != 1 {
		t.Errorf("to a store without settings: %+v, %v", rep, err)
	}
}
