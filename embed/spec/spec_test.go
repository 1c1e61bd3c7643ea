package spec

import (
	"context"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/embed/internal/apitest"
)

func TestParse(t *testing.T) {
	for s, want := range map[string]Spec{
		"hash":                                     {Provider: "hash"},
		"hash:256":                                 {Provider: "hash", Dimension: 256},
		"openai":                                   {Provider: "openai"},
		"openai:text-embedding-3-small":            {Provider: "openai", Model: "text-embedding-3-small"},
		"openai:text-embedding-3-large/1024":       {Provider: "openai", Model: "text-embedding-3-large", Dimension: 1024},
		"openai:BAAI/bge-m3@http://h:8000/v1":      {Provider: "openai", Model: "BAAI/bge-m3", URL: "http://h:8000/v1"},
		"openai:BAAI/bge-m3/512@http://h:8000":     {Provider: "openai", Model: "BAAI/bge-m3", Dimension: 512, URL: "http://h:8000"},
		"ollama:hf.co/org/model:Q8_0":              {Provider: "ollama", Model: "hf.co/org/model:Q8_0"},
		"ollama:nomic-embed-text@gpu:11434":        {Provider: "ollama", Model: "nomic-embed-text", URL: "gpu:11434"},
		"gemini:gemini-embedding-001/768":          {Provider: "gemini", Model: "gemini-embedding-001", Dimension: 768},
		"bedrock:amazon.titan-embed-text-v2:0/512": {Provider: "bedrock", Model: "amazon.titan-embed-text-v2:0", Dimension: 512},
		"static:/m/potion@2/256":                   {Provider: "static", Model: "/m/potion@2/256"},
	} {
		got, err := Parse(s)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "hash:big", "openai:m/0", "openai:m@", "static"} {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) accepted", s)
		}
	}
}

func TestOpen(t *testing.T) {
	srv := apitest.New(t, func(_ int, r apitest.Request) apitest.Reply {
		var vecs [][]float32
		for _, s := range apitest.Strings(r.Body["input"]) {
			vecs = append(vecs, apitest.Vector(s, 6))
		}
		return apitest.Reply{Body: map[string]any{"embeddings": vecs}}
	})
	e, err := Open(context.Background(), "ollama:my-model@"+srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Model(); got != (embed.ModelInfo{Provider: "ollama", Model: "my-model", Dimension: 6, Normalized: true}) {
		t.Errorf("model %+v", got)
	}
	if e, err := Open(context.Background(), "hash:128"); err != nil || e.Model().Dimension != 128 {
		t.Errorf("hash:128: %v", err)
	}
	if _, err := Open(context.Background(), "jina:jina-embeddings-v3"); err == nil || !strings.Contains(err.Error(), "available") {
		t.Errorf("unknown provider: %v", err)
	}
	t.Setenv("COHERE_API_KEY", "")
	if _, err := Open(context.Background(), "cohere:embed-v4.0"); err == nil || !strings.Contains(err.Error(), "COHERE_API_KEY") {
		t.Errorf("missing key: %v", err)
	}
}
