package quarry_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/quarrytest"
)

func TestObjects(t *testing.T) {
	ctx := context.Background()
	kb := quarrytest.NewKB(t)
	put := func(data string) *quarry.ObjectsResult {
		t.Helper()
		res, err := kb.PutObjects(ctx, quarry.Developer(), "", []byte(data))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := put(`[{"id": "p-1", "title": "Kettle", "price": 30, "@self": {"register": "shop", "schema": "product"}},
		{"@self": {"id": "p-2"}, "name": "Toaster", "price": 45}]`)
	if len(res.Objects) != 2 || res.Objects[0] != "p-1" || res.Objects[1] != "p-2" {
		t.Fatalf("put: %+v", res)
	}
	// Putting p-1 again replaces it.
	put(`{"id": "p-1", "title": "Kettle", "price": 25, "@self": {"register": "shop", "schema": "product"}}`)
	c := kb.Collection("")
	if n, _ := c.Count(ctx, nil); n != 2 {
		t.Errorf("%d passages after replacing an object, want 2", n)
	}
	hits, err := c.Search(ctx, "kettle price", quarry.Mode("keyword"), quarry.Where(filter.Eq("sourceType", "object")))
	if err != nil || len(hits.Results) == 0 {
		t.Fatal(hits, err)
	}
	h := hits.Results[0]
	if h.SourceType != "object" || h.Source != "p-1" || h.Metadata["register"] != "shop" || h.Metadata["title"] != "Kettle" || h.Text != "id: p-1\ntitle: Kettle\nprice: 25\n" {
		t.Errorf("object passage %+v", h)
	}
	if n, err := kb.DeleteObject(ctx, quarry.Developer(), "", "p-2"); err != nil || n != 1 {
		t.Errorf("delete p-2: %d, %v", n, err)
	}
	for _, bad := range []string{`"text"`, `[]`, `[{"id":"x"},{"id":"x"}]`, `{`} {
		if _, err := kb.PutObjects(ctx, quarry.Developer(), "", []byte(bad)); !errors.Is(err, quarry.ErrInvalid) {
			t.Errorf("put %s: %v, want ErrInvalid", bad, err)
		}
	}
	if _, err := kb.PutObjects(ctx, quarry.Scope{ReadOnly: true}, "", []byte(`{"id":"y"}`)); !errors.Is(err, quarry.ErrForbidden) {
		t.Errorf("a read-only put: %v", err)
	}
}

// TestJSONFileObjects: ingested JSON files give passages of source type
// object, placed under their folder's node in the hierarchy; an object put
// through the API cannot take a JSON file's name.
func TestJSONFileObjects(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	kb, err := quarry.Open(ctx, dir, quarry.Create())
	if err != nil {
		t.Fatal(err)
	}
	defer kb.Close()
	docs := t.TempDir()
	if err := os.MkdirAll(filepath.Join(docs, "catalog"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(docs, "catalog", "products.json"), []byte(`[{"id": "p-1", "title": "Kettle", "price": 30}, {"id": "p-2", "title": "Toaster", "price": 45}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := kb.Ingest(ctx, quarry.Developer(), quarry.IngestRequest{Paths: []string{docs}}); err != nil {
		t.Fatal(err)
	}
	res, err := kb.Search(ctx, quarry.Developer(), quarry.SearchRequest{Query: "kettle price", Mode: "keyword"})
	if err != nil || len(res.Results) == 0 {
		t.Fatal(res, err)
	}
	if p := res.Results[0]; p.SourceType != "object" || p.Source != "catalog/products.json" || p.Metadata["object_id"] != "p-1" {
		t.Errorf("a JSON file's object: %+v", p)
	}
	tree, err := kb.Tree(ctx, quarry.Developer(), "")
	if err != nil {
		t.Fatal(err)
	}
	placed := false
	for _, n := range tree.Children {
		if n.Name == "catalog" && n.Chunks == 2 {
			placed = true
		}
	}
	if !placed || tree.Chunks != 0 {
		t.Errorf("the objects hang under their folder's node: root %d chunks, children %+v", tree.Chunks, tree.Children)
	}
	if _, err := kb.PutObjects(ctx, quarry.Developer(), "", []byte(`{"id": "catalog/products.json", "title": "Impostor"}`)); !errors.Is(err, quarry.ErrInvalid) {
		t.Errorf("an object named like an ingested JSON file: %v, want ErrInvalid", err)
	}
	if n, _ := kb.Collection("").Count(ctx, nil); n != 2 {
		t.Errorf("%d passages after the refused put, want 2", n)
	}
}
