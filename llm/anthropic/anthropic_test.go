package anthropic_test

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
	"github.com/quarry-rag/quarry/llm/anthropic"
)

// messagesRequest is the part of a Messages API request the tests check.
type messagesRequest struct {
	Model     string `json:"model"`
	MaxTokens int    `json:"max_tokens"`
	Stream    bool   `json:"stream"`
	System    []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"system"`
	Messages []struct {
		Role    string `json:"role"`
		Content []struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Input     json.RawMessage `json:"input"`
			ToolUseID string          `json:"tool_use_id"`
		} `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		InputSchema map[string]any `json:"input_schema"`
	} `json:"tools"`
	ToolChoice   map[string]any `json:"tool_choice"`
	OutputConfig *struct {
		Format struct {
			Type   string         `json:"type"`
			Schema map[string]any `json:"schema"`
		} `json:"format"`
	} `json:"output_config"`
	Temperature *float64 `json:"temperature"`
}

// apiKey is the key a request carries: the API takes it as x-api-key or,
// as this SDK sends it, as a bearer token.
func apiKey(r *http.Request) string {
	if k := r.Header.Get("X-Api-Key"); k != "" {
		return k
	}
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
}

func newModel(t *testing.T, url string) *anthropic.Model {
	t.Helper()
	m, err := anthropic.New(anthropic.Config{Model: "claude-test", BaseURL: url, APIKey: "sk-ant-test"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestGenerate(t *testing.T) {
	temp := 0.2
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/messages" || apiKey(r) != "sk-ant-test" || r.Header.Get("Anthropic-Version") == "" {
			t.Errorf("request %s key %q version %q", r.URL.Path, apiKey(r), r.Header.Get("Anthropic-Version"))
		}
		var req messagesRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Fatal(err)
		}
		if req.Model != "claude-test" || req.MaxTokens != anthropic.DefaultMaxTokens || req.Stream {
			t.Errorf("request %+v", req)
		}
		if len(req.System) != 1 || req.System[0].Text != "be brief" {
			t.Errorf("system %+v", req.System)
		}
		// user, assistant (text + tool_use), user (two tool results merged).
		if len(req.Messages) != 3 || req.Messages[0].Role != "user" || req.Messages[1].Role != "assistant" || req.Messages[2].Role != "user" {
			t.Fatalf("messages %+v", req.Messages)
		}
		a := req.Messages[1].Content
		if len(a) != 2 || a[0].Type != "text" || a[1].Type != "tool_use" || a[1].ID != "toolu_1" || a[1].Name != "weather" || string(a[1].Input) != `{"city":"Paris"}` {
			t.Errorf("assistant turn %+v", a)
		}
		u := req.Messages[2].Content
		if len(u) != 2 || u[0].Type != "tool_result" || u[0].ToolUseID != "toolu_1" || u[1].ToolUseID != "toolu_2" {
			t.Errorf("tool results %+v", u)
		}
		if len(req.Tools) != 1 || req.Tools[0].Name != "weather" || req.Tools[0].InputSchema["type"] != "object" || req.Tools[0].InputSchema["properties"] == nil {
			t.Errorf("tools %+v", req.Tools)
		}
		if req.ToolChoice["type"] != "tool" || req.ToolChoice["name"] != "weather" {
			t.Errorf("tool_choice %v", req.ToolChoice)
		}
		if oc := req.OutputConfig; oc == nil || oc.Format.Type != "json_schema" || oc.Format.Schema["type"] != "object" {
			t.Errorf("output_config %+v", oc)
		}
		if req.Temperature == nil || *req.Temperature != temp {
			t.Errorf("temperature %v", req.Temperature)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test",
			"content":[{"type":"text","text":"It is "},{"type":"text","text":"sunny [1]."},
			{"type":"tool_use","id":"toolu_3","name":"weather","input":{"city":"Lyon"}}],
			"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":30,"output_tokens":12}}`)
	}))
	defer srv.Close()
	req := llm.Request{
		Messages: []llm.Message{
			llm.System("be brief"),
			llm.User("weather?"),
			{Role: llm.RoleAssistant, Content: "checking", ToolCalls: []llm.ToolCall{{ID: "toolu_1", Name: "weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}},
			llm.ToolResult("toolu_1", "sunny"),
			llm.ToolResult("toolu_2", "n/a"),
		},
		Tools:       []llm.Tool{{Name: "weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}},
		ToolChoice:  "weather",
		Schema:      &llm.Schema{Schema: json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}}}`)},
		Temperature: &temp,
	}
	resp, err := newModel(t, srv.URL).Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Response{Text: "It is sunny [1].", StopReason: llm.StopToolCalls, Usage: llm.Usage{InputTokens: 30, OutputTokens: 12},
		ToolCalls: []llm.ToolCall{{ID: "toolu_3", Name: "weather", Arguments: json.RawMessage(`{"city":"Lyon"}`)}}}
	if fmt.Sprint(resp) != fmt.Sprint(want) {
		t.Errorf("response\n got %+v\nwant %+v", resp, want)
	}
}

