package server_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/quarry-rag/quarry/hierarchy"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/keys"
	"github.com/quarry-rag/quarry/load"
	"github.com/quarry-rag/quarry/server"
	"github.com/quarry-rag/quarry/store"
)

func TestHierarchyEndpoints(t *testing.T) {
	f := newFixture(t)
	admin := mustKey(t, f.keys, keys.Spec{Permission: keys.PermAdmin})
	acme := mustKey(t, f.keys, keys.Spec{Permission: keys.PermRead, Filter: "tenant = 'acme'"})
	expect(t, "create", f.do(t, "POST", "/v1/collections", admin, map[string]any{"name": "kb", "schema": tenantSchema}), 201, "")
	r := f.do(t, "GET", "/v1/collections/kb/tree", admin, nil)
	expect(t, "empty tree", r, 200, "")
	if r.body["root"] != nil {
		t.Fatalf("empty tree: %s", r.raw)
	}
	ctx := context.Background()
	c, err := f.store.Collection(ctx, "kb")
	if err != nil {
		t.Fatal(err)
	}
	h, err := hierarchy.Open(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.AddNode(ctx, "", "billing", []string{"invoice"}); err != nil {
		t.Fatal(err)
	}
	r = f.do(t, "GET", "/v1/collections/kb/tree", admin, nil)
	expect(t, "tree", r, 200, "")
	root, _ := r.body["root"].(map[string]any)
	kids, _ := root["children"].([]any)
	if len(kids) != 1 || kids[0].(map[string]any)["name"] != "billing" {
		t.Fatalf("tree: %s", r.raw)
	}
	r = f.do(t, "GET", "/v1/collections/kb/health", admin, nil)
	expect(t, "health", r, 200, "")
	if rep, _ := r.body["report"].(map[string]any); rep == nil || rep["nodes"].(float64) != 2 {
		t.Fatalf("health: %s", r.raw)
	}
	expect(t, "tree for a scoped key", f.do(t, "GET", "/v1/collections/kb/tree", acme, nil), 403, server.CodeForbidden)
	expect(t, "health for a scoped key", f.do(t, "GET", "/v1/collections/kb/health", acme, nil), 403, server.CodeForbidden)
	expect(t, "tree of nothing", f.do(t, "GET", "/v1/collections/nope/tree", admin, nil), 404, server.CodeNotFound)
}

// TestUploadsLeaveNoPaths checks the hierarchy is told of no file path for
// uploads (their files are removed after the job) but is for server
// folders.
func TestUploadsLeaveNoPaths(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	f := newFixture(t, func(c *config) {
		c.ingest = func(next func(*store.Collection) ingest.Options) func(*store.Collection) ingest.Options {
			return func(coll *store.Collection) ingest.Options {
				opt := next(coll)
				opt.Finish = func(_ context.Context, files []load.Entry, _ *ingest.Report) error {
					mu.Lock()
					defer mu.Unlock()
					seen[coll.Name()] += len(files)
					return nil
				}
				return opt
			}
		}
	})
	r := f.upload(t, "up", "", map[string]string{"a.md": "# A\n\nsome uploaded text\n"}, "")
	expect(t, "upload", r, 202, "")
	f.waitJob(t, r.body["job_id"].(string), "")
	r = f.do(t, "POST", "/v1/collections/dir/ingest", "", map[string]any{"paths": []string{"docs"}})
	expect(t, "ingest", r, 202, "")
	f.waitJob(t, r.body["job_id"].(string), "")
	mu.Lock()
	defer mu.Unlock()
	if seen["up"] != 0 || seen["dir"] != 1 {
		t.Fatalf("files passed to Finish: %v", seen)
	}
}

// TestLinksEndpoint checks GET /v1/collections/{c}/links serves the link
// graph of a folder ingested from the roots, and refuses scoped keys.
func TestLinksEndpoint(t *testing.T) {
	f := newFixture(t)
	admin := mustKey(t, f.keys, keys.Spec{Permission: keys.PermAdmin})
	scoped := mustKey(t, f.keys, keys.Spec{Permission: keys.PermRead, Filter: "sourceName = 'x'"})
	write(t, filepath.Join(f.root, "docs", "billing", "refunds.md"), "# Refunds\n\nRefunds and invoices are handled by billing.\n")
	write(t, filepath.Join(f.root, "docs", "billing", "invoices.md"), "# Invoices\n\nInvoices list refunds.\n")
	write(t, filepath.Join(f.root, "docs", "support", "refunds.md"), "# Refunds\n\nSupport explains refunds and invoices.\n")
	r := f.do(t, "POST", "/v1/collections/dir/ingest", admin, map[string]any{"paths": []string{"docs"}})
	expect(t, "ingest", r, 202, "")
	f.waitJob(t, r.body["job_id"].(string), admin)
	r = f.do(t, "GET", "/v1/collections/dir/links", admin, nil)
	expect(t, "links", r, 200, "")
	links, ok := r.body["links"].([]any)
	if !ok || len(links) == 0 || r.body["collection"] != "dir" {
		t.Fatalf("links: %s", r.raw)
	}
	for _, l := range links {
		l := l.(map[string]any)
		if l["from_path"] == "" || l["to_path"] == "" || l["weight"].(float64) <= 0 {
			t.Errorf("link %v", l)
		}
	}
	expect(t, "links for a scoped key", f.do(t, "GET", "/v1/collections/dir/links", scoped, nil), 403, "")
	expect(t, "links of nothing", f.do(t, "GET", "/v1/collections/nope/links", admin, nil), 404, server.CodeNotFound)
}
