package ingest_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/load"
	"github.com/quarry-rag/quarry/store"
)

// TestJSONFilesAreObjects: a JSON file's objects are passages of source
// type "object", the file still the unit that is replaced and pruned; a
// file stored as a "file" source before is swapped for its objects in one
// write; and a file cannot take the name of objects put without one.
func TestJSONFilesAreObjects(t *testing.T) {
	ctx := t.Context()
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"catalog/products.json": `[{"id": "p-1", "title": "Kettle", "price": 30, "@self": {"register": "shop", "schema": "product", "uuid": "6f1c"}},
			{"id": "p-2", "name": "Toaster", "price": 45}]`,
		"guide.md": "# Guide\n\nKettles boil water.\n",
	})
	e := newEnv(t, t.TempDir())
	// An older Quarry stored the JSON file as a "file" source.
	old := document.New("id: p-1\ntitle: Kettle\n")
	old.SourceType, old.SourceName = document.SourceFile, "catalog/products.json"
	old.ID, old.Embedding = "old-1", make([]float32, e.coll.Config().Model.Dimension)
	old.Embedding[0] = 1
	real, _ := filepath.EvalSymlinks(filepath.Join(root, "catalog", "products.json"))
	if err := e.coll.ReplaceSources(ctx, []store.SourceUpdate{{Source: document.Source{Type: document.SourceFile, Name: "catalog/products.json"},
		Hash: "old", Docs: []*document.Document{old}, Origin: real}}); err != nil {
		t.Fatal(err)
	}

	rep := e.ingest(t, ingest.Options{}, root)
	if rep.Written != 2 {
		t.Fatalf("ingest: %+v", rep)
	}
	objs, err := e.coll.Search(ctx, store.SearchRequest{Mode: store.ModeKeyword, Query: "kettle toaster price", Filter: filter.Eq("sourceType", "object"), TopK: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 {
		t.Fatalf("object passages: %d", len(objs))
	}
	for _, h := range objs {
		d := h.Doc
		if d.SourceName != "catalog/products.json" || d.Metadata["object_id"] == nil || d.Metadata["title"] == nil {
			t.Errorf("object passage %s: %s %v", d.ID, d.SourceName, d.Metadata)
		}
		if d.Metadata["object_id"] == "p-1" && (d.Metadata["register"] != "shop" || d.Metadata["uuid"] != "6f1c") {
			t.Errorf("p-1 lacks its @self fields: %v", d.Metadata)
		}
	}
	if n, _ := e.coll.Count(ctx, filter.Eq("sourceType", "file")); n != 1 {
		t.Errorf("%d file passages, want the guide's 1: the old file source of the JSON file must be gone", n)
	}
	states, _ := e.coll.Sources(ctx)
	var srcs []string
	for _, s := range states {
		srcs = append(srcs, s.Source.Type+":"+s.Source.Name)
	}
	if !slices.Equal(srcs, []string{"file:guide.md", "object:catalog/products.json"}) {
		t.Errorf("sources %v", srcs)
	}
	// Unchanged, it is skipped; removed, --prune removes its objects.
	if rep := e.ingest(t, ingest.Options{}, root); rep.Skipped != 2 || rep.Written != 0 {
		t.Errorf("second run: %+v", rep)
	}
	if err := os.Remove(filepath.Join(root, "catalog", "products.json")); err != nil {
		t.Fatal(err)
	}
	if rep := e.ingest(t, ingest.Options{Prune: true}, root); rep.Pruned != 1 {
		t.Errorf("prune: %+v", rep)
	}
	if n, _ := e.coll.Count(ctx, filter.Eq("sourceType", "object")); n != 0 {
		t.Errorf("%d object passages after pruning their file", n)
	}

	// An object put without a file holds its name: a JSON file of that
	// name is refused unless the run replaces.
	api := document.New("id: stock.json\n")
	api.SourceType, api.SourceName, api.ID = document.SourceObject, "stock.json", "api-1"
	api.Embedding = old.Embedding
	if err := e.coll.Upsert(ctx, []*document.Document{api}); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	writeTree(t, other, map[string]string{"stock.json": `{"id": "s-1", "count": 3}`})
	_, err = ingest.Run(ctx, []string{other}, ingest.Options{Collection: e.coll, Embedder: e.emb, Loader: load.New(load.Options{})})
	if !errors.Is(err, ingest.ErrNameTaken) {
		t.Fatalf("a JSON file named like an object put without a file: %v", err)
	}
	if got, _ := e.coll.Get(ctx, []string{"api-1"}); len(got) != 1 {
		t.Error("the refused run removed the object")
	}
	if rep := e.ingest(t, ingest.Options{Replace: true}, other); rep.Written != 1 {
		t.Errorf("--replace: %+v", rep)
	}
}
