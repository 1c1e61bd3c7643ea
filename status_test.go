package quarry_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/filter"
)

// TestStatusCounts checks Status counts passages by source type and the
// recent jobs by state, for callers that reach everything only.
func TestStatusCounts(t *testing.T) {
	ctx := context.Background()
	kb, err := quarry.Open(ctx, t.TempDir(), quarry.Create())
	if err != nil {
		t.Fatal(err)
	}
	defer kb.Close()
	docs := t.TempDir()
	for name, text := range map[string]string{"a.md": "# A\n\nAlpha text that is long enough.\n", "b.md": "# B\n\nBeta text that is long enough.\n"} {
		if err := os.WriteFile(filepath.Join(docs, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := kb.Collection("")
	if _, err := c.Ingest(ctx, []string{docs}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Add(ctx, quarry.NewDocument{Text: "Added by hand."}); err != nil {
		t.Fatal(err)
	}
	st, err := kb.Status(ctx, quarry.Developer())
	if err != nil {
		t.Fatal(err)
	}
	ci := st.Collections[0]
	if ci.ByType["file"] != 2 || ci.ByType["manual"] != 1 || len(ci.ByType) != 2 || ci.Sources != 2 {
		t.Errorf("collection %+v", ci)
	}
	if st.LastJob == nil || st.Jobs.Running != 0 || st.Jobs.Failed != 0 {
		t.Errorf("jobs: last %+v, counts %+v", st.LastJob, st.Jobs)
	}
	scoped, err := kb.Status(ctx, quarry.Scope{Filter: filter.Eq("sourceType", "manual")})
	if err != nil {
		t.Fatal(err)
	}
	if sc := scoped.Collections[0]; sc.ByType != nil || sc.Documents != 1 || scoped.LastJob != nil {
		t.Errorf("a scoped caller's status: %+v, last job %v", sc, scoped.LastJob)
	}
}
