package mistral_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/llm"
	"github.com/quarry-rag/quarry/llm/mistral"
)

// fake answers /v1/chat/completions the way Mistral's API does, recording
// the last request body.
type fake struct {
	calls atomic.Int32
	body  atomic.Value // string
	fail  int32
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := f.calls.Add(1)
	b, _ := io.ReadAll(r.Body)
	f.body.Store(string(b))
	if r.URL.Path != "/v1/chat/completions" {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	if r.Header.Get("Authorization") != "Bearer m-key" {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"message":"Unauthorized","request_id":"abc"}`)
		return
	}
	if n <= f.fail {
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"object":"error","message":"Requests rate limit exceeded","type":"rate_limited","param":null,"code":"1300"}`)
		return
	}
	if strings.Contains(string(b), `"stream":true`) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"model\":\"mistral-small-latest\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n")
		io.WriteString(w, "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Paris \"},\"finish_reason\":null}]}\n\n")
		io.WriteString(w, "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"is sunny.\"},\"finish_reason\":null}]}\n\n")
		io.WriteString(w, "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"id\":\"D681PevKs\",\"function\":{\"name\":\"weather\",\"arguments\":\"{\\\"city\\\": \\\"Paris\\\"}\"},\"index\":0}]},\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":10,\"total_tokens\":16,\"completion_tokens\":6}}\n\n")
		io.WriteString(w, "data: [DONE]\n\n")
		return
	}
	io.WriteString(w, `{"id":"cmpl-1","object":"chat.completion","model":"mistral-small-latest","created":1,
		"choices":[{"index":0,"message":{"role":"assistant","content":"Paris is sunny [1].","tool_calls":null,"prefix":false},"finish_reason":"stop"}],
		"usage":{"prompt_tokens":12,"total_tokens":17,"completion_tokens":5}}`)
}

func newModel(t *testing.T, url, key string) *mistral.Model {
	t.Helper()
	m, err := mistral.New(mistral.Config{Model: "mistral-small-latest", BaseURL: url + "/v1", APIKey: key, RetryDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestGenerateSendsTheWireFormat(t *testing.T) {
	f := &fake{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	req := llm.Request{
		Messages: []llm.Message{
			llm.System("be brief"), llm.User("weather?"),
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "D681PevKs", Name: "weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}},
			llm.ToolResult("D681PevKs", "sunny"),
		},
		Tools:      []llm.Tool{{Name: "weather"}},
		ToolChoice: llm.ToolChoiceRequired,
		Schema:     &llm.Schema{Name: "reply", Schema: json.RawMessage(`{"type":"object"}`)},
		MaxTokens:  64,
	}
	resp, err := newModel(t, srv.URL, "m-key").Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "Paris is sunny [1]." || resp.StopReason != llm.StopEnd || resp.Usage != (llm.Usage{InputTokens: 12, OutputTokens: 5}) {
		t.Errorf("response %+v", resp)
	}
	var sent map[string]any
	if err := json.Unmarshal([]byte(f.body.Load().(string)), &sent); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(sent)
	want := `{"max_tokens":64,"messages":[{"content":"be brief","role":"system"},{"content":"weather?","role":"user"},` +
		`{"content":"","role":"assistant","tool_calls":[{"function":{"arguments":"{\"city\":\"Paris\"}","name":"weather"},"id":"D681PevKs","type":"function"}]},` +
		`{"content":"sunny","name":"weather","role":"tool","tool_call_id":"D681PevKs"}],"model":"mistral-small-latest",` +
		`"response_format":{"json_schema":{"name":"reply","schema":{"type":"object"},"strict":true},"type":"json_schema"},` +
		`"tool_choice":"any","tools":[{"function":{"name":"weather","parameters":{"properties":{},"type":"object"}},"type":"function"}]}`
	if string(got) != want {
		t.Errorf("request\n%s\nwant\n%s", got, want)
	}
}

func TestStream(t *testing.T) {
	f := &fake{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	resp, err := llm.Collect(newModel(t, srv.URL, "m-key").Stream(context.Background(), llm.Request{Messages: []llm.Message{llm.User("hi")}}))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "Paris is sunny." || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].ID != "D681PevKs" ||
		string(resp.ToolCalls[0].Arguments) != `{"city": "Paris"}` || resp.StopReason != llm.StopToolCalls ||
		resp.Usage != (llm.Usage{InputTokens: 10, OutputTokens: 6}) {
		t.Errorf("streamed %+v", resp)
	}
}

func TestErrorsAndRetries(t *testing.T) {
	for _, tc := range []struct {
		name      string
		key       string
		fail      int32
		wantCalls int32
		wantCode  int
		wantMsg   string
	}{
		{name: "429 retried then success", key: "m-key", fail: 1, wantCalls: 2},
		{name: "429 until retries run out", key: "m-key", fail: 10, wantCalls: 3, wantCode: 429, wantMsg: "Requests rate limit exceeded"},
		{name: "401 not retried", key: "bad", wantCalls: 1, wantCode: 401, wantMsg: "Unauthorized"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fake{fail: tc.fail}
			srv := httptest.NewServer(f)
			defer srv.Close()
			m := newModel(t, srv.URL, tc.key)
			for _, stream := range []bool{false, true} {
				f.calls.Store(0)
				req := llm.Request{Messages: []llm.Message{llm.User("hi")}}
				var err error
				if stream {
					_, err = llm.Collect(m.Stream(context.Background(), req))
				} else {
					_, err = m.Generate(context.Background(), req)
				}
				if f.calls.Load() != tc.wantCalls {
					t.Errorf("stream %v: %d calls, want %d", stream, f.calls.Load(), tc.wantCalls)
				}
				var ae *llm.APIError
				if tc.wantCode == 0 {
					if err != nil {
						t.Errorf("stream %v: %v", stream, err)
					}
				} else if !errors.As(err, &ae) || ae.StatusCode != tc.wantCode || ae.Message != tc.wantMsg || ae.Provider != "mistral" {
					t.Errorf("stream %v: error %v", stream, err)
				}
			}
		})
	}
}

func TestNewNeedsKey(t *testing.T) {
	t.Setenv(mistral.EnvAPIKey, "")
	if _, err := mistral.New(mistral.Config{Model: "m"}); !errors.Is(err, llm.ErrNoAPIKey) || !strings.Contains(err.Error(), mistral.EnvAPIKey) {
		t.Errorf("no key: %v", err)
	}
}
