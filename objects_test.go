package quarry_test

import (
	"context"
	"errors"
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
