package ollama

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/embed/internal/apitest"
)

func ok(dim int) func(int, apitest.Request) apitest.Reply {
	return func(_ int, r apitest.Request) apitest.Reply {
		var vecs [][]float32
		for _, s := range apitest.Strings(r.Body["input"]) {
			vecs = append(vecs, apitest.Vector(s, dim))
		}
		return apitest.Reply{Body: map[string]any{"model": r.Body["model"], "embeddings": vecs, "total_duration": 1, "prompt_eval_count": 1}}
	}
}

func TestEmbedBatchesAndRequest(t *testing.T) {
	srv := apitest.New(t, ok(768))
	e, err := New(context.Background(), Config{Model: "nomic-embed-text", Host: srv.URL, BatchSize: 2, HTTPOptions: apitest.Fast()})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Model(); got != (embed.ModelInfo{Provider: "ollama", Model: "nomic-embed-text", Dimension: 768, Normalized: true}) {
		t.Errorf("model %+v", got)
	}
	if len(srv.Requests()) != 0 {
		t.Error("a known model's dimension was probed")
	}
	texts := []string{"a", "bb", "ccc", "dddd", "eeeee"}
	vecs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	apitest.CheckVectors(t, texts, vecs, 768)
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	r := reqs[0]
	if r.Path != "/api/embed" || r.Body["model"] != "nomic-embed-text" || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("request %+v", r)
	}
	if in := apitest.Strings(r.Body["input"]); len(in) != 2 || in[0] != "a" || in[1] != "bb" {
		t.Errorf("input %v", in)
	}
	if _, ok := r.Body["dimensions"]; ok {
		t.Error("dimensions sent though none was configured")
	}
}

func TestHostFromEnvironmentAndProbe(t *testing.T) {
	srv := apitest.New(t, ok(3))
	t.Setenv("OLLAMA_HOST", strings.TrimPrefix(srv.URL, "http://"))
	e, err := New(context.Background(), Config{Model: "hf.co/org/model:Q8_0", HTTPOptions: apitest.Fast()})
	if err != nil {
		t.Fatal(err)
	}
	if e.Model().Dimension != 3 || len(srv.Requests()) != 1 {
		t.Errorf("dimension %d after %d requests, want 3 after one probe", e.Model().Dimension, len(srv.Requests()))
	}
}

func TestRetryAfter429(t *testing.T) {
	okReply := ok(4)
	srv := apitest.New(t, func(n int, r apitest.Request) apitest.Reply {
		if n == 0 {
			return apitest.Reply{Status: 429, Header: map[string]string{"Retry-After": "2"}, Body: `{"error":"server busy"}`}
		}
		return okReply(n, r)
	})
	e, err := New(context.Background(), Config{Model: "m", Host: srv.URL, Dimension: 4, HTTPOptions: apitest.Fast()})
	if err != nil {
		t.Fatal(err)
	}
	vecs, err := e.Embed(context.Background(), []string{"x"})
	if err != nil {
		t.Fatal(err)
	}
	apitest.CheckVectors(t, []string{"x"}, vecs, 4)
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
	if srv.Requests()[0].Body["dimensions"] != 4.0 {
		t.Error("configured dimension not requested")
	}
}

func TestErrorBodySurfaced(t *testing.T) {
	srv := apitest.New(t, func(int, apitest.Request) apitest.Reply {
		return apitest.Reply{Status: 404, Body: `{"error":"model \"nomic-embed-txt\" not found, try pulling it first"}`}
	})
	_, err := New(context.Background(), Config{Model: "nomic-embed-txt", Host: srv.URL, HTTPOptions: apitest.Fast()})
	if err == nil || !strings.Contains(err.Error(), "try pulling it first") {
		t.Errorf("error %v does not carry the body", err)
	}
}

func TestWrongDimensionRefused(t *testing.T) {
	srv := apitest.New(t, ok(5))
	e, err := New(context.Background(), Config{Model: "all-minilm", Host: srv.URL, HTTPOptions: apitest.Fast()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Embed(context.Background(), []string{"x"}); err == nil || !strings.Contains(err.Error(), "dimension 5") {
		t.Errorf("error %v", err)
	}
}

func TestCancelled(t *testing.T) {
	srv := apitest.New(t, ok(4))
	e, err := New(context.Background(), Config{Host: srv.URL, Dimension: 4})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Embed(ctx, []string{"x"}); !errors.Is(err, context.Canceled) {
		t.Errorf("error %v", err)
	}
}
