package quarry_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/quarrytest"
	"github.com/quarry-rag/quarry/retrieve/azuresearch"
	"github.com/quarry-rag/quarry/retrieve/azuresearch/azuresearchtest"
)

// azureHelp is a fake Azure AI Search index of two tenants' help pages.
func azureHelp(t *testing.T) *azuresearchtest.Server {
	t.Helper()
	return azuresearchtest.New(t, azuresearchtest.Index{Name: "help", Key: "k", Searchable: []string{"content"},
		Filterable: map[string]bool{"tenant": false, "url": false},
		Docs: []map[string]any{
			{"id": "a", "tenant": "acme", "url": "https://help.example/acme/warranty", "content": "The kettle warranty lasts two years from purchase."},
			{"id": "g", "tenant": "globex", "url": "https://help.example/globex/warranty", "content": "Globex kettle warranty lasts five years, secretly."},
		}})
}

func citedSources(ps []quarry.Passage) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.SourceType+":"+p.Source)
	}
	return out
}

// TestAzureSearchBesideTheKnowledgeBase: a configured index is searched
// with every answer, in parallel with the collection, and by the agent,
// under the caller's scope on both paths.
func TestAzureSearchBesideTheKnowledgeBase(t *testing.T) {
	srv := azureHelp(t)
	ix := &azuresearch.Index{Endpoint: srv.URL, Name: "help", APIKey: "k", SourceField: "url", MaxRetries: -1,
		Fields: []document.Field{{Name: "tenant", Type: document.TypeString}}}
	kb := quarrytest.NewKB(t, quarry.WithAzureSearch(ix))
	ctx := context.Background()
	schema, err := document.NewSchema(document.Field{Name: "tenant", Type: document.TypeString, Filterable: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kb.CreateCollection(ctx, quarry.Developer(), quarry.NewCollectionRequest{Name: "default", Schema: schema}); err != nil {
		t.Fatal(err)
	}
	if _, err := kb.AddDocuments(ctx, quarry.Developer(), "", []quarry.NewDocument{
		{Text: "Kettles are descaled with citric acid every month.", Metadata: map[string]any{"tenant": "acme"}},
	}); err != nil {
		t.Fatal(err)
	}
	acme := quarry.Scope{Filter: filter.Eq("tenant", "acme")}
	for _, agent := range []bool{false, true} {
		res, err := kb.Ask(ctx, acme, quarry.AskRequest{Question: "How long does the kettle warranty last?", Agent: agent})
		if err != nil {
			t.Fatal(err)
		}
		got := citedSources(res.Citations)
		if !slices.Contains(got, "azure:https://help.example/acme/warranty") {
			t.Errorf("agent %v: citations %v, want the acme warranty page from Azure", agent, got)
		}
		for _, s := range got {
			if strings.Contains(s, "globex") {
				t.Errorf("agent %v: cited %s, outside the caller's scope", agent, s)
			}
		}
	}
	// A scope that excludes the index's source type gets nothing from it.
	res, err := kb.Ask(ctx, quarry.Scope{Filter: filter.Eq("sourceType", "manual")}, quarry.AskRequest{Question: "kettle warranty"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range citedSources(res.Citations) {
		if strings.HasPrefix(s, "azure:") {
			t.Errorf("a scope on a field the index lacks let %s through", s)
		}
	}
}

// TestAzureSearchFromConfig: [azure] in config.toml opens the index, and
// a failing index is reported beside the answer, never fatal.
func TestAzureSearchFromConfig(t *testing.T) {
	srv := azureHelp(t)
	dir := t.TempDir()
	cfg := "[azure]\nendpoint = \"" + srv.URL + "\"\nindex = \"help\"\nsource_field = \"url\"\nfields = [\"tenant:string\"]\n"
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AZURE_SEARCH_API_KEY", "k")
	kb, err := quarry.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer kb.Close()
	if _, err := kb.AddDocuments(context.Background(), quarry.Developer(), "", []quarry.NewDocument{{Text: "Descale kettles monthly."}}); err != nil {
		t.Fatal(err)
	}
	if ix := kb.AzureSearch(); ix == nil || ix.Name != "help" || len(ix.Fields) != 1 || ix.Fields[0].Type != document.TypeString {
		t.Fatalf("index %+v", ix)
	}
	res, err := kb.Ask(context.Background(), quarry.Developer(), quarry.AskRequest{Question: "kettle warranty years"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Citations) == 0 || res.Citations[0].SourceType != azuresearch.SourceType {
		t.Errorf("citations %v", citedSources(res.Citations))
	}
	t.Setenv("AZURE_SEARCH_API_KEY", "wrong")
	res, err = kb.Ask(context.Background(), quarry.Developer(), quarry.AskRequest{Question: "kettle warranty years"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.SourceErrors) != 1 || res.SourceErrors[0].Source != "azure search" {
		t.Errorf("a refused index: source errors %+v", res.SourceErrors)
	}

	for _, bad := range []string{
		"[azure]\nendpoint = \"" + srv.URL + "\"\n",
		"[azure]\nendpoint = \"" + srv.URL + "\"\nindex = \"help\"\nfields = [\"tenant\"]\n",
		"[azure]\nendpoint = \"" + srv.URL + "\"\nindex = \"help\"\nfields = [\"n:float[]\"]\n",
		"[azure]\nendpoint = \"" + srv.URL + "\"\nindex = \"help\"\nvector_field = \"v\"\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if kb, err := quarry.Open(context.Background(), dir); err == nil {
			kb.Close()
			t.Errorf("opened with %q", bad)
		}
	}
}
