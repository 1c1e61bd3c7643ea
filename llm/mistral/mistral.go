// Package mistral is the llm.ChatModel for Mistral's chat completions API
// (POST /v1/chat/completions), spoken with net/http. Streaming is the API's
// server-sent events ending with "[DONE]"; tool choice "required" is sent
// as Mistral's "any"; structured output is a json_schema response format.
// Rate limits (429) and server errors are retried, honouring Retry-After.
package mistral

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/quarry-rag/quarry/internal/httpx"
	"github.com/quarry-rag/quarry/llm"
)

// EnvAPIKey is the environment variable the key is read from.
const EnvAPIKey = "MISTRAL_API_KEY"

// DefaultBaseURL is Mistral's API.
const DefaultBaseURL = "https://api.mistral.ai/v1"

// Config configures a Model. Zero values mean the defaults.
type Config struct {
	// Model is the model name ("mistral-small-latest"); required.
	Model string
	// BaseURL is DefaultBaseURL when empty.
	BaseURL string
	// APIKey is read from MISTRAL_API_KEY when empty.
	APIKey string
	// HTTPClient sends the requests; see httpx.Options.
	HTTPClient *http.Client
	// MaxRetries is how often a 429, a 5xx or a connection error is
	// retried: 2 when 0, none when negative.
	MaxRetries int
	// RetryDelay is the first backoff, doubled per retry: 500ms when 0.
	RetryDelay time.Duration
}

// Model is a Mistral chat model.
type Model struct {
	base, model, key string
	client           httpx.Client
}

// New returns a model; it makes no network call.
func New(cfg Config) (*Model, error) {
	if cfg.Model == "" {
		return nil, errors.New("mistral: a model name is required")
	}
	key := cfg.APIKey
	if key == "" {
		key = strings.TrimSpace(os.Getenv(EnvAPIKey))
	}
	if key == "" {
		return nil, fmt.Errorf("mistral: %w: set %s", llm.ErrNoAPIKey, EnvAPIKey)
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	if base == "" {
		base = DefaultBaseURL
	}
	retries := cfg.MaxRetries
	if retries == 0 {
		retries = 2
	}
	c := httpx.New(httpx.Options{Client: cfg.HTTPClient, MaxRetries: retries, RetryDelay: cfg.RetryDelay})
	return &Model{base: base, model: cfg.Model, key: key, client: c}, nil
}

// Wire format of /v1/chat/completions.
type (
	function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	toolCall struct {
		ID       string   `json:"id,omitempty"`
		Type     string   `json:"type,omitempty"`
		Index    int      `json:"index,omitempty"`
		Function function `json:"function"`
	}
	message struct {
		Role       string     `json:"role"`
		Content    string     `json:"content"`
		ToolCalls  []toolCall `json:"tool_calls,omitempty"`
		ToolCallID string     `json:"tool_call_id,omitempty"`
		Name       string     `json:"name,omitempty"`
	}
	toolDef struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	responseFormat struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
			Strict bool            `json:"strict"`
		} `json:"json_schema"`
	}
	request struct {
		Model          string          `json:"model"`
		Messages       []message       `json:"messages"`
		Tools          []toolDef       `json:"tools,omitempty"`
		ToolChoice     any             `json:"tool_choice,omitempty"`
		ResponseFormat *responseFormat `json:"response_format,omitempty"`
		MaxTokens      int             `json:"max_tokens,omitempty"`
		Temperature    *float64        `json:"temperature,omitempty"`
		Stream         bool            `json:"stream,omitempty"`
	}
	usageJSON struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	}
	response struct {
		Choices []struct {
			Message      message `json:"message"`
			Delta        message `json:"delta"`
			FinishReason string  `json:"finish_reason"`
		} `json:"choices"`
		Usage *usageJSON `json:"usage"`
	}
)

// Generate implements llm.ChatModel.
func (m *Model) Generate(ctx context.Context, req llm.Request) (llm.Response, error) {
	body, err := m.body(req, false)
	if err != nil {
		return llm.Response{}, err
	}
	var resp response
	if err := m.client.PostJSON(ctx, m.base+"/chat/completions", m.header(), body, &resp); err != nil {
		return llm.Response{}, wrap(err)
	}
	if len(resp.Choices) == 0 {
		return llm.Response{}, errors.New("mistral: the reply holds no choice")
	}
	ch := resp.Choices[0]
	out := llm.Response{Text: ch.Message.Content, StopReason: stopReason(ch.FinishReason), Usage: usage(resp.Usage)}
	for _, tc := range ch.Message.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: arguments(tc.Function.Arguments)})
	}
	return out, nil
}

