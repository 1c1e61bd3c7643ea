package openai

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/embed/internal/apitest"
)

// ok answers like the API, with the data in reverse order: index decides.
func ok(dim int) func(int, apitest.Request) apitest.Reply {
	return func(_ int, r apitest.Request) apitest.Reply {
		in := apitest.Strings(r.Body["input"])
		var data []map[string]any
		for i := len(in) - 1; i >= 0; i-- {
			data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": apitest.Vector(in[i], dim)})
		}
		return apitest.Reply{Body: map[string]any{"object": "list", "data": data, "model": r.Body["model"], "usage": map[string]int{"prompt_tokens": 1, "total_tokens": 1}}}
	}
}

func TestEmbedBatchesAndRequest(t *testing.T) {
	srv := apitest.New(t, ok(8))
	e, err := New(context.Background(), Config{Model: "text-embedding-3-small", BaseURL: srv.URL + "/v1/", APIKey: "sk-test", Dimension: 8, BatchSize: 2, HTTPOptions: apitest.Fast()})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Model(); got != (embed.ModelInfo{Provider: "openai", Model: "text-embedding-3-small", Dimension: 8, Normalized: true}) {
		t.Errorf("model %+v", got)
	}
	texts := []string{"a", "bb", "ccc", "dddd", "eeeee"}
	vecs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	apitest.CheckVectors(t, texts, vecs, 8)
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests for 5 texts in batches of 2, want 3", len(reqs))
	}
	r := reqs[2]
	if r.Method != http.MethodPost || r.Path != "/v1/embeddings" {
		t.Errorf("%s %s", r.Method, r.Path)
	}
	if r.Header.Get("Authorization") != "Bearer sk-test" || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("headers %v", r.Header)
	}
	if r.Body["model"] != "text-embedding-3-small" || r.Body["encoding_format"] != "float" || r.Body["dimensions"] != 8.0 {
		t.Errorf("body %v", r.Body)
	}
	if in := apitest.Strings(r.Body["input"]); len(in) != 1 || in[0] != "eeeee" {
		t.Errorf("last batch %v", in)
	}
	if vecs, err := e.Embed(context.Background(), nil); err != nil || vecs != nil || len(srv.Requests()) != 3 {
		t.Errorf("empty input made a call or failed: %v", err)
	}
}

func TestCompatibleServerProbesDimension(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	srv := apitest.New(t, ok(5))
	e, err := New(context.Background(), Config{Model: "BAAI/bge-m3", BaseURL: srv.URL + "/v1", HTTPOptions: apitest.Fast()})
	if err != nil {
		t.Fatal(err)
	}
	if e.Model().Dimension != 5 {
		t.Errorf("dimension %d, want 5 learned from the server", e.Model().Dimension)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "" {
		t.Fatalf("want one probe without a key, got %d requests", len(reqs))
	}
	if _, ok := reqs[0].Body["dimensions"]; ok {
		t.Error("dimensions sent though none was configured")
	}
}

func TestKnownDimensionNeedsNoCall(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-env")
	e, err := New(context.Background(), Config{Model: "text-embedding-3-large"})
	if err != nil {
		t.Fatal(err)
	}
	if e.Model().Dimension != 3072 {
		t.Errorf("dimension %d", e.Model().Dimension)
	}
}

func TestMissingKeyNamed(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	_, err := New(context.Background(), Config{})
	if err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Errorf("error %v does not name OPENAI_API_KEY", err)
	}
}

func TestRetryAfter429(t *testing.T) {
	okReply := ok(4)
	srv := apitest.New(t, func(n int, r apitest.Request) apitest.Reply {
		switch n {
		case 0:
			return apitest.Reply{Status: 429, Header: map[string]string{"Retry-After": "1"}, Body: `{"error":{"message":"Rate limit reached"}}`}
		case 1:
			return apitest.Reply{Status: 503, Body: `{"error":{"message":"overloaded"}}`}
		}
		return okReply(n, r)
	})
	e, err := New(context.Background(), Config{BaseURL: srv.URL, APIKey: "k", Dimension: 4, HTTPOptions: apitest.Fast()})
	if err != nil {
		t.Fatal(err)
	}
	vecs, err := e.Embed(context.Background(), []string{"x", "yy"})
	if err != nil {
		t.Fatal(err)
	}
	apitest.CheckVectors(t, []string{"x", "yy"}, vecs, 4)
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("%d requests, want 3 (429, 503, success)", n)
	}
}

func TestErrorBodySurfaced(t *testing.T) {
	srv := apitest.New(t, func(int, apitest.Request) apitest.Reply {
		return apitest.Reply{Status: 400, Body: `{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error"}}`}
	})
	e, err := New(context.Background(), Config{BaseURL: srv.URL, APIKey: "k", Dimension: 4, HTTPOptions: apitest.Fast()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Embed(context.Background(), []string{"x"})
	if err == nil || !strings.Contains(err.Error(), "maximum context length") || !strings.Contains(err.Error(), "400") {
		t.Errorf("error %v does not carry the status and body", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("a 400 was retried: %d requests", n)
	}
}

func TestRetriesGiveUp(t *testing.T) {
	srv := apitest.New(t, func(int, apitest.Request) apitest.Reply {
		return apitest.Reply{Status: 500, Body: "upstream down"}
	})
	e, err := New(context.Background(), Config{BaseURL: srv.URL, Dimension: 4, HTTPOptions: apitest.Fast()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Embed(context.Background(), []string{"x"})
	if err == nil || !strings.Contains(err.Error(), "upstream down") {
		t.Errorf("error %v", err)
	}
	if n := len(srv.Requests()); n != 4 {
		t.Errorf("%d requests, want 1 + 3 retries", n)
	}
}

func TestCancelled(t *testing.T) {
	srv := apitest.New(t, ok(4))
	e, err := New(context.Background(), Config{BaseURL: srv.URL, Dimension: 4, HTTPOptions: apitest.Fast()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Embed(ctx, []string{"x"}); !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
}
