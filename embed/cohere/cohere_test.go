package cohere

import (
	"context"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/embed/internal/apitest"
)

func ok(dim int) func(int, apitest.Request) apitest.Reply {
	return func(_ int, r apitest.Request) apitest.Reply {
		in := apitest.Strings(r.Body["texts"])
		var vecs [][]float32
		for _, s := range in {
			vecs = append(vecs, apitest.Vector(s, dim))
		}
		return apitest.Reply{Body: map[string]any{
			"id": "da6e531f", "texts": in,
			"embeddings": map[string]any{"float": vecs},
			"meta":       map[string]any{"api_version": map[string]string{"version": "2"}},
		}}
	}
}

func newTest(t *testing.T, srv *apitest.Server, cfg Config) *Embedder {
	t.Helper()
	cfg.BaseURL = srv.URL + "/v2"
	cfg.HTTPOptions = apitest.Fast()
	e, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestDocumentsAndQueries(t *testing.T) {
	t.Setenv("COHERE_API_KEY", "co-test")
	srv := apitest.New(t, ok(1536))
	e := newTest(t, srv, Config{})
	if got := e.Model(); got != (embed.ModelInfo{Provider: "cohere", Model: "embed-v4.0", Dimension: 1536, Normalized: true}) {
		t.Errorf("model %+v", got)
	}
	docs := make([]string, 100)
	for i := range docs {
		docs[i] = strings.Repeat("d", i%7)
	}
	vecs, err := e.Embed(context.Background(), docs)
	if err != nil {
		t.Fatal(err)
	}
	apitest.CheckVectors(t, docs, vecs, 1536)
	qv, err := embed.EmbedQuery(context.Background(), e, []string{"q"})
	if err != nil {
		t.Fatal(err)
	}
	apitest.CheckVectors(t, []string{"q"}, qv, 1536)
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 2 for 100 documents (96 a request) and 1 for the query", len(reqs))
	}
	if n := len(apitest.Strings(reqs[0].Body["texts"])); n != 96 {
		t.Errorf("first batch of %d texts, want 96", n)
	}
	r := reqs[0]
	if r.Path != "/v2/embed" || r.Header.Get("Authorization") != "Bearer co-test" || r.Body["model"] != "embed-v4.0" {
		t.Errorf("request %s %v %v", r.Path, r.Header, r.Body["model"])
	}
	if types := apitest.Strings(r.Body["embedding_types"]); len(types) != 1 || types[0] != "float" {
		t.Errorf("embedding_types %v", types)
	}
	for i, want := range []string{"search_document", "search_document", "search_query"} {
		if got := reqs[i].Body["input_type"]; got != want {
			t.Errorf("request %d: input_type %v, want %s", i, got, want)
		}
	}
}

func TestRetryAfter429(t *testing.T) {
	okReply := ok(512)
	srv := apitest.New(t, func(n int, r apitest.Request) apitest.Reply {
		if n == 0 {
			return apitest.Reply{Status: 429, Header: map[string]string{"Retry-After": "1"}, Body: `{"message":"You are using a Trial key, which is limited to 100 API calls / minute."}`}
		}
		return okReply(n, r)
	})
	e := newTest(t, srv, Config{APIKey: "k", Dimension: 512})
	vecs, err := e.Embed(context.Background(), []string{"x"})
	if err != nil {
		t.Fatal(err)
	}
	apitest.CheckVectors(t, []string{"x"}, vecs, 512)
	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[1].Body["output_dimension"] != 512.0 {
		t.Errorf("%d requests, want 2 with output_dimension", len(reqs))
	}
}

func TestErrorBodyAndMissingKey(t *testing.T) {
	srv := apitest.New(t, func(int, apitest.Request) apitest.Reply {
		return apitest.Reply{Status: 400, Body: `{"message":"invalid request: texts must not be empty"}`}
	})
	e := newTest(t, srv, Config{APIKey: "k"})
	if _, err := e.Embed(context.Background(), []string{""}); err == nil || !strings.Contains(err.Error(), "texts must not be empty") {
		t.Errorf("error %v does not carry the body", err)
	}
	t.Setenv("COHERE_API_KEY", "")
	if _, err := New(context.Background(), Config{}); err == nil || !strings.Contains(err.Error(), "COHERE_API_KEY") {
		t.Errorf("error %v does not name the variable", err)
	}
}
