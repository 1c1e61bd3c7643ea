package bedrock

import (
	"context"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/embed/internal/apitest"
)

func setAWS(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_DEFAULT_REGION", "")
}

func okTitan(dim int) func(int, apitest.Request) apitest.Reply {
	return func(_ int, r apitest.Request) apitest.Reply {
		s, _ := r.Body["inputText"].(string)
		return apitest.Reply{Body: map[string]any{"embedding": apitest.Vector(s, dim), "inputTextTokenCount": 1}}
	}
}

func okCohere(dim int) func(int, apitest.Request) apitest.Reply {
	return func(_ int, r apitest.Request) apitest.Reply {
		var vecs [][]float32
		for _, s := range apitest.Strings(r.Body["texts"]) {
			vecs = append(vecs, apitest.Vector(s, dim))
		}
		return apitest.Reply{Body: map[string]any{"id": "x", "embeddings": vecs, "response_type": "embeddings_floats"}}
	}
}

func TestTitan(t *testing.T) {
	setAWS(t)
	srv := apitest.New(t, okTitan(512))
	e, err := New(context.Background(), Config{BaseURL: srv.URL, Dimension: 512, HTTPOptions: apitest.Fast()})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Model(); got != (embed.ModelInfo{Provider: "bedrock", Model: "amazon.titan-embed-text-v2:0", Dimension: 512, Normalized: true}) {
		t.Errorf("model %+v", got)
	}
	texts := []string{"a", "bb", "ccc"}
	vecs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	apitest.CheckVectors(t, texts, vecs, 512)
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want one per text", len(reqs))
	}
	r := reqs[1]
	if r.EscapedPath != "/model/amazon.titan-embed-text-v2%3A0/invoke" || r.Body["inputText"] != "bb" || r.Body["dimensions"] != 512.0 || r.Body["normalize"] != true {
		t.Errorf("request %s %v", r.EscapedPath, r.Body)
	}
	auth := r.Header.Get("Authorization")
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDTEST/") || !strings.Contains(auth, "/us-east-1/bedrock/aws4_request") || r.Header.Get("X-Amz-Date") == "" {
		t.Errorf("not signed: %q", auth)
	}
}

func TestCohereDocumentsAndQueries(t *testing.T) {
	setAWS(t)
	srv := apitest.New(t, okCohere(1024))
	e, err := New(context.Background(), Config{Model: "cohere.embed-english-v3", BaseURL: srv.URL, HTTPOptions: apitest.Fast()})
	if err != nil {
		t.Fatal(err)
	}
	docs := make([]string, 100)
	for i := range docs {
		docs[i] = strings.Repeat("x", i%5)
	}
	vecs, err := e.Embed(context.Background(), docs)
	if err != nil {
		t.Fatal(err)
	}
	apitest.CheckVectors(t, docs, vecs, 1024)
	if _, err := embed.EmbedQuery(context.Background(), e, []string{"q"}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 2 for 100 documents and 1 for the query", len(reqs))
	}
	for i, want := range []string{"search_document", "search_document", "search_query"} {
		if got := reqs[i].Body["input_type"]; got != want {
			t.Errorf("request %d: input_type %v, want %s", i, got, want)
		}
	}
}

func TestRetryAndErrorBody(t *testing.T) {
	setAWS(t)
	okReply := okTitan(4)
	srv := apitest.New(t, func(n int, r apitest.Request) apitest.Reply {
		switch {
		case n == 0:
			return apitest.Reply{Status: 429, Header: map[string]string{"Retry-After": "1"}, Body: `{"message":"Too many requests, please wait before trying again."}`}
		case r.Body["inputText"] == "bad":
			return apitest.Reply{Status: 403, Body: `{"message":"You don't have access to the model with the specified model ID."}`}
		}
		return okReply(n, r)
	})
	e, err := New(context.Background(), Config{BaseURL: srv.URL, Dimension: 4, HTTPOptions: apitest.Fast()})
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
	if _, err := e.Embed(context.Background(), []string{"bad"}); err == nil || !strings.Contains(err.Error(), "access to the model") {
		t.Errorf("error %v does not carry the body", err)
	}
}

func TestMissingCredentialsNamed(t *testing.T) {
	setAWS(t)
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	if _, err := New(context.Background(), Config{}); err == nil || !strings.Contains(err.Error(), "AWS_SECRET_ACCESS_KEY") {
		t.Errorf("error %v", err)
	}
	t.Setenv("AWS_REGION", "")
	if _, err := New(context.Background(), Config{}); err == nil || !strings.Contains(err.Error(), "AWS_REGION") {
		t.Errorf("error %v", err)
	}
}