// Stream implements llm.ChatModel over server-sent events. Tool calls may
// arrive in pieces keyed by index; each is yielded once, whole, before the
// Done event.
func (m *Model) Stream(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		body, err := m.body(req, true)
		if err != nil {
			yield(llm.Event{}, err)
			return
		}
		resp, err := m.client.Stream(ctx, m.base+"/chat/completions", m.header(), body)
		if err != nil {
			yield(llm.Event{}, wrap(err))
			return
		}
		defer resp.Body.Close()
		type partial struct {
			id, name string
			args     []byte
		}
		calls := map[int]*partial{}
		var u llm.Usage
		finish, done := "", false
		for data, err := range httpx.Events(resp.Body) {
			if err != nil {
				yield(llm.Event{}, fmt.Errorf("mistral: read the stream: %w", err))
				return
			}
			if bytes.Equal(bytes.TrimSpace(data), []byte("[DONE]")) {
				done = true
				break
			}
			var chunk response
			if err := json.Unmarshal(data, &chunk); err != nil {
				yield(llm.Event{}, fmt.Errorf("mistral: a stream event: %w", err))
				return
			}
			if chunk.Usage != nil {
				u = usage(chunk.Usage)
			}
			if len(chunk.Choices) == 0 {
				continue
			}
			ch := chunk.Choices[0]
			if ch.FinishReason != "" {
				finish = ch.FinishReason
			}
			for _, tc := range ch.Delta.ToolCalls {
				p := calls[tc.Index]
				if p == nil {
					p = &partial{}
					calls[tc.Index] = p
				}
				if tc.ID != "" {
					p.id = tc.ID
				}
				if tc.Function.Name != "" {
					p.name = tc.Function.Name
				}
				p.args = append(p.args, tc.Function.Arguments...)
			}
			if ch.Delta.Content != "" && !yield(llm.Event{Text: ch.Delta.Content}, nil) {
				return
			}
		}
		if !done && finish == "" {
			yield(llm.Event{}, errors.New("mistral: the stream ended before the reply did"))
			return
		}
		idx := make([]int, 0, len(calls))
		for i := range calls {
			idx = append(idx, i)
		}
		sort.Ints(idx)
		for _, i := range idx {
			p := calls[i]
			if !yield(llm.Event{ToolCall: &llm.ToolCall{ID: p.id, Name: p.name, Arguments: arguments(string(p.args))}}, nil) {
				return
			}
		}
		yield(llm.Event{Done: true, Usage: u, StopReason: stopReason(finish)}, nil)
	}
}

func (m *Model) header() map[string]string {
	return map[string]string{"Authorization": "Bearer " + m.key}
}

// body maps a request to the API's JSON.
func (m *Model) body(req llm.Request, stream bool) (*request, error) {
	if err := req.Check(); err != nil {
		return nil, err
	}
	out := &request{Model: m.model, MaxTokens: req.MaxTokens, Temperature: req.Temperature, Stream: stream}
	names := map[string]string{}
	for _, msg := range req.Messages {
		mm := message{Role: string(msg.Role), Content: msg.Content, ToolCallID: msg.ToolCallID}
		for _, tc := range msg.ToolCalls {
			names[tc.ID] = tc.Name
			args := string(tc.Arguments)
			if args == "" {
				args = "{}"
			}
			mm.ToolCalls = append(mm.ToolCalls, toolCall{ID: tc.ID, Type: "function", Function: function{Name: tc.Name, Arguments: args}})
		}
		if msg.Role == llm.RoleTool {
			mm.Name = names[msg.ToolCallID]
		}
		out.Messages = append(out.Messages, mm)
	}
	for _, t := range req.Tools {
		d := toolDef{Type: "function"}
		d.Function.Name, d.Function.Description, d.Function.Parameters = t.Name, t.Description, t.Parameters
		if len(d.Function.Parameters) == 0 {
			d.Function.Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out.Tools = append(out.Tools, d)
	}
	switch req.ToolChoice {
	case "":
	case llm.ToolChoiceAuto, llm.ToolChoiceNone:
		out.ToolChoice = req.ToolChoice
	case llm.ToolChoiceRequired:
		out.ToolChoice = "any"
	default:
		out.ToolChoice = map[string]any{"type": "function", "function": map[string]string{"name": req.ToolChoice}}
	}
	if req.Schema != nil {
		rf := &responseFormat{Type: "json_schema"}
		rf.JSONSchema.Name, rf.JSONSchema.Schema, rf.JSONSchema.Strict = req.Schema.SchemaName(), req.Schema.Schema, true
		out.ResponseFormat = rf
	}
	return out, nil
}

func usage(u *usageJSON) llm.Usage {
	if u == nil {
		return llm.Usage{}
	}
	return llm.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
}

func stopReason(s string) string {
	switch s {
	case "stop":
		return llm.StopEnd
	case "length", "model_length":
		return llm.StopLength
	case "tool_calls":
		return llm.StopToolCalls
	}
	return s
}

// arguments keeps a call's arguments as JSON; broken JSON is quoted as a
// string rather than corrupting the message.
func arguments(s string) json.RawMessage {
	if s == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	q, _ := json.Marshal(s)
	return q
}

// wrap turns a status error into an llm.APIError with the body's message.
func wrap(err error) error {
	var se *httpx.StatusError
	if errors.As(err, &se) {
		msg := llm.BodyMessage([]byte(se.Body))
		var d struct {
			Detail json.RawMessage `json:"detail"`
		}
		if json.Unmarshal([]byte(se.Body), &d) == nil && len(d.Detail) > 0 && msg == se.Body {
			msg = string(d.Detail)
		}
		return &llm.APIError{Provider: "mistral", StatusCode: se.StatusCode, Message: msg}
	}
	return fmt.Errorf("mistral: %w", err)
}
