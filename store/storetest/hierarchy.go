package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/store"
)

// testHierarchy checks the knowledge hierarchy's rows: node ids assigned
// on insert and fields round-tripped, updates all or none, attachments one
// per chunk, links upserted by (from, to, type) and replaced by type,
// deleting nodes takes their attachments and links, collections isolated,
// and dropping a collection drops its hierarchy.
func testHierarchy(t *testing.T, s *store.Store) {
	hs, err := s.Hierarchy()
	if errors.Is(err, store.ErrUnsupported) {
		t.Skip("this store keeps no knowledge hierarchy")
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hs.Nodes(ctx(t), "nope"); !errors.Is(err, store.ErrCollectionNotFound) {
		t.Errorf("nodes of an unknown collection: %v", err)
	}
	mustCollection(t, s, "kb", 3)
	mustCollection(t, s, "other", 3)
	if ns, err := hs.Nodes(ctx(t), "kb"); err != nil || len(ns) != 0 {
		t.Fatalf("a new collection has nodes: %v %v", ns, err)
	}

	root := store.Node{Kind: store.NodeRoot, Name: "Root", Path: "/Root", Triggers: []string{}}
	got, err := hs.PutNodes(ctx(t), "kb", []store.Node{root})
	if err != nil || len(got) != 1 || got[0].ID <= 0 {
		t.Fatalf("insert root: %v %v", got, err)
	}
	root = got[0]
	kids, err := hs.PutNodes(ctx(t), "kb", []store.Node{
		{ParentID: root.ID, Kind: store.NodeFundamental, Name: "guides", Path: "/Root/guides", Folder: "guides", Triggers: []string{"refund", "café"}},
		{ParentID: root.ID, Kind: store.NodeFundamental, Name: "api", Path: "/Root/api", Folder: "api"},
	})
	if err != nil || len(kids) != 2 || kids[0].ID == kids[1].ID || kids[0].ID == root.ID {
		t.Fatalf("insert children: %v %v", kids, err)
	}
	guides, api := kids[0], kids[1]
	nodes, err := hs.Nodes(ctx(t), "kb")
	if err != nil || len(nodes) != 3 {
		t.Fatalf("nodes: %v %v", nodes, err)
	}
	api.Triggers = []string{} // nil is stored as no triggers
	for i, want := range []store.Node{root, guides, api} {
		if !reflect.DeepEqual(nodes[i], want) {
			t.Errorf("node %d: got %+v, want %+v", i, nodes[i], want)
		}
	}

	// An update naming an unknown node changes nothing.
	renamed := guides
	renamed.Name, renamed.Path = "howto", "/Root/howto"
	if _, err := hs.PutNodes(ctx(t), "kb", []store.Node{renamed, {ID: 1 << 40, Name: "ghost"}}); !errors.Is(err, store.ErrNodeNotFound) {
		t.Errorf("update of an unknown node: %v", err)
	}
	if nodes, _ := hs.Nodes(ctx(t), "kb"); nodes[1].Name != "guides" {
		t.Errorf("a failed update was half applied: %+v", nodes[1])
	}
	if _, err := hs.PutNodes(ctx(t), "kb", []store.Node{renamed}); err != nil {
		t.Fatal(err)
	}
	if nodes, _ := hs.Nodes(ctx(t), "kb"); nodes[1].Path != "/Root/howto" || len(nodes) != 3 {
		t.Errorf("update: %+v", nodes)
	}
	// A folder has one node: a second is refused, alone or in a batch.
	for _, batch := range [][]store.Node{
		{{ParentID: root.ID, Kind: store.NodeFundamental, Name: "again", Path: "/Root/again", Folder: "guides"}},
		{{ParentID: root.ID, Name: "n1", Path: "/Root/n1", Folder: "new"}, {ParentID: root.ID, Name: "n2", Path: "/Root/n2", Folder: "new"}},
		{{ID: api.ID, ParentID: root.ID, Kind: store.NodeFundamental, Name: "api", Path: "/Root/api", Folder: "guides"}},
		{{Kind: store.NodeRoot, Name: "Root", Path: "/Root"}},
	} {
		if _, err := hs.PutNodes(ctx(t), "kb", batch); !errors.Is(err, store.ErrFolderTaken) {
			t.Errorf("a second node for a folder: %v", err)
		}
	}
	if nodes, _ := hs.Nodes(ctx(t), "kb"); len(nodes) != 3 || nodes[2].Folder != "api" {
		t.Errorf("a refused batch was half applied: %+v", nodes)
	}

	// Writers racing for one folder: exactly one wins.
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins, taken := 0, 0
	for i := range 4 {
		wg.Go(func() {
			_, err := hs.PutNodes(ctx(t), "kb", []store.Node{{ParentID: root.ID, Kind: store.NodeFundamental, Name: fmt.Sprintf("race%d", i), Path: "/Root/race", Folder: "race"}})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, store.ErrFolderTaken):
				taken++
			default:
				t.Errorf("racing insert: %v", err)
			}
		})
	}
	wg.Wait()
	if wins != 1 || taken != 3 {
		t.Errorf("racing inserts: %d won, %d refused", wins, taken)
	}
	nodes, _ = hs.Nodes(ctx(t), "kb")
	if _, err := hs.DeleteNodes(ctx(t), "kb", []int64{nodes[len(nodes)-1].ID}); err != nil {
		t.Fatal(err)
	}

	// Attachments: one node per chunk, replaced by doc id, detached by id.
	src := document.Source{Type: document.SourceFile, Name: "guides/refunds.md"}
	if err := hs.Attach(ctx(t), "kb", []store.Attachment{
		{DocID: "c2", NodeID: guides.ID, Source: src, File: "/data/guides/refunds.md"},
		{DocID: "c1", NodeID: guides.ID, Source: src},
		{DocID: "c3", NodeID: api.ID, Source: document.Source{Type: "manual", Name: "manual"}},
	}, nil); err != nil {
		t.Fatal(err)
	}
	if err := hs.Attach(ctx(t), "kb", []store.Attachment{{DocID: "c1", NodeID: api.ID, Source: src}}, []string{"c3", "never"}); err != nil {
		t.Fatal(err)
	}
	atts, err := hs.Attachments(ctx(t), "kb")
	want := []store.Attachment{{DocID: "c1", NodeID: api.ID, Source: src}, {DocID: "c2", NodeID: guides.ID, Source: src, File: "/data/guides/refunds.md"}}
	if err != nil || !reflect.DeepEqual(atts, want) {
		t.Errorf("attachments: got %+v %v, want %+v", atts, err, want)
	}
	// A store that looks attachments up by document gives the same rows,
	// each once, in doc id order, skipping ids without one; more ids than
	// one query binds are fine.
	if af, ok := hs.(interface {
		AttachmentsOf(ctx context.Context, coll string, docIDs []string) ([]store.Attachment, error)
	}); ok {
		ids := []string{"c2", "nope", "c1", "c2"}
		for i := range 1200 {
			ids = append(ids, fmt.Sprintf("absent-%d", i))
		}
		got, err := af.AttachmentsOf(ctx(t), "kb", ids)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("attachments of %d ids: got %+v %v, want %+v", len(ids), got, err, want)
		}
		if got, err := af.AttachmentsOf(ctx(t), "kb", nil); err != nil || len(got) != 0 {
			t.Errorf("attachments of no ids: %+v %v", got, err)
		}
	}

	// Links: upsert by key (the seed's idempotent upsert_link), replace by type.
	if err := hs.PutLinks(ctx(t), "kb", []store.Link{
		{From: guides.ID, To: api.ID, Type: store.LinkTagOverlap, Weight: 0.3, Evidence: ""},
		{From: root.ID, To: api.ID, Type: store.LinkSemantic, Weight: 0.9, Evidence: "by hand"},
	}, nil); err != nil {
		t.Fatal(err)
	}
	if err := hs.PutLinks(ctx(t), "kb", []store.Link{{From: guides.ID, To: api.ID, Type: store.LinkTagOverlap, Weight: 0.7, Evidence: "updated"}}, nil); err != nil {
		t.Fatal(err)
	}
	links, err := hs.Links(ctx(t), "kb")
	wantLinks := []store.Link{
		{From: root.ID, To: api.ID, Type: store.LinkSemantic, Weight: 0.9, Evidence: "by hand"},
		{From: guides.ID, To: api.ID, Type: store.LinkTagOverlap, Weight: 0.7, Evidence: "updated"},
	}
	if err != nil || !reflect.DeepEqual(links, wantLinks) {
		t.Errorf("links: got %+v %v, want %+v", links, err, wantLinks)
	}
	rebuilt := []store.Link{{From: guides.ID, To: api.ID, Type: store.LinkCrossRef, Weight: 1, Evidence: "guides/refunds.md"}}
	for range 2 { // a rebuild is idempotent
		if err := hs.PutLinks(ctx(t), "kb", rebuilt, []string{store.LinkTagOverlap, store.LinkCrossRef}); err != nil {
			t.Fatal(err)
		}
	}
	links, _ = hs.Links(ctx(t), "kb")
	if len(links) != 2 || links[0].Type != store.LinkSemantic || links[1] != rebuilt[0] {
		t.Errorf("links after a rebuild: %+v", links)
	}

	// Collections are isolated.
	if ns, _ := hs.Nodes(ctx(t), "other"); len(ns) != 0 {
		t.Errorf("nodes leaked into another collection: %v", ns)
	}
	if n, err := hs.DeleteNodes(ctx(t), "other", []int64{api.ID}); err != nil || n != 0 {
		t.Errorf("deleting another collection's node: %d %v", n, err)
	}

	// Deleting a node takes its attachments and links; unknown ids count 0.
	n, err := hs.DeleteNodes(ctx(t), "kb", []int64{api.ID, 1 << 40})
	if err != nil || n != 1 {
		t.Fatalf("delete: %d %v", n, err)
	}
	atts, _ = hs.Attachments(ctx(t), "kb")
	links, _ = hs.Links(ctx(t), "kb")
	nodes, _ = hs.Nodes(ctx(t), "kb")
	if len(nodes) != 2 || len(atts) != 1 || atts[0].DocID != "c2" || len(links) != 0 {
		t.Errorf("after delete: nodes %+v, attachments %+v, links %+v", nodes, atts, links)
	}
	// A new node never takes a deleted node's id.
	again, err := hs.PutNodes(ctx(t), "kb", []store.Node{{ParentID: root.ID, Kind: store.NodeFundamental, Name: "api", Path: "/Root/api"}})
	if err != nil || again[0].ID == api.ID {
		t.Errorf("reinsert: %v %v (old id %d)", again, err, api.ID)
	}

	// Dropping the collection drops its hierarchy.
	if err := s.DropCollection(ctx(t), "kb"); err != nil {
		t.Fatal(err)
	}
	mustCollection(t, s, "kb", 3)
	nodes, _ = hs.Nodes(ctx(t), "kb")
	atts, _ = hs.Attachments(ctx(t), "kb")
	if len(nodes) != 0 || len(atts) != 0 {
		t.Errorf("a recreated collection inherited %d nodes and %d attachments", len(nodes), len(atts))
	}
}
