package llm_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/llm"
)

func TestParseSpec(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    llm.Spec
		wantErr string
	}{
		{in: "openai:gpt-4o-mini", want: llm.Spec{Provider: "openai", Model: "gpt-4o-mini"}},
		{in: "anthropic:claude-sonnet-4-5", want: llm.Spec{Provider: "anthropic", Model: "claude-sonnet-4-5"}},
		{in: "ollama:llama3.1:8b", want: llm.Spec{Provider: "ollama", Model: "llama3.1:8b"}},
		{in: "ollama:qwen2.5@http://gpu-box:11434", want: llm.Spec{Provider: "ollama", Model: "qwen2.5", BaseURL: "http://gpu-box:11434"}},
		{in: "openai-compatible:qwen@http://localhost:8000/v1", want: llm.Spec{Provider: "openai-compatible", Model: "qwen", BaseURL: "http://localhost:8000/v1"}},
		{in: "gpt-4o", wantErr: "provider:model"},
		{in: "mistral:mistral-large-latest", want: llm.Spec{Provider: "mistral", Model: "mistral-large-latest"}},
		{in: "gemini:gemini-2.5-flash", want: llm.Spec{Provider: "gemini", Model: "gemini-2.5-flash"}},
		{in: "cohere:command", wantErr: `unknown provider "cohere"`},
		{in: "openai:", wantErr: "model name is missing"},
		{in: "openai-compatible:qwen", wantErr: "needs the server's base URL"},
		{in: "openai-compatible:qwen@localhost:8000", wantErr: "absolute http"},
	} {
		got, err := llm.ParseSpec(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want || got.String() != tc.in {
			t.Errorf("%q: %+v %v", tc.in, got, err)
		}
	}
}

func TestBodyMessage(t *testing.T) {
	for body, want := range map[string]string{
		`{"error":{"message":"bad model","type":"invalid_request_error"}}`:            "bad model",
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`: "Overloaded",
		`{"error":"model not found"}`:                                                 "model not found",
		`{"message":"nope"}`:                                                          "nope",
		"  gateway timeout\n":                                                         "gateway timeout",
	} {
		if got := llm.BodyMessage([]byte(body)); got != want {
			t.Errorf("%s: %q, want %q", body, got, want)
		}
	}
	if got := llm.BodyMessage([]byte(strings.Repeat("x", 900))); len(got) > 510 {
		t.Errorf("long body kept whole: %d bytes", len(got))
	}
	err := error(&llm.APIError{Provider: "openai", StatusCode: 429, Message: "slow down"})
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || err.Error() != "openai: HTTP 429: slow down" {
		t.Errorf("%v", err)
	}
}
