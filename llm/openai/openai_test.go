package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/llm"
	"github.com/quarry-rag/quarry/llm/openai"
)

// chatRequest is the part of a Chat Completions request the tests check.
type chatRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name       string         `json:"name"`
			Parameters map[string]any `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	ToolChoice     json.RawMessage `json:"tool_choice"`
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Name   string         `json:"name"`
			Schema map[string]any `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxCompletionTokens int `json:"max_completion_tokens"`
}

func decode(t *testing.T, r *http.Request) chatRequest {
	t.Helper()
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		t.Errorf("request body: %v", err)
	}
	return req
}

func newModel(t *testing.T, url string) *openai.Model {
	t.Helper()
	m, err := openai.New(openai.Config{Model: "test-model", BaseURL: url, APIKey: "sk-test"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func fullRequest() llm.Request {
	return llm.Request{
		Messages: []llm.Message{
			llm.System("be brief"),
			llm.User("weather in Paris?"),
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}},
			llm.ToolResult("call_1", "sunny"),
		},
		Tools:      []llm.Tool{{Name: "weather", Description: "current weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}},
		ToolChoice: llm.ToolChoiceAuto,
		Schema:     &llm.Schema{Name: "reply", Schema: json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}}}`)},
		MaxTokens:  100,
	}
}

func TestGenerate(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
			t.Errorf("request %s %s", r.Method, r.URL.Path)
		}
		if got := r.Header.Get("Authorization"); got != "Bearer sk-test" {
			t.Errorf("Authorization %q", got)
		}
		req := decode(t, r)
		if req.Model != "test-model" || req.Stream || len(req.Messages) != 4 {
			t.Errorf("request %+v", req)
		}
		roles := []string{}
		for _, m := range req.Messages {
			roles = append(roles, m.Role)
		}
		if strings.Join(roles, ",") != "system,user,assistant,tool" {
			t.Errorf("roles %v", roles)
		}
		if tc := req.Messages[2].ToolCalls; len(tc) != 1 || tc[0].ID != "call_1" || tc[0].Type != "function" || tc[0].Function.Arguments != `{"city":"Paris"}` {
			t.Errorf("assistant tool calls %+v", tc)
		}
		if req.Messages[3].ToolCallID != "call_1" {
			t.Errorf("tool message %+v", req.Messages[3])
		}
		if len(req.Tools) != 1 || req.Tools[0].Type != "function" || req.Tools[0].Function.Name != "weather" || req.Tools[0].Function.Parameters["type"] != "object" {
			t.Errorf("tools %+v", req.Tools)
		}
		if string(req.ToolChoice) != `"auto"` {
			t.Errorf("tool_choice %s", req.ToolChoice)
		}
		if rf := req.ResponseFormat; rf == nil || rf.Type != "json_schema" || rf.JSONSchema.Name != "reply" || rf.JSONSchema.Schema["type"] != "object" {
			t.Errorf("response_format %+v", rf)
		}
		if req.MaxCompletionTokens != 100 {
			t.Errorf("max_completion_tokens %d", req.MaxCompletionTokens)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"test-model",
			"choices":[{"index":0,"finish_reason":"tool_calls","logprobs":null,"message":{"role":"assistant","content":"{\"answer\":\"sunny\"}","refusal":null,
			"tool_calls":[{"id":"call_2","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Lyon\"}"}}]}}],
			"usage":{"prompt_tokens":42,"completion_tokens":7,"total_tokens":49}}`)
	}))
	defer srv.Close()
	resp, err := newModel(t, srv.URL+"/v1").Generate(context.Background(), fullRequest())
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Response{Text: `{"answer":"sunny"}`, StopReason: llm.StopToolCalls, Usage: llm.Usage{InputTokens: 42, OutputTokens: 7},
		ToolCalls: []llm.ToolCall{{ID: "call_2", Name: "weather", Arguments: json.RawMessage(`{"city":"Lyon"}`)}}}
	if fmt.Sprint(resp) != fmt.Sprint(want) {
		t.Errorf("response\n got %+v\nwant %+v", resp, want)
	}
}

// sse writes server-sent events as the API does, one data line per chunk.
func sse(w http.ResponseWriter, chunks ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, c := range chunks {
		fmt.Fprintf(w, "data: %s\n\n", c)
		w.(http.Flusher).Flush()
	}
}

