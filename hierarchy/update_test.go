package hierarchy_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/hierarchy"
	"github.com/quarry-rag/quarry/store"
)

// snapshot is a hierarchy as paths: each node's kind, folder and
// triggers, and each attachment's node path, file and source.
func snapshot(t *testing.T, c *store.Collection) []string {
	t.Helper()
	hs, err := c.Store().Hierarchy()
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := hs.Nodes(t.Context(), c.Name())
	if err != nil {
		t.Fatal(err)
	}
	pathOf := map[int64]string{}
	var out []string
	for _, n := range nodes {
		pathOf[n.ID] = n.Path
		out = append(out, fmt.Sprintf("node %s %s %q %v", n.Path, n.Kind, n.Folder, n.Triggers))
	}
	atts, err := hs.Attachments(t.Context(), c.Name())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range atts {
		out = append(out, fmt.Sprintf("att %s → %s %q %s/%s", a.DocID, pathOf[a.NodeID], a.File, a.Source.Type, a.Source.Name))
	}
	slices.Sort(out)
	return out
}

// TestUpdateIsBuild: after an ingestion that adds, rewrites, empties and
// deletes sources (and adds a chunk that is not a file's), Update over what
// it changed leaves the hierarchy Build leaves, hand-placed chunks and a
// hand-made node's triggers included.
func TestUpdateIsBuild(t *testing.T) {
	ctx := t.Context()
	first := []store.SourceUpdate{
		{Source: document.Source{Type: document.SourceFile, Name: "api/auth.md"}, Hash: "1", Docs: []*document.Document{
			chunk("api/auth.md", 0, "func Login() checks the password", "Auth", "Login"),
			chunk("api/auth.md", 1, "func Logout() ends the session", "Auth", "Logout"),
		}},
		{Source: document.Source{Type: document.SourceFile, Name: "api/billing.md"}, Hash: "1", Docs: []*document.Document{
			chunk("api/billing.md", 0, "type Invoice struct holds lines", "Billing", "Invoices"),
		}},
		{Source: document.Source{Type: document.SourceFile, Name: "guides/start.md"}, Hash: "1", Docs: []*document.Document{
			chunk("guides/start.md", 0, "Install the tool and run it", "Getting started"),
			chunk("guides/start.md", 1, "Configure the billing account", "Getting started", "Billing"),
		}},
		{Source: document.Source{Type: document.SourceFile, Name: "guides/old.md"}, Hash: "1", Docs: []*document.Document{
			chunk("guides/old.md", 0, "An old page about refunds", "Refunds"),
		}},
		{Source: document.Source{Type: document.SourceFile, Name: "README.md"}, Hash: "1", Docs: []*document.Document{
			chunk("README.md", 0, "What this project is", "Overview"),
		}},
	}
	firstFiles := map[string]string{"api/auth.md": "/docs/api/auth.md", "api/billing.md": "/docs/api/billing.md",
		"guides/start.md": "/docs/guides/start.md", "guides/old.md": "/docs/guides/old.md", "README.md": "/docs/README.md"}
	note := document.New("A note someone added by hand")
	note.SourceType, note.SourceName = document.SourceManual, "note-1"
	note.ID = document.ChunkID(note.SourceType, "note-1", 0, note.Content)
	note.Embedding = []float32{1, 2, 3}
	second := []store.SourceUpdate{
		// rewritten: one chunk kept, one changed, one added
		{Source: document.Source{Type: document.SourceFile, Name: "api/auth.md"}, Hash: "2", Docs: []*document.Document{
			chunk("api/auth.md", 0, "func Login() checks the password", "Auth", "Login"),
			chunk("api/auth.md", 1, "func Logout() ends every session", "Auth", "Logout"),
			chunk("api/auth.md", 2, "func Refresh() renews a token", "Auth", "Tokens"),
		}},
		// new, in a new folder two levels down
		{Source: document.Source{Type: document.SourceFile, Name: "api/v2/orders.md"}, Hash: "1", Docs: []*document.Document{
			chunk("api/v2/orders.md", 0, "type Order struct lists items", "Orders"),
		}},
		// emptied, and deleted
		{Source: document.Source{Type: document.SourceFile, Name: "guides/start.md"}, Hash: "2"},
		{Source: document.Source{Type: document.SourceFile, Name: "guides/old.md"}},
		// not a file: under the root
		{Source: document.Source{Type: document.SourceManual, Name: "note-1"}, Hash: "1", Docs: []*document.Document{note}},
	}
	secondFiles := map[string]string{"api/auth.md": "/docs/api/auth.md", "api/v2/orders.md": "/docs/api/v2/orders.md",
		"guides/start.md": "/docs/guides/start.md", "api/billing.md": "/docs/api/billing.md", "README.md": "/docs/README.md"}

	var snaps [2][]string
	for i, update := range []bool{false, true} {
		c := newColl(t)
		h := open(t, c)
		if err := c.ReplaceSources(ctx, first); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Build(ctx, firstFiles); err != nil {
			t.Fatal(err)
		}
		// A hand-made node holding a chunk placed by hand.
		if _, err := h.AddNode(ctx, "/Root", "Security", []string{"security"}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.AttachChunks(ctx, "/Root/Security", []string{first[0].Docs[0].ID}); err != nil {
			t.Fatal(err)
		}
		if err := c.ReplaceSources(ctx, second); err != nil {
			t.Fatal(err)
		}
		var err error
		if update {
			ch := hierarchy.Changes{}
			for _, u := range second {
				ch.Sources = append(ch.Sources, u.Source)
				for _, d := range u.Docs {
					ch.Chunks = append(ch.Chunks, d.ID)
				}
			}
			_, err = h.Update(ctx, secondFiles, ch)
		} else {
			_, err = h.Build(ctx, secondFiles)
		}
		if err != nil {
			t.Fatal(err)
		}
		snaps[i] = snapshot(t, c)
	}
	if !slices.Equal(snaps[0], snaps[1]) {
		t.Errorf("Update differs from Build:\nBuild:\n%s\nUpdate:\n%s", strings.Join(snaps[0], "\n"), strings.Join(snaps[1], "\n"))
	}
	if len(snaps[0]) < 12 {
		t.Errorf("the hierarchy is smaller than the test means it to be:\n%s", strings.Join(snaps[0], "\n"))
	}
}
