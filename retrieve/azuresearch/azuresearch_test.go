package azuresearch_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/agent"
	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed/hash"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/retrieve"
	"github.com/quarry-rag/quarry/retrieve/azuresearch"
	"github.com/quarry-rag/quarry/retrieve/azuresearch/azuresearchtest"
	"github.com/quarry-rag/quarry/retrieve/sourcetest"
)

// handbook is the fake index: two tenants' articles.
var handbook = []struct {
	id, tenant, title, text, url string
	year                         int
	tags                         []string
}{
	{"a1", "acme", "Refunds", "Refunds are paid within fourteen days. Gift cards are not refunded.", "https://help.example/acme/refunds", 2024, []string{"billing"}},
	{"a2", "acme", "Shipping", "Parcels ship from Rotterdam. Express shipping takes one day.", "https://help.example/acme/shipping", 2023, []string{"logistics"}},
	{"a3", "acme", "Returns", "Returns are free for thirty days; refunds follow the return.", "https://help.example/acme/returns", 2025, []string{"billing", "logistics"}},
	{"g1", "globex", "Refunds at Globex", "Globex refunds within three days, secret terms apply.", "https://help.example/globex/refunds", 2025, []string{"billing"}},
}

func fakeIndex(t *testing.T, emb *hash.Embedder, semantic string) (*azuresearchtest.Server, *azuresearch.Index) {
	t.Helper()
	var docs []map[string]any
	for _, h := range handbook {
		d := map[string]any{"id": h.id, "tenant": h.tenant, "title": h.title, "content": h.text, "url": h.url,
			"year": float64(h.year), "tags": toAny(h.tags)}
		if emb != nil {
			v, err := emb.Embed(context.Background(), []string{h.title + " " + h.text})
			if err != nil {
				t.Fatal(err)
			}
			d["contentVector"] = f64(v[0])
		}
		docs = append(docs, d)
	}
	srv := azuresearchtest.New(t, azuresearchtest.Index{Name: "handbook", Key: "query-key", Searchable: []string{"title", "content"},
		VectorField: "contentVector", Semantic: "default",
		Filterable: map[string]bool{"tenant": false, "year": false, "url": false, "tags": true}, Docs: docs})
	ix := &azuresearch.Index{Endpoint: srv.URL, Name: "handbook", APIKey: "query-key", TitleField: "title", SourceField: "url",
		Semantic: semantic, MaxRetries: -1,
		Fields: []document.Field{{Name: "tenant", Type: document.TypeString}, {Name: "year", Type: document.TypeInteger},
			{Name: "tags", Type: document.TypeStringList}}}
	if emb != nil {
		ix.VectorField, ix.Embedder = "contentVector", emb
	}
	return srv, ix
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func f64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func ids(docs []*document.Document) []string {
	var out []string
	for _, d := range docs {
		out = append(out, d.ID)
	}
	return out
}

func TestKeywordSearch(t *testing.T) {
	srv, ix := fakeIndex(t, nil, "")
	docs, err := ix.Retrieve(t.Context(), retrieve.Request{Query: "refunds paid", TopK: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(docs); !slices.Equal(got, []string{"handbook/a1", "handbook/a3"}) {
		t.Fatalf("passages %v", got)
	}
	d := docs[0]
	if d.SourceType != azuresearch.SourceType || d.SourceName != "https://help.example/acme/refunds" || d.Provenance.Source != d.SourceName ||
		!strings.HasPrefix(d.Content, "Refunds\nRefunds are paid") || d.Metadata["tenant"] != "acme" || d.Metadata["year"] != int64(2024) ||
		!d.Scored || d.Score != 2 {
		t.Errorf("passage %+v", d)
	}
	body := srv.Requests()[0]
	if body["search"] != "refunds paid" || body["queryType"] != "simple" || body["top"] != 2.0 || body["vectorQueries"] != nil ||
		body["select"] != "id,content,title,url,tenant,year,tags" {
		t.Errorf("request %v", body)
	}
}

// TestHybridSearch: with a vector field and an embedder, one request
// carries the text and the vector query, the filter applied before the
// nearest neighbours are chosen; the service fuses them.
func TestHybridSearch(t *testing.T) {
	emb, err := hash.New(hash.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv, ix := fakeIndex(t, emb, "")
	docs, err := ix.Retrieve(t.Context(), retrieve.Request{Query: "how fast are refunds paid", TopK: 3, Filter: filter.Eq("tenant", "acme")})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 || docs[0].ID != "handbook/a1" {
		t.Fatalf("passages %v", ids(docs))
	}
	for _, d := range docs {
		if d.Metadata["tenant"] != "acme" || d.Score <= 0 || d.Score > 2.0/61 {
			t.Errorf("passage %s: tenant %v, score %v (an RRF score)", d.ID, d.Metadata["tenant"], d.Score)
		}
	}
	body := srv.Requests()[0]
	vq, _ := body["vectorQueries"].([]any)
	if len(vq) != 1 || body["vectorFilterMode"] != "preFilter" || body["filter"] != "tenant eq 'acme'" {
		t.Fatalf("request %v", body)
	}
	q := vq[0].(map[string]any)
	if q["kind"] != "vector" || q["fields"] != "contentVector" || q["k"] != 6.0 || len(q["vector"].([]any)) != hash.DefaultDimension {
		t.Errorf("vector query %v", q)
	}
}

// TestSemanticRanker: the semantic configuration turns on the ranker; its
// rerankerScore is the passage's score and the caption rides along.
func TestSemanticRanker(t *testing.T) {
	srv, ix := fakeIndex(t, nil, "default")
	docs, err := ix.Retrieve(t.Context(), retrieve.Request{Query: "express shipping", TopK: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 1 || docs[0].ID != "handbook/a2" || docs[0].Score != 4 || docs[0].Metadata["caption"] != "Express shipping takes one day." {
		t.Fatalf("passages %+v", docs)
	}
	body := srv.Requests()[0]
	if body["queryType"] != "semantic" || body["semanticConfiguration"] != "default" || body["captions"] != "extractive" {
		t.Errorf("request %v", body)
	}
}

// TestScopes: a scope compiles into the request's filter and is checked
// again on what comes back; a scope the index cannot honour (a field it
// does not declare) matches nothing and sends nothing; a request's $or
// cannot reach past the scope.
func TestScopes(t *testing.T) {
	srv, ix := fakeIndex(t, nil, "")
	ctx := t.Context()
	acme := filter.Eq("tenant", "acme")
	for _, tc := range []struct {
		name   string
		filter filter.Expr
		want   []string
	}{
		{"scope alone", nil, []string{"handbook/a1", "handbook/a3"}},
		{"or with another tenant", filter.Or(filter.Eq("tenant", "globex"), filter.Gte("year", 2000)), []string{"handbook/a1", "handbook/a3"}},
		{"another tenant", filter.Eq("tenant", "globex"), nil},
		{"year range", filter.Gte("year", 2024.5), []string{"handbook/a3"}},
		{"tags", filter.ContainsAll("tags", "billing", "logistics"), []string{"handbook/a3"}},
		{"not a source", filter.Neq("sourceName", "https://help.example/acme/refunds"), []string{"handbook/a3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := ix.Retrieve(ctx, retrieve.Request{Query: "refunds", TopK: 10, Scope: acme, Filter: tc.filter})
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(docs); !slices.Equal(got, tc.want) {
				t.Errorf("passages %v, want %v", got, tc.want)
			}
		})
	}
	before := len(srv.Requests())
	docs, err := ix.Retrieve(ctx, retrieve.Request{Query: "refunds", TopK: 10, Scope: filter.Eq("team", "support")})
	if err != nil || len(docs) != 0 || len(srv.Requests()) != before {
		t.Errorf("a scope on a field the index lacks: %v %v, %d requests sent", ids(docs), err, len(srv.Requests())-before)
	}
	// The agent's tool calls run under the caller's scope whatever the
	// model asks for.
	g, err := (&agent.Agent{Sources: []agent.Source{{Name: "azure", Filterable: true,
		Searcher: agent.Retrieving(scopedRetriever{ix, acme})}}}).
		Gather(ctx, agent.Request{Question: "What are Globex's secret refund terms?", TopK: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range g.Passages {
		if p.Metadata["tenant"] != "acme" {
			t.Errorf("the agent gathered %s of tenant %v", p.ID, p.Metadata["tenant"])
		}
	}
}

type scopedRetriever struct {
	r     retrieve.Retriever
	scope filter.Expr
}

func (s scopedRetriever) Retrieve(ctx context.Context, req retrieve.Request) ([]*document.Document, error) {
	req.Scope = filter.Merge(s.scope, req.Scope)
	return s.r.Retrieve(ctx, req)
}

func TestKeys(t *testing.T) {
	_, ix := fakeIndex(t, nil, "")
	ix.APIKey = ""
	t.Setenv("AZURE_SEARCH_API_KEY", "")
	t.Setenv("AZURE_SEARCH_KEY", "")
	if _, err := ix.Retrieve(t.Context(), retrieve.Request{Query: "refunds", TopK: 3}); err == nil || !strings.Contains(err.Error(), "AZURE_SEARCH_API_KEY") {
		t.Errorf("no key: %v", err)
	}
	t.Setenv("AZURE_SEARCH_KEY", "wrong")
	if _, err := ix.Retrieve(t.Context(), retrieve.Request{Query: "refunds", TopK: 3}); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("a wrong key: %v", err)
	}
	t.Setenv("AZURE_SEARCH_API_KEY", "query-key")
	if docs, err := ix.Retrieve(t.Context(), retrieve.Request{Query: "refunds", TopK: 3}); err != nil || len(docs) == 0 {
		t.Errorf("the key from the environment: %v %v", ids(docs), err)
	}
}

func TestCheck(t *testing.T) {
	emb, _ := hash.New(hash.Config{})
	for _, tc := range []struct {
		name string
		ix   azuresearch.Index
	}{
		{"no endpoint", azuresearch.Index{Name: "x"}},
		{"a quote in the index name", azuresearch.Index{Endpoint: "https://s.search.windows.net", Name: "x')/docs"}},
		{"a field that is an expression", azuresearch.Index{Endpoint: "https://s.search.windows.net", Name: "x", SourceField: "url eq 'x' or true"}},
		{"a list of numbers", azuresearch.Index{Endpoint: "https://s.search.windows.net", Name: "x",
			Fields: []document.Field{{Name: "ns", Type: document.TypeFloatList}}}},
		{"an embedder without a vector field", azuresearch.Index{Endpoint: "https://s.search.windows.net", Name: "x", Embedder: emb}},
	} {
		if err := tc.ix.Check(); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

// TestSpecificationRefuses: the fake's check is live, so a request Azure
// would refuse fails the test that sends it.
func TestSpecificationRefuses(t *testing.T) {
	for _, body := range []string{
		`{"search":"x","top":"ten"}`,
		`{"search":"x","vectorQueries":[{"vector":[1,2],"fields":"v","k":3}]}`,
		`{"search":"x","vectorQueries":[{"kind":"text","text":"x","fields":"v"}]}`,
		`{"search":"x","queryType":"vector"}`,
	} {
		if err := azuresearchtest.CheckSearch([]byte(body)); err == nil {
			t.Errorf("%s: accepted", body)
		}
	}
	if err := azuresearchtest.CheckSearch([]byte(`{"search":"x","top":3,"vectorQueries":[{"kind":"vector","vector":[1,2],"fields":"v","k":3}],"vectorFilterMode":"preFilter"}`)); err != nil {
		t.Errorf("a valid request refused: %v", err)
	}
}

func TestSourceContract(t *testing.T) {
	sourcetest.Run(t, sourcetest.Source{
		New: func(base string) retrieve.Retriever {
			return &azuresearch.Index{Endpoint: base, Name: "web", APIKey: "k", TitleField: "title", SourceField: "url", MaxRetries: -1}
		},
		Serve: func(t *testing.T, w http.ResponseWriter, r *http.Request, results []sourcetest.Result) {
			// Every document holds the contract's query words, so the fake
			// ranks them all alike and orders them by key: as given.
			var docs []map[string]any
			for _, res := range results {
				docs = append(docs, map[string]any{"id": docKey(res), "title": res.Title, "content": res.Text + " refund refunds policy", "url": res.URL})
			}
			azuresearchtest.Serve(t, w, r, azuresearchtest.Index{Name: "web", Key: "k", Searchable: []string{"title", "content"},
				Filterable: map[string]bool{"url": false}, Docs: docs}, nil)
		},
		SourceType: azuresearch.SourceType,
		Names:      func(r sourcetest.Result) (string, string) { return "web/" + docKey(r), r.URL },
	})
}

// docKey is a result's key in the fake index, in the order of
// sourcetest.Results.
func docKey(r sourcetest.Result) string {
	return string(rune('a'+slices.Index(sourcetest.Results, r))) + "-" + r.URL[strings.LastIndex(r.URL, "/")+1:]
}
