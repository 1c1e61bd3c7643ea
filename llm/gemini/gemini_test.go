package gemini_test

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
	"github.com/quarry-rag/quarry/llm/gemini"
)

func newModel(t *testing.T, url string) *gemini.Model {
	t.Helper()
	m, err := gemini.New(gemini.Config{Model: "gemini-2.5-flash", BaseURL: url, APIKey: "g-key", RetryDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// fake answers generateContent and streamGenerateContent?alt=sse the way
// the Gemini API does, recording the last request body.
type fake struct {
	calls atomic.Int32
	body  atomic.Value // string
	fail  int32        // first fail calls answer 503
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := f.calls.Add(1)
	b, _ := io.ReadAll(r.Body)
	f.body.Store(string(b))
	if r.Header.Get("x-goog-api-key") != "g-key" {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"code":401,"message":"API key not valid.","status":"UNAUTHENTICATED"}}`)
		return
	}
	if n <= f.fail {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`)
		return
	}
	switch {
	case r.URL.Path == "/models/gemini-2.5-flash:generateContent":
		io.WriteString(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"thinking…","thought":true},{"text":"Paris is sunny [1]."}]},"finishReason":"STOP","index":0}],
			"usageMetadata":{"promptTokenCount":12,"candidatesTokenCount":5,"totalTokenCount":17},"modelVersion":"gemini-2.5-flash"}`)
	case r.URL.Path == "/models/gemini-2.5-flash:streamGenerateContent" && r.URL.Query().Get("alt") == "sse":
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Paris \"}]},\"index\":0}]}\r\n\r\n")
		io.WriteString(w, "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"is sunny.\"}]},\"index\":0}]}\r\n\r\n")
		io.WriteString(w, "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"weather\",\"args\":{\"city\":\"Paris\"}}}]},\"finishReason\":\"STOP\",\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":12,\"candidatesTokenCount\":7}}\r\n\r\n")
	default:
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":{"code":404,"message":"not found","status":"NOT_FOUND"}}`)
	}
}

func request() llm.Request {
	temp := 0.2
	return llm.Request{
		Messages: []llm.Message{
			llm.System("be brief"),
			llm.User("weather in Paris?"),
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}},
			llm.ToolResult("c1", "sunny"),
		},
		Tools:       []llm.Tool{{Name: "weather", Description: "the weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}},
		ToolChoice:  "weather",
		Schema:      &llm.Schema{Schema: json.RawMessage(`{"type":"object"}`)},
		MaxTokens:   100,
		Temperature: &temp,
	}
}

func TestGenerate(t *testing.T) {
	f := &fake{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	resp, err := newModel(t, srv.URL).Generate(context.Background(), request())
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
	want := `{"contents":[{"parts":[{"text":"weather in Paris?"}],"role":"user"},` +
		`{"parts":[{"functionCall":{"args":{"city":"Paris"},"id":"c1","name":"weather"}}],"role":"model"},` +
		`{"parts":[{"functionResponse":{"id":"c1","name":"weather","response":{"content":"sunny"}}}],"role":"user"}],` +
		`"generationConfig":{"maxOutputTokens":100,"responseJsonSchema":{"type":"object"},"responseMimeType":"application/json","temperature":0.2},` +
		`"systemInstruction":{"parts":[{"text":"be brief"}]},` +
		`"toolConfig":{"functionCallingConfig":{"allowedFunctionNames":["weather"],"mode":"ANY"}},` +
		`"tools":[{"functionDeclarations":[{"description":"the weather","name":"weather","parameters":{"properties":{"city":{"type":"string"}},"type":"object"}}]}]}`
	if got, _ := json.Marshal(sent); string(got) != want {
		t.Errorf("request\n%s\nwant\n%s", got, want)
	}
}

func TestStream(t *testing.T) {
	f := &fake{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	resp, err := llm.Collect(newModel(t, srv.URL).Stream(context.Background(), llm.Request{Messages: []llm.Message{llm.User("hi")}}))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "Paris is sunny." || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != "weather" ||
		string(resp.ToolCalls[0].Arguments) != `{"city":"Paris"}` || resp.ToolCalls[0].ID == "" ||
		resp.StopReason != llm.StopToolCalls || resp.Usage.OutputTokens != 7 {
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
		{name: "retried 503 then success", key: "g-key", fail: 2, wantCalls: 3},
		{name: "503 until retries run out", key: "g-key", fail: 10, wantCalls: 3, wantCode: 503, wantMsg: "The model is overloaded."},
		{name: "401 not retried", key: "wrong", wantCalls: 1, wantCode: 401, wantMsg: "API key not valid."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fake{fail: tc.fail}
			srv := httptest.NewServer(f)
			defer srv.Close()
			m, err := gemini.New(gemini.Config{Model: "gemini-2.5-flash", BaseURL: srv.URL, APIKey: tc.key, RetryDelay: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			for _, stream := range []bool{false, true} {
				f.calls.Store(0)
				req := llm.Request{Messages: []llm.Message{llm.User("hi")}}
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
				} else if !errors.As(err, &ae) || ae.StatusCode != tc.wantCode || ae.Message != tc.wantMsg || ae.Provider != "gemini" {
					t.Errorf("stream %v: error %v", stream, err)
				}
			}
		})
	}
}

func TestNewNeedsKeyAndModel(t *testing.T) {
	t.Setenv(gemini.EnvAPIKey, "")
	t.Setenv(gemini.EnvGoogleAPIKey, "")
	if _, err := gemini.New(gemini.Config{Model: "m"}); !errors.Is(err, llm.ErrNoAPIKey) || !strings.Contains(err.Error(), gemini.EnvAPIKey) {
		t.Errorf("no key: %v", err)
	}
	if _, err := gemini.New(gemini.Config{APIKey: "k"}); err == nil {
		t.Error("no model accepted")
	}
	t.Setenv(gemini.EnvGoogleAPIKey, "k")
	if _, err := gemini.New(gemini.Config{Model: "m"}); err != nil {
		t.Errorf("GOOGLE_API_KEY not read: %v", err)
	}
}

func TestToolResultWithoutCall(t *testing.T) {
	m := newModel(t, "http://127.0.0.1:1")
	_, err := m.Generate(context.Background(), llm.Request{Messages: []llm.Message{llm.User("x"), llm.ToolResult("nope", "r")}})
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("error %v", err)
	}
}
