package quarry_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/hierarchy"
	"github.com/quarry-rag/quarry/quarrytest"
)

func TestImport(t *testing.T) {
	ctx := context.Background()
	kb := quarrytest.NewKB(t)
	read := func() *quarry.ImportFile {
		f, err := os.Open("testdata/import.yaml")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		imp, err := quarry.ParseImport(f)
		if err != nil {
			t.Fatal(err)
		}
		return imp
	}
	for run, want := range []quarry.ImportReport{
		{Collection: "vault", Nodes: 3, Created: 4, Chunks: 3, Written: 3}, // the root too
		{Collection: "vault", Nodes: 3, Created: 0, Chunks: 3, Written: 0}, // nothing embedded again
	} {
		rep, err := kb.Import(ctx, quarry.Developer(), "", read())
		if err != nil {
			t.Fatal(err)
		}
		if *rep != want {
			t.Errorf("import %d: %+v, want %+v", run+1, *rep, want)
		}
	}
	c := kb.Collection("vault")
	if n, err := c.Count(ctx, nil); err != nil || n != 3 {
		t.Errorf("the collection holds %d chunks after two imports (%v), want 3", n, err)
	}
	tree, err := c.Tree(ctx)
	if err != nil || tree == nil {
		t.Fatal(tree, err)
	}
	var paths []string
	var walk func(n *hierarchyNode)
	walk = func(n *hierarchyNode) {
		paths = append(paths, n.Path+"="+strings.Join(n.Triggers, ","))
		for _, k := range n.Children {
			walk(k)
		}
	}
	walk(tree)
	if got := strings.Join(paths, " "); !strings.Contains(got, "/Root/Billing=invoice,refund") || !strings.Contains(got, "/Root/Billing/Gift cards=gift card") || !strings.Contains(got, "/Root/Shipping=parcel") {
		t.Errorf("tree %s", got)
	}
	// A trigger leads to its node's chunks; tags reached the metadata.
	res, err := c.Search(ctx, "gift card", quarry.Mode("auto"))
	if err != nil || res.Trigger == nil || res.Trigger.Path != "/Root/Billing/Gift cards" || len(res.Results) == 0 {
		t.Fatalf("auto search for a trigger: %+v, %v", res, err)
	}
	res, err = c.Search(ctx, "refunds", quarry.Mode("keyword"), quarry.Where(filter.Eq("sourceName", "billing/refunds")))
	if err != nil || len(res.Results) != 1 || res.Results[0].Metadata["team"] != "billing" || len(res.Results[0].Metadata["tags"].([]any)) != 1 {
		t.Errorf("an imported chunk: %+v, %v", res, err)
	}
}

// hierarchyNode is the tree's node type, named for the walk above.
type hierarchyNode = hierarchy.TreeNode

func TestImportRefuses(t *testing.T) {
	ctx := context.Background()
	kb := quarrytest.NewKB(t)
	for _, bad := range []string{
		"nodes:\n  - name: A\n    trigers: [x]\n",               // a typo
		"nodes:\n  - type: fundamental\n",                       // no name
		"nodes:\n  - name: A\n    chunks:\n      - source: x\n", // a chunk without text
		"nodes: [", // not YAML
		`{"nodes": [{"name": "A", "trigers": ["x"]}]}`, // a typo, in JSON
		`{"nodes": [{"name": "A"}`,                     // not JSON
	} {
		if _, err := quarry.ParseImport(strings.NewReader(bad)); !errors.Is(err, quarry.ErrInvalid) {
			t.Errorf("ParseImport(%q): %v, want ErrInvalid", bad, err)
		}
	}
	// A program's JSON reads as the YAML does.
	js, err := quarry.ParseImport(strings.NewReader(`{"collection": "vault", "nodes": [{"name": "Billing", "triggers": ["invoice"], "chunks": [{"text": "Refunds take fourteen days."}]}]}`))
	if err != nil || js.Collection != "vault" || len(js.Nodes) != 1 || js.Nodes[0].Chunks[0].Text != "Refunds take fourteen days." {
		t.Errorf("JSON import file: %+v, %v", js, err)
	}
	// A key misspelt on every node is reported a few times, not 10,000.
	var many strings.Builder
	many.WriteString("nodes:\n")
	for range 10000 {
		many.WriteString("  - name: A\n    trigers: [x]\n")
	}
	if _, err := quarry.ParseImport(strings.NewReader(many.String())); err == nil || len(err.Error()) > 1000 || !strings.Contains(err.Error(), "and 9995 more") {
		t.Errorf("10,000 misspelt keys: %.300v (%d bytes)", err, len(fmt.Sprint(err)))
	}
	imp, err := quarry.ParseImport(strings.NewReader("nodes:\n  - name: Deep\n    type: specialization\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kb.Import(ctx, quarry.Developer(), "", imp); !errors.Is(err, quarry.ErrInvalid) {
		t.Errorf("a specialization under the root: %v, want ErrInvalid", err)
	}
	for _, sc := range []quarry.Scope{{ReadOnly: true}, {Filter: filter.Eq("sourceName", "x")}} {
		if _, err := kb.Import(ctx, sc, "", &quarry.ImportFile{}); !errors.Is(err, quarry.ErrForbidden) {
			t.Errorf("import under %+v: %v, want ErrForbidden", sc, err)
		}
	}
}