func chunk(delta string, finish string) string {
	fr := "null"
	if finish != "" {
		fr = `"` + finish + `"`
	}
	return `{"id":"c","object":"chat.completion.chunk","created":1,"model":"test-model","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + fr + `}]}`
}

func TestStream(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := decode(t, r)
		if !req.Stream || req.StreamOptions == nil || !req.StreamOptions.IncludeUsage {
			t.Errorf("stream request %+v", req)
		}
		sse(w,
			chunk(`{"role":"assistant","content":""}`, ""),
			chunk(`{"content":"Hel"}`, ""),
			chunk(`{"content":"lo [1]"}`, ""),
			chunk(`{"tool_calls":[{"index":0,"id":"call_9","type":"function","function":{"name":"lookup","arguments":"{\"q\":"}}]}`, ""),
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"x\"}"}}]}`, ""),
			chunk(`{}`, "stop"),
			`{"id":"c","object":"chat.completion.chunk","created":1,"model":"test-model","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13}}`,
			"[DONE]")
	}))
	defer srv.Close()
	var texts []string
	var events []llm.Event
	for ev, err := range newModel(t, srv.URL).Stream(context.Background(), llm.Request{Messages: []llm.Message{llm.User("hi")}}) {
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, ev)
		if ev.Text != "" {
			texts = append(texts, ev.Text)
		}
	}
	if strings.Join(texts, "|") != "Hel|lo [1]" {
		t.Errorf("text events %q", texts)
	}
	last := events[len(events)-1]
	if !last.Done || last.Usage != (llm.Usage{InputTokens: 10, OutputTokens: 3}) || last.StopReason != llm.StopEnd {
		t.Errorf("last event %+v", last)
	}
	tc := events[len(events)-2].ToolCall
	if tc == nil || tc.ID != "call_9" || tc.Name != "lookup" || string(tc.Arguments) != `{"q":"x"}` {
		t.Errorf("tool call %+v", tc)
	}
}

func TestRateLimitRetried(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	defer srv.Close()
	start := time.Now()
	resp, err := newModel(t, srv.URL).Generate(context.Background(), llm.Request{Messages: []llm.Message{llm.User("hi")}})
	if err != nil || resp.Text != "ok" || calls.Load() != 2 {
		t.Fatalf("after a 429: %+v %v (%d calls)", resp, err, calls.Load())
	}
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Errorf("retried after %v, before Retry-After's second", d)
	}
}

func TestErrorBodySurfaced(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
		status           int
	}{
		{"json", `{"error":{"message":"The model 'nope' does not exist","type":"invalid_request_error","code":"model_not_found"}}`, "The model 'nope' does not exist", 404},
		{"plain", `upstream exploded`, "upstream exploded", 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			m, _ := openai.New(openai.Config{Model: "nope", BaseURL: srv.URL, APIKey: "k", MaxRetries: -1})
			_, err := m.Generate(context.Background(), llm.Request{Messages: []llm.Message{llm.User("hi")}})
			var apiErr *llm.APIError
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v", err)
			}
			// Streams report the same error.
			_, err = llm.Collect(m.Stream(context.Background(), llm.Request{Messages: []llm.Message{llm.User("hi")}}))
			if !errors.As(err, &apiErr) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("stream error %v", err)
			}
		})
	}
}

func TestMissingKey(t *testing.T) {
	t.Setenv(openai.EnvAPIKey, "")
	_, err := openai.New(openai.Config{Model: "gpt-4o-mini"})
	if !errors.Is(err, llm.ErrNoAPIKey) || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Errorf("missing key: %v", err)
	}
	// A compatible server may need no key, and then none is sent.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := r.Header.Get("Authorization"); h != "" {
			t.Errorf("Authorization %q sent without a key", h)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"ok"}}]}`)
	}))
	defer srv.Close()
	m, err := openai.New(openai.Config{Model: "local", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := m.Generate(context.Background(), llm.Request{Messages: []llm.Message{llm.User("hi")}}); err != nil || r.Text != "ok" {
		t.Errorf("keyless compatible server: %+v %v", r, err)
	}
}

// TestStreamStopsCleanly breaks out of a stream that the server keeps open:
// the connection must close, so the handler returns.
func TestStreamStopsCleanly(t *testing.T) {
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		sse(w, chunk(`{"content":"first"}`, ""))
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
			t.Error("the client never closed the stream")
		}
	}))
	defer srv.Close()
	for ev, err := range newModel(t, srv.URL).Stream(context.Background(), llm.Request{Messages: []llm.Message{llm.User("hi")}}) {
		if err != nil || ev.Text != "first" {
			t.Fatalf("%+v %v", ev, err)
		}
		break
	}
	<-done

	// Cancelling the context ends a stream with the context's error.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done = make(chan struct{})
	var err error
	for ev, e := range newModel(t, srv.URL).Stream(ctx, llm.Request{Messages: []llm.Message{llm.User("hi")}}) {
		if e != nil {
			err = e
			break
		}
		if ev.Text == "first" {
			cancel()
		}
	}
	<-done
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled stream ended with %v", err)
	}
}

func TestRequestChecked(t *testing.T) {
	m := newModel(t, "http://127.0.0.1:1")
	for _, req := range []llm.Request{
		{},
		{Messages: []llm.Message{{Role: "robot", Content: "x"}}},
		{Messages: []llm.Message{{Role: llm.RoleTool, Content: "x"}}},
		{Messages: []llm.Message{llm.User("x")}, ToolChoice: "missing"},
		{Messages: []llm.Message{llm.User("x")}, Schema: &llm.Schema{Schema: json.RawMessage(`[1]`)}},
	} {
		if _, err := m.Generate(context.Background(), req); err == nil || strings.Contains(err.Error(), "connect") {
			t.Errorf("%+v: %v", req, err)
		}
	}
}
