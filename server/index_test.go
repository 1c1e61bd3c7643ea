package server_test

import (
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/keys"
	"github.com/quarry-rag/quarry/server"
)

// TestIndexEndpoint checks POST /v1/index cuts files of the ingest roots
// into chunks for admin keys, stores nothing, and refuses paths outside
// the roots and keys below admin or with a filter.
func TestIndexEndpoint(t *testing.T) {
	f := newFixture(t)
	admin := mustKey(t, f.keys, keys.Spec{Permission: keys.PermAdmin})
	writer := mustKey(t, f.keys, keys.Spec{Permission: keys.PermWrite})
	scoped := mustKey(t, f.keys, keys.Spec{Permission: keys.PermAdmin, Filter: "sourceName = 'x'"})
	r := f.do(t, "POST", "/v1/index", admin, map[string]any{"paths": []string{"docs"}})
	expect(t, "index", r, 200, "")
	chunks, _ := r.body["chunks"].([]any)
	if len(chunks) != 1 || r.body["files"] != float64(1) {
		t.Fatalf("index: %s", r.raw)
	}
	c := chunks[0].(map[string]any)
	if c["source"] != "refunds.md" || !strings.Contains(c["text"].(string), "fourteen days") || c["location"] == "" {
		t.Errorf("chunk %v", c)
	}
	st := f.do(t, "GET", "/v1/status", admin, nil)
	if strings.Contains(st.raw, `"documents":1`) {
		t.Errorf("index stored passages: %s", st.raw)
	}
	expect(t, "outside the roots", f.do(t, "POST", "/v1/index", admin, map[string]any{"paths": []string{"/etc"}}), 403, server.CodeForbidden)
	expect(t, "a write key", f.do(t, "POST", "/v1/index", writer, map[string]any{"paths": []string{"docs"}}), 403, server.CodeForbidden)
	expect(t, "a key with a filter", f.do(t, "POST", "/v1/index", scoped, map[string]any{"paths": []string{"docs"}}), 403, server.CodeForbidden)
	expect(t, "a missing file", f.do(t, "POST", "/v1/index", admin, map[string]any{"paths": []string{"docs/missing.md"}}), 403, server.CodeForbidden)
}

func TestDoctorEndpoint(t *testing.T) {
	f := newFixture(t)
	admin := mustKey(t, f.keys, keys.Spec{Permission: keys.PermAdmin})
	reader := mustKey(t, f.keys, keys.Spec{Permission: keys.PermRead})
	r := f.do(t, "GET", "/v1/doctor", admin, nil)
	expect(t, "doctor", r, 200, "")
	checks, _ := r.body["checks"].([]any)
	if len(checks) < 6 || r.body["ok"] == nil {
		t.Fatalf("doctor: %s", r.raw)
	}
	expect(t, "doctor for a read key", f.do(t, "GET", "/v1/doctor", reader, nil), 403, server.CodeForbidden)
}

func TestImportEndpoint(t *testing.T) {
	f := newFixture(t)
	writer := mustKey(t, f.keys, keys.Spec{Permission: keys.PermWrite})
	reader := mustKey(t, f.keys, keys.Spec{Permission: keys.PermRead})
	body := map[string]any{"nodes": []map[string]any{
		{"name": "Billing", "triggers": []string{"invoice"}, "chunks": []map[string]any{{"text": "Refunds are paid within fourteen days."}}},
		{"name": "Gift cards", "parent": "Billing", "chunks": []map[string]any{{"text": "Gift cards cannot be refunded."}}},
	}}
	for run := range 2 { // the second finds everything in place
		r := f.do(t, "POST", "/v1/collections/vault/import", writer, body)
		expect(t, "import", r, 202, "")
		id, _ := r.body["job_id"].(string)
		if id == "" {
			t.Fatalf("import %d: no job id: %s", run+1, r.raw)
		}
		j := f.waitJob(t, id, writer)
		if j["kind"] != "import" || j["nodes"] != float64(2) || j["chunks"] != float64(2) || j["total"] != float64(2) || j["collection"] != "vault" {
			t.Errorf("import %d: job %v", run+1, j)
		}
	}
	expect(t, "import for a read key", f.do(t, "POST", "/v1/collections/vault/import", reader, body), 403, server.CodeForbidden)
	bad := map[string]any{"nodes": []map[string]any{{"name": "Orphan", "parent": "Nowhere"}}}
	expect(t, "import under a parent that does not exist", f.do(t, "POST", "/v1/collections/vault/import", writer, bad), 404, server.CodeNotFound)
	tree := f.do(t, "GET", "/v1/collections/vault/tree", writer, nil)
	if !strings.Contains(tree.raw, "Gift cards") || strings.Count(tree.raw, `"name":"Billing"`) != 1 {
		t.Errorf("tree after two imports: %s", tree.raw)
	}
}

func TestObjectsEndpoints(t *testing.T) {
	f := newFixture(t)
	writer := mustKey(t, f.keys, keys.Spec{Permission: keys.PermWrite})
	reader := mustKey(t, f.keys, keys.Spec{Permission: keys.PermRead})
	r := f.do(t, "POST", "/v1/collections/shop/objects", writer, []map[string]any{
		{"id": "p-1", "title": "Kettle", "price": 30}, {"id": "p-2", "title": "Toaster", "price": 45}})
	expect(t, "put objects", r, 200, "")
	if objs, _ := r.body["objects"].([]any); len(objs) != 2 {
		t.Fatalf("put objects: %s", r.raw)
	}
	expect(t, "put one object", f.do(t, "POST", "/v1/collections/shop/objects", writer, map[string]any{"id": "p-1", "title": "Kettle", "price": 25}), 200, "")
	s := f.do(t, "POST", "/v1/collections/shop/search", writer, map[string]any{"query": "kettle", "mode": "keyword"})
	if !strings.Contains(s.raw, `"sourceType":"object"`) || !strings.Contains(s.raw, "price: 25") || strings.Contains(s.raw, "price: 30") {
		t.Errorf("search after replacing an object: %s", s.raw)
	}
	d := f.do(t, "DELETE", "/v1/collections/shop/objects/p-2", writer, nil)
	expect(t, "delete an object", d, 200, "")
	if d.body["deleted"] != float64(1) {
		t.Errorf("delete: %s", d.raw)
	}
	expect(t, "put for a read key", f.do(t, "POST", "/v1/collections/shop/objects", reader, map[string]any{"id": "x"}), 403, server.CodeForbidden)
	expect(t, "put a string", f.do(t, "POST", "/v1/collections/shop/objects", writer, "text"), 400, "")
}
