package server_test

import (
	"strings"
	"testing"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/keys"
)

// TestProfilesOverHTTP: search and ask take a profile; a key limited to a
// profile searches only its view, by default, and can change nothing
// whatever its permission; /v1/profiles lists what a caller may use.
func TestProfilesOverHTTP(t *testing.T) {
	f := newFixture(t, func(c *config) {
		c.kb = append(c.kb, quarry.WithProfiles(
			quarry.Profile{Name: "acme", Description: "Acme's documents", Collections: []string{"kb"}, Filter: filter.Eq("tenant", "acme"), TopK: 1},
			quarry.Profile{Name: "all", Collections: []string{"kb"}},
		))
	})
	admin := mustKey(t, f.keys, keys.Spec{Permission: keys.PermAdmin})
	agent := mustKey(t, f.keys, keys.Spec{Name: "agent", Permission: keys.PermAdmin, Profiles: []string{"acme"}})
	expect(t, "create", f.do(t, "POST", "/v1/collections", admin, map[string]any{"name": "kb", "schema": tenantSchema}), 201, "")
	expect(t, "seed", f.do(t, "POST", "/v1/collections/kb/documents", admin, map[string]any{"documents": []map[string]any{
		{"id": "a1", "text": "Acme pricing: the secret discount is ten percent.", "source": "pricing.md", "metadata": map[string]any{"tenant": "acme", "year": 2025}},
		{"id": "a2", "text": "Acme pricing again: the discount applies to pricing of bulk orders.", "source": "bulk.md", "metadata": map[string]any{"tenant": "acme", "year": 2025}},
		{"id": "g1", "text": "Globex pricing: the secret discount is forty percent.", "source": "pricing.md", "metadata": map[string]any{"tenant": "globex", "year": 2025}},
	}}), 200, "")

	r := f.do(t, "POST", "/v1/collections/kb/search", admin, map[string]any{"query": "secret discount pricing", "profile": "acme"})
	expect(t, "admin through acme", r, 200, "")
	if hs := results(r); len(hs) != 1 || hs[0]["id"] != "a1" {
		t.Errorf("through acme (top-k 1): %s", r.raw)
	}
	if r := f.do(t, "POST", "/v1/collections/kb/search", admin, map[string]any{"query": "pricing", "profile": "all"}); len(results(r)) != 3 {
		t.Errorf("through all: %s", r.raw)
	}
	expect(t, "an unknown profile", f.do(t, "POST", "/v1/collections/kb/search", admin, map[string]any{"query": "x", "profile": "nope"}), 400, "invalid_request")

	// The agent's key uses its profile without naming it, and only it.
	r = f.do(t, "POST", "/v1/collections/kb/search", agent, map[string]any{"query": "secret discount pricing", "top_k": 10})
	expect(t, "agent search", r, 200, "")
	if strings.Contains(r.raw, "forty") || len(results(r)) != 2 {
		t.Errorf("the agent's search: %s", r.raw)
	}
	a := f.do(t, "POST", "/v1/collections/kb/ask", agent, map[string]any{"question": "What is the secret discount?"})
	expect(t, "agent ask", a, 200, "")
	if strings.Contains(a.raw, "forty") {
		t.Errorf("the agent's answer leaked: %s", a.raw)
	}
	expect(t, "agent through all", f.do(t, "POST", "/v1/collections/kb/search", agent, map[string]any{"query": "x", "profile": "all"}), 403, "forbidden")
	expect(t, "agent delete", f.do(t, "POST", "/v1/collections/kb/documents/delete", agent, map[string]any{"source": "pricing.md"}), 403, "forbidden")
	expect(t, "agent add", f.do(t, "POST", "/v1/collections/kb/documents", agent, map[string]any{"documents": []map[string]any{{"text": "x"}}}), 403, "forbidden")
	expect(t, "agent drop", f.do(t, "DELETE", "/v1/collections/kb", agent, nil), 403, "forbidden")
	expect(t, "agent tree", f.do(t, "GET", "/v1/collections/kb/tree", agent, nil), 403, "forbidden")
	expect(t, "agent jobs", f.do(t, "GET", "/v1/jobs", agent, nil), 403, "forbidden")
	job := f.do(t, "POST", "/v1/collections/kb/ingest", admin, map[string]any{"paths": []string{"docs"}})
	expect(t, "admin ingest", job, 202, "")
	f.waitJob(t, job.body["job_id"].(string), admin)
	expect(t, "agent reads the admin's job", f.do(t, "GET", "/v1/jobs/"+job.body["job_id"].(string), agent, nil), 404, "not_found")

	st := f.do(t, "GET", "/v1/status", agent, nil)
	expect(t, "agent status", st, 200, "")
	if !strings.Contains(st.raw, `"profiles":["acme"]`) || strings.Contains(st.raw, `"roots"`) {
		t.Errorf("the agent's status names its profiles and no roots: %s", st.raw)
	}
	if !strings.Contains(st.raw, `"documents":2`) {
		t.Errorf("the agent's status counts its view (2 passages): %s", st.raw)
	}
	ps := f.do(t, "GET", "/v1/profiles", agent, nil)
	expect(t, "agent profiles", ps, 200, "")
	if list, _ := ps.body["profiles"].([]any); len(list) != 1 || !strings.Contains(ps.raw, `"name":"acme"`) || !strings.Contains(ps.raw, `"filter":`) {
		t.Errorf("the agent's profiles: %s", ps.raw)
	}
	if list, _ := f.do(t, "GET", "/v1/profiles", admin, nil).body["profiles"].([]any); len(list) != 2 {
		t.Errorf("the admin's profiles: %v", list)
	}
}
