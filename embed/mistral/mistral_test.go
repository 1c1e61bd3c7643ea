package mistral

import (
	"context"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/embed/internal/apitest"
)

func ok(dim int) func(int, apitest.Request) apitest.Reply {
	return func(_ int, r apitest.Request) apitest.Reply {
		in := apitest.Strings(r.Body["input"])
		var data []map[string]any
		for i := len(in) - 1; i >= 0; i-- {
			data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": apitest.Vector(in[i], dim)})
		}
		return apitest.Reply{Body: map[string]any{"id": "e1", "object": "list", "data": data, "model": r.Body["model"], "usage": map[string]int{"prompt_tokens": 2, "total_tokens": 2}}}
	}
}

func newTest(t *testing.T, srv *apitest.Server, cfg Config) *Embedder {
	t.Helper()
	cfg.BaseURL = srv.URL + "/v1"
	cfg.HTTPOptions = apitest.Fast()
	e, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestEmbedBatchesAndRequest(t *testing.T) {
	t.Setenv("MISTRAL_API_KEY", "m-test")
	srv := apitest.New(t, ok(1024))
	e := newTest(t, srv, Config{BatchSize: 2})
	if got := e.Model(); got != (embed.ModelInfo{Provider: "mistral", Model: "mistral-embed", Dimension: 1024, Normalized: true}) {
		t.Errorf("model %+v", got)
	}
	texts := []string{"a", "bb", "ccc"}
	vecs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	apitest.CheckVectors(t, texts, vecs, 1024)
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	r := reqs[0]
	if r.Path != "/v1/embeddings" || r.Header.Get("Authorization") != "Bearer m-test" || r.Body["model"] != "mistral-embed" || r.Body["output_dtype"] != "float" {
		t.Errorf("request %s %v %v", r.Path, r.Header, r.Body)
	}
	if _, ok := r.Body["output_dimension"]; ok {
		t.Error("output_dimension sent though none was configured")
	}
}

func TestRetryAfter429(t *testing.T) {
	okReply := ok(256)
	srv := apitest.New(t, func(n int, r apitest.Request) apitest.Reply {
		if n == 0 {
			return apitest.Reply{Status: 429, Header: map[string]string{"Retry-After": "1"}, Body: `{"message":"Requests rate limit exceeded"}`}
		}
		return okReply(n, r)
	})
	e := newTest(t, srv, Config{APIKey: "k", Model: "codestral-embed", Dimension: 256})
	vecs, err := e.Embed(context.Background(), []string{"x"})
	if err != nil {
		t.Fatal(err)
	}
	apitest.CheckVectors(t, []string{"x"}, vecs, 256)
	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[1].Body["output_dimension"] != 256.0 {
		t.Errorf("%d requests, want 2 with output_dimension", len(reqs))
	}
}

func TestErrorBodyAndMissingKey(t *testing.T) {
	srv := apitest.New(t, func(int, apitest.Request) apitest.Reply {
		return apitest.Reply{Status: 422, Body: `{"object":"error","message":"Too many tokens in batch","type":"invalid_request_error"}`}
	})
	e := newTest(t, srv, Config{APIKey: "k"})
	if _, err := e.Embed(context.Background(), []string{"x"}); err == nil || !strings.Contains(err.Error(), "Too many tokens in batch") {
		t.Errorf("error %v does not carry the body", err)
	}
	t.Setenv("MISTRAL_API_KEY", "")
	if _, err := New(context.Background(), Config{}); err == nil || !strings.Contains(err.Error(), "MISTRAL_API_KEY") {
		t.Errorf("error %v does not name the variable", err)
	}
}
