package cli_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/store/chroma/chromatest"
	"github.com/quarry-rag/quarry/store/meilisearch/meilisearchtest"
	"github.com/quarry-rag/quarry/store/mongodb/mongotest"
	"github.com/quarry-rag/quarry/store/pinecone/pineconetest"
	"github.com/quarry-rag/quarry/store/typesense/typesensetest"
)

// TestMigrateToStoresWithoutHierarchy: quarry migrate --leave-hierarchy
// copies an embedded knowledge base into a store that keeps no knowledge
// hierarchy — Typesense, Meilisearch, Pinecone and MongoDB Atlas (fakes that check every request
// against the engine's API) and Chroma (a real server, every exchange
// checked against its own API document) — and the copy answers searches
// and skips unchanged files on the next ingestion. Without the flag the
// copy is refused before anything is written.
func TestMigrateToStoresWithoutHierarchy(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(t *testing.T) (url string, writes func() int)
		modes []string
	}{
		{"typesense", func(t *testing.T) (string, func() int) {
			srv := typesensetest.New(t)
			srv.Key = "k"
			return srv.StoreURL("prefix=copy"), func() int { return srv.Calls()["POST /collections"] }
		}, []string{"keyword"}},
		{"meilisearch", func(t *testing.T) (string, func() int) {
			srv := meilisearchtest.New(t)
			srv.Key = "k"
			return srv.StoreURL("prefix=copy"), func() int { return srv.Calls()["POST /indexes"] }
		}, []string{"keyword"}},
		{"pinecone", func(t *testing.T) (string, func() int) {
			srv := pineconetest.New(t)
			srv.Key = "k"
			return srv.StoreURL("prefix=copy"), func() int { return srv.Calls()["POST /indexes"] }
		}, []string{"keyword", "vector", "hybrid"}},
		{"mongodb", func(t *testing.T) (string, func() int) {
			srv := mongotest.New(t)
			return srv.URI("prefix=copy"), func() int { return srv.Calls()["createSearchIndexes"] }
		}, []string{"keyword", "vector", "hybrid"}},
		{"chroma", func(t *testing.T) (string, func() int) {
			srv := chromatest.New(t)
			return srv.StoreURL(""), func() int { return srv.Calls()["POST upsert"] }
		}, []string{"keyword", "hybrid"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			to, writes := tc.start(t)
			docs := t.TempDir()
			kb := filepath.Join(t.TempDir(), "kb")
			writeFiles(t, docs, map[string]string{"a.md": "# A\n\nAlpha text that is long enough to keep.\n", "b.md": "# B\n\nBeta text that is long enough to keep.\n"})
			if code, _, errOut := run(t, "", "ingest", docs, "--kb", kb); code != 0 {
				t.Fatalf("ingest: %q", errOut)
			}
			// The knowledge base has a hierarchy (its folder's node), which
			// the target cannot keep: refused until the operator says to
			// leave it, before anything is written.
			code, out, errOut := run(t, "", "migrate", "--from", kb, "--to", to, "--all")
			if code == 0 || !strings.Contains(errOut, "--leave-hierarchy") || writes() != 0 {
				t.Fatalf("migrate without --leave-hierarchy: %d %q %q, %d writes", code, out, errOut, writes())
			}
			code, out, errOut = run(t, "", "migrate", "--from", kb, "--to", to, "--all", "--leave-hierarchy")
			if code != 0 || !strings.Contains(out, "default: 2 documents, 2 sources copied") || !strings.Contains(out, "1 hierarchy nodes left behind") {
				t.Fatalf("migrate: %d %q %q", code, out, errOut)
			}
			for _, mode := range tc.modes {
				code, out, errOut = run(t, "", "search", "beta", "--kb", kb, "--store", to, "--mode", mode)
				if code != 0 || !strings.Contains(out, "b.md") {
					t.Errorf("%s search of the copy: %d %q %q", mode, code, out, errOut)
				}
			}
			code, out, errOut = run(t, "", "ingest", docs, "--kb", kb, "--store", to)
			if code != 0 || !strings.Contains(out, "0 written, 2 unchanged") {
				t.Errorf("ingest into the copy: %d %q %q", code, out, errOut)
			}
		})
	}
}
