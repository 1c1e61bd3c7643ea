package server_test

import (
	"path/filepath"
	"testing"

	"github.com/quarry-rag/quarry/server"
)

// TestIngestNameTaken checks a second folder whose files would take over
// the first one's source names is refused with 409, and is ingested
// beside it with a prefix.
func TestIngestNameTaken(t *testing.T) {
	f := newFixture(t)
	write(t, filepath.Join(f.root, "a", "README.md"), "# A\n\nTeam A ships parcels.\n")
	write(t, filepath.Join(f.root, "b", "README.md"), "# B\n\nTeam B answers refunds.\n")
	r := f.do(t, "POST", "/v1/collections/teams/ingest", "", map[string]any{"paths": []string{"a"}})
	expect(t, "ingest a", r, 202, "")
	f.waitJob(t, r.body["job_id"].(string), "")
	expect(t, "ingest b", f.do(t, "POST", "/v1/collections/teams/ingest", "", map[string]any{"paths": []string{"b"}}), 409, server.CodeConflict)
	r = f.do(t, "POST", "/v1/collections/teams/ingest", "", map[string]any{"paths": []string{"b"}, "prefix": "b"})
	expect(t, "ingest b with a prefix", r, 202, "")
	f.waitJob(t, r.body["job_id"].(string), "")
}
