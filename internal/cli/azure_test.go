package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/retrieve/azuresearch/azuresearchtest"
)

// TestAzureSearch: an index in config.toml's [azure] is searched by
// quarry ask, plain and with --agent, and cited beside the knowledge base.
func TestAzureSearch(t *testing.T) {
	t.Setenv("QUARRY_LLM", "")
	t.Setenv("AZURE_SEARCH_API_KEY", "k")
	kb := ingestCorpus(t)
	srv := azuresearchtest.New(t, azuresearchtest.Index{Name: "notes", Key: "k", Searchable: []string{"content"},
		Docs: []map[string]any{{"id": "n1", "content": "Gift cards bought in the sale are refunded as vouchers."}}})
	cfg, err := os.ReadFile(filepath.Join(kb, "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(cfg), "\nendpoint = \"\"", "\nendpoint = \""+srv.URL+"\"", 1)
	s = strings.Replace(s, "\nindex = \"\"", "\nindex = \"notes\"", 1)
	if s == string(cfg) {
		t.Fatal("config.toml has no [azure] endpoint to set")
	}
	if err := os.WriteFile(filepath.Join(kb, "config.toml"), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, agent := range []string{"", "--agent"} {
		args := []string{"ask", "Are gift cards from the sale refunded?", "--kb", kb, "-k", "10", "--json"}
		if agent != "" {
			args = append(args, agent)
		}
		code, out, errOut := run(t, "", args...)
		if code != 0 || strings.Contains(out, "sourceErrors") || !strings.Contains(out, `"sourceType": "azure"`) {
			t.Errorf("ask %s with Azure AI Search beside: %d %q %q", agent, code, out, errOut)
		}
	}
	if n := len(srv.Requests()); n < 2 {
		t.Errorf("%d searches reached the index", n)
	}
}
