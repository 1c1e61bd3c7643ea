package ollama_test

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
	"github.com/quarry-rag/quarry/llm/ollama"
)

func newModel(t *testing.T, url string) *ollama.Model {
	t.Helper()
	m, err := ollama.New(ollama.Config{Model: "llama3.2", BaseURL: url})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestGenerate(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/chat" || r.Method != http.MethodPost {
			t.Errorf("%s %s", r.Method, r.URL.Path)
		}
		var req map[string]any
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Fatal(err)
		}
		if req["model"] != "llama3.2" || req["stream"] != false {
			t.Errorf("request %v", req)
		}
		msgs := req["messages"].([]any)
		if len(msgs) != 4 {
			t.Fatalf("messages %v", msgs)
		}
		asst := msgs[2].(map[string]any)
		tc := asst["tool_calls"].([]any)[0].(map[string]any)["function"].(map[string]any)
		if tc["name"] != "weather" || tc["arguments"].(map[string]any)["city"] != "Paris" {
			t.Errorf("assistant tool call %v", asst)
		}
		if tool := msgs[3].(map[string]any); tool["role"] != "tool" || tool["tool_name"] != "weather" || tool["content"] != "sunny" {
			t.Errorf("tool message %v", tool)
		}
		if tools := req["tools"].([]any); len(tools) != 1 || tools[0].(map[string]any)["type"] != "function" {
			t.Errorf("tools %v", tools)
		}
		if f := req["format"].(map[string]any); f["type"] != "object" {
			t.Errorf("format %v", f)
		}
		if o := req["options"].(map[string]any); o["num_predict"] != float64(64) || o["temperature"] != 0.0 {
			t.Errorf("options %v", o)
		}
		io.WriteString(w, `{"model":"llama3.2","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":"",
			"tool_calls":[{"function":{"name":"weather","arguments":{"city":"Lyon"}}}]},"done":true,"done_reason":"stop",
			"total_duration":1,"prompt_eval_count":26,"eval_count":9}`)
	}))
	defer srv.Close()
	zero := 0.0
	resp, err := newModel(t, srv.URL).Generate(context.Background(), llm.Request{
		Messages: []llm.Message{
			llm.System("be brief"), llm.User("weather?"),
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}},
			llm.ToolResult("c1", "sunny"),
		},
		Tools:       []llm.Tool{{Name: "weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}},
		Schema:      &llm.Schema{Schema: json.RawMessage(`{"type":"object"}`)},
		MaxTokens:   64,
		Temperature: &zero,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Response{StopReason: llm.StopToolCalls, Usage: llm.Usage{InputTokens: 26, OutputTokens: 9},
		ToolCalls: []llm.ToolCall{{ID: "call_0", Name: "weather", Arguments: json.RawMessage(`{"city":"Lyon"}`)}}}
	if fmt.Sprint(resp) != fmt.Sprint(want) {
		t.Errorf("response\n got %+v\nwant %+v", resp, want)
	}
}

func ndjson(w http.ResponseWriter, lines ...string) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	for _, l := range lines {
		io.WriteString(w, l+"\n")
		w.(http.Flusher).Flush()
	}
}

func TestStream(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		json.NewDecoder(r.Body).Decode(&req)
		if req["stream"] != true {
			t.Error("stream not requested")
		}
		ndjson(w,
			`{"model":"llama3.2","created_at":"t","message":{"role":"assistant","content":"The"},"done":false}`,
			`{"model":"llama3.2","created_at":"t","message":{"role":"assistant","content":" sky [1]"},"done":false}`,
			`{"model":"llama3.2","created_at":"t","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":12,"eval_count":4}`)
	}))
	defer srv.Close()
	var texts []string
	var last llm.Event
	for ev, err := range newModel(t, srv.URL).Stream(context.Background(), llm.Request{Messages: []llm.Message{llm.User("sky?")}}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Text != "" {
			texts = append(texts, ev.Text)
		}
		last = ev
	}
	if strings.Join(texts, "|") != "The| sky [1]" || !last.Done || last.Usage != (llm.Usage{InputTokens: 12, OutputTokens: 4}) || last.StopReason != llm.StopEnd {
		t.Errorf("texts %q last %+v", texts, last)
	}
}

func TestStreamErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"error line", []string{`{"message":{"role":"assistant","content":"a"},"done":false}`, `{"error":"model runner has unexpectedly stopped"}`}, "unexpectedly stopped"},
		{"cut short", []string{`{"message":{"role":"assistant","content":"a"},"done":false}`}, "ended before"},
		{"not json", []string{`<html>`}, "not JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ndjson(w, tc.lines...) }))
			defer srv.Close()
			_, err := llm.Collect(newModel(t, srv.URL).Stream(context.Background(), llm.Request{Messages: []llm.Message{llm.User("x")}}))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v", err)
			}
		})
	}
}

func TestRateLimitRetried(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":"too many requests"}`)
			return
		}
		ndjson(w, `{"message":{"role":"assistant","content":"ok"},"done":true,"done_reason":"stop"}`)
	}))
	defer srv.Close()
	start := time.Now()
	resp, err := llm.Collect(newModel(t, srv.URL).Stream(context.Background(), llm.Request{Messages: []llm.Message{llm.User("x")}}))
	if err != nil || resp.Text != "ok" || calls.Load() != 2 {
		t.Fatalf("after a 429: %+v %v (%d calls)", resp, err, calls.Load())
	}
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Errorf("retried after %v, before Retry-After's second", d)
	}
}

func TestErrorBodySurfaced(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":"model \"nope\" not found, try pulling it first"}`)
	}))
	defer srv.Close()
	m, _ := ollama.New(ollama.Config{Model: "nope", BaseURL: srv.URL})
	_, err := m.Generate(context.Background(), llm.Request{Messages: []llm.Message{llm.User("x")}})
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || !strings.Contains(err.Error(), `model "nope" not found, try pulling it first`) {
		t.Errorf("error %v", err)
	}
	if calls.Load() != 1 {
		t.Errorf("a 404 was retried: %d calls", calls.Load())
	}
}

func TestRetryWaitIsCancellable(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := newModel(t, srv.URL).Generate(ctx, llm.Request{Messages: []llm.Message{llm.User("x")}})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Errorf("%v after %v", err, time.Since(start))
	}
}

func TestHost(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Host
		io.WriteString(w, `{"message":{"role":"assistant","content":"ok"},"done":true}`)
	}))
	defer srv.Close()
	// OLLAMA_HOST as host:port, without a scheme.
	t.Setenv(ollama.EnvHost, strings.TrimPrefix(srv.URL, "http://"))
	m, err := ollama.New(ollama.Config{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(context.Background(), llm.Request{Messages: []llm.Message{llm.User("x")}}); err != nil || got != strings.TrimPrefix(srv.URL, "http://") {
		t.Errorf("OLLAMA_HOST: %v, host %q", err, got)
	}
	for _, bad := range []string{"ftp://x", "http://"} {
		if _, err := ollama.New(ollama.Config{Model: "m", BaseURL: bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestStreamStopsCleanly(t *testing.T) {
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		ndjson(w, `{"message":{"role":"assistant","content":"first"},"done":false}`)
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
			t.Error("the client never closed the stream")
		}
	}))
	defer srv.Close()
	for ev, err := range newModel(t, srv.URL).Stream(context.Background(), llm.Request{Messages: []llm.Message{llm.User("x")}}) {
		if err != nil || ev.Text != "first" {
			t.Fatalf("%+v %v", ev, err)
		}
		break
	}
	<-done
}