// events writes server-sent events as the Messages API does: an event line
// naming the type, then its data.
func events(w http.ResponseWriter, evs ...[2]string) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, e := range evs {
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e[0], e[1])
		w.(http.Flusher).Flush()
	}
}

func TestStream(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req messagesRequest
		json.NewDecoder(r.Body).Decode(&req)
		if !req.Stream {
			t.Error("stream not requested")
		}
		events(w,
			[2]string{"message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-test","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"output_tokens":1}}}`},
			[2]string{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
			[2]string{"ping", `{"type":"ping"}`},
			[2]string{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`},
			[2]string{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" world [2]"}}`},
			[2]string{"content_block_stop", `{"type":"content_block_stop","index":0}`},
			[2]string{"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_9","name":"lookup","input":{}}}`},
			[2]string{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"q\": "}}`},
			[2]string{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"x\"}"}}`},
			[2]string{"content_block_stop", `{"type":"content_block_stop","index":1}`},
			[2]string{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}`},
			[2]string{"message_stop", `{"type":"message_stop"}`},
		)
	}))
	defer srv.Close()
	var texts []string
	var evs []llm.Event
	for ev, err := range newModel(t, srv.URL).Stream(context.Background(), llm.Request{Messages: []llm.Message{llm.User("hi")}}) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
		if ev.Text != "" {
			texts = append(texts, ev.Text)
		}
	}
	if strings.Join(texts, "|") != "Hello| world [2]" {
		t.Errorf("texts %q", texts)
	}
	last := evs[len(evs)-1]
	if !last.Done || last.Usage != (llm.Usage{InputTokens: 25, OutputTokens: 15}) || last.StopReason != llm.StopEnd {
		t.Errorf("last %+v", last)
	}
	tc := evs[len(evs)-2].ToolCall
	if tc == nil || tc.ID != "toolu_9" || tc.Name != "lookup" || string(tc.Arguments) != `{"q": "x"}` {
		t.Errorf("tool call %+v", tc)
	}
}

func TestStreamErrorEvent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		events(w,
			[2]string{"message_start", `{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"model":"c","usage":{"input_tokens":1,"output_tokens":1}}}`},
			[2]string{"error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`})
	}))
	defer srv.Close()
	_, err := llm.Collect(newModel(t, srv.URL).Stream(context.Background(), llm.Request{Messages: []llm.Message{llm.User("hi")}}))
	if err == nil || !strings.Contains(err.Error(), "Overloaded") {
		t.Errorf("error event: %v", err)
	}
}

func TestRateLimitRetried(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your rate limit"}}`)
			return
		}
		io.WriteString(w, `{"id":"m","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`)
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
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: must be at most 8192"}}`)
	}))
	defer srv.Close()
	m, _ := anthropic.New(anthropic.Config{Model: "c", BaseURL: srv.URL, APIKey: "k", MaxRetries: -1})
	_, err := m.Generate(context.Background(), llm.Request{Messages: []llm.Message{llm.User("hi")}})
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(err.Error(), "max_tokens: must be at most 8192") {
		t.Errorf("error %v", err)
	}
	_, err = llm.Collect(m.Stream(context.Background(), llm.Request{Messages: []llm.Message{llm.User("hi")}}))
	if !strings.Contains(fmt.Sprint(err), "must be at most 8192") {
		t.Errorf("stream error %v", err)
	}
}

func TestMissingKey(t *testing.T) {
	t.Setenv(anthropic.EnvAPIKey, "")
	_, err := anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5"})
	if !errors.Is(err, llm.ErrNoAPIKey) || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Errorf("missing key: %v", err)
	}
	t.Setenv(anthropic.EnvAPIKey, "from-env")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if apiKey(r) != "from-env" {
			t.Errorf("key %q", apiKey(r))
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"m","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`)
	}))
	defer srv.Close()
	m, err := anthropic.New(anthropic.Config{Model: "c", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(context.Background(), llm.Request{Messages: []llm.Message{llm.User("hi")}}); err != nil {
		t.Error(err)
	}
}

func TestStreamStopsCleanly(t *testing.T) {
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		events(w, [2]string{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"first"}}`})
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
}
