package gemini

import (
	"context"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/embed/internal/apitest"
)

func texts(r apitest.Request) (out []string, tasks []string) {
	reqs, _ := r.Body["requests"].([]any)
	for _, x := range reqs {
		m := x.(map[string]any)
		parts := m["content"].(map[string]any)["parts"].([]any)
		out = append(out, parts[0].(map[string]any)["text"].(string))
		tasks = append(tasks, m["taskType"].(string))
	}
	return out, tasks
}

func ok(dim int) func(int, apitest.Request) apitest.Reply {
	return func(_ int, r apitest.Request) apitest.Reply {
		in, _ := texts(r)
		var embs []map[string]any
		for _, s := range in {
			embs = append(embs, map[string]any{"values": apitest.Vector(s, dim)})
		}
		return apitest.Reply{Body: map[string]any{"embeddings": embs}}
	}
}

func newTest(t *testing.T, srv *apitest.Server, cfg Config) *Embedder {
	t.Helper()
	cfg.BaseURL = srv.URL + "/v1beta"
	cfg.HTTPOptions = apitest.Fast()
	e, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestDocumentsAndQueries(t *testing.T) {
	t.Setenv("GEMINI_API_KEY", "")
	t.Setenv("GOOGLE_API_KEY", "g-key")
	srv := apitest.New(t, ok(768))
	e := newTest(t, srv, Config{Dimension: 768, BatchSize: 2})
	if got := e.Model(); got != (embed.ModelInfo{Provider: "gemini", Model: "gemini-embedding-001", Dimension: 768, Normalized: true}) {
		t.Errorf("model %+v", got)
	}
	docs := []string{"a", "bb", "ccc"}
	vecs, err := e.Embed(context.Background(), docs)
	if err != nil {
		t.Fatal(err)
	}
	apitest.CheckVectors(t, docs, vecs, 768)
	qv, err := embed.EmbedQuery(context.Background(), e, []string{"qq"})
	if err != nil {
		t.Fatal(err)
	}
	apitest.CheckVectors(t, []string{"qq"}, qv, 768)

	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 2 for 3 documents in batches of 2 and 1 for the query", len(reqs))
	}
	r := reqs[0]
	if r.Path != "/v1beta/models/gemini-embedding-001:batchEmbedContents" || r.Header.Get("x-goog-api-key") != "g-key" {
		t.Errorf("request %s %v", r.Path, r.Header)
	}
	first := r.Body["requests"].([]any)[0].(map[string]any)
	if first["model"] != "models/gemini-embedding-001" || first["outputDimensionality"] != 768.0 {
		t.Errorf("request %v", first)
	}
	for i, want := range []string{"RETRIEVAL_DOCUMENT", "RETRIEVAL_DOCUMENT", "RETRIEVAL_QUERY"} {
		if _, tasks := texts(reqs[i]); tasks[0] != want {
			t.Errorf("request %d: task type %s, want %s", i, tasks[0], want)
		}
	}
}

func TestRetryAfter429(t *testing.T) {
	okReply := ok(4)
	srv := apitest.New(t, func(n int, r apitest.Request) apitest.Reply {
		if n == 0 {
			return apitest.Reply{Status: 429, Header: map[string]string{"Retry-After": "1"}, Body: `{"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED"}}`}
		}
		return okReply(n, r)
	})
	e := newTest(t, srv, Config{APIKey: "k", Model: "models/text-embedding-004", Dimension: 4})
	vecs, err := e.Embed(context.Background(), []string{"x"})
	if err != nil {
		t.Fatal(err)
	}
	apitest.CheckVectors(t, []string{"x"}, vecs, 4)
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestErrorBodyAndMissingKey(t *testing.T) {
	srv := apitest.New(t, func(int, apitest.Request) apitest.Reply {
		return apitest.Reply{Status: 400, Body: `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}`}
	})
	e := newTest(t, srv, Config{APIKey: "bad", Dimension: 4})
	if _, err := e.Embed(context.Background(), []string{"x"}); err == nil || !strings.Contains(err.Error(), "API key not valid") {
		t.Errorf("error %v does not carry the body", err)
	}
	t.Setenv("GEMINI_API_KEY", "")
	t.Setenv("GOOGLE_API_KEY", "")
	if _, err := New(context.Background(), Config{}); err == nil || !strings.Contains(err.Error(), "GEMINI_API_KEY") {
		t.Errorf("error %v does not name the variable", err)
	}
}
