// Package openai is the llm.ChatModel for OpenAI's Chat Completions API
// (POST /v1/chat/completions) and every server that speaks it (vLLM,
// llama.cpp, LM Studio, TGI, …), spoken with net/http. Streaming is the
// API's server-sent events ending with "[DONE]", with usage in the last
// chunk; rate limits (429), server errors and connection errors are
// retried, honouring Retry-After.
//
// Quarry speaks the wire format itself rather than through OpenAI's Go SDK:
// the few fields it sends and reads are below, and the SDK's generated
// types for the whole API added some 12 MB to every Quarry binary.
package openai

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
const EnvAPIKey = "OPENAI_API_KEY"

// DefaultBaseURL is OpenAI's API.
const DefaultBaseURL = "https://api.openai.com/v1"

// Config configures a Model. Zero values mean the defaults.
type Config struct {
	// Model is the model name ("gpt-4o-mini"); required.
	Model string
	// BaseURL is OpenAI's API when empty, or an OpenAI-compatible server's
	// base URL ("http://localhost:8000/v1").
	BaseURL string
	// APIKey is read from OPENAI_API_KEY when empty. OpenAI itself needs
	// one; a compatible server (BaseURL set) gets none when none is set.
	APIKey string
	// HTTPClient sends the requests; see httpx.Options.
	HTTPClient *http.Client
	// MaxRetries is how often a 429, a 5xx or a connection error is
	// retried: 2 when 0, none when negative.
	MaxRetries int
	// RetryDelay is the first backoff, doubled per retry: 500ms when 0.
	RetryDelay time.Duration
}

// Model is an OpenAI or OpenAI-compatible chat model.
type Model struct {
	base, model, key string
	provider         string // "openai" or "openai-compatible", for messages
	client           httpx.Client
}

// New returns a model; it makes no network call. A missing key for
// OpenAI's own API is an error naming OPENAI_API_KEY.
func New(cfg Config) (*Model, error) {
	provider := llm.ProviderOpenAI
	if cfg.BaseURL != "" {
		provider = llm.ProviderOpenAICompatible
	}
	if cfg.Model == "" {
		return nil, fmt.Errorf("%s: a model name is required", provider)
	}
	key := cfg.APIKey
	if key == "" {
		key = strings.TrimSpace(os.Getenv(EnvAPIKey))
	}
	if key == "" && cfg.BaseURL == "" {
		return nil, fmt.Errorf("openai: %w: set %s (or use openai-compatible:MODEL@BASEURL for a local server)", llm.ErrNoAPIKey, EnvAPIKey)
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
	return &Model{base: base, model: cfg.Model, key: key, provider: provider, client: c}, nil
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
		Index    int      `json:"index"`
		Function function `json:"function"`
	}
	// sentCall is a tool call in a sent message, which has no index.
	sentCall struct {
		ID       string   `json:"id"`
		Type     string   `json:"type"`
		Function function `json:"function"`
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
		} `json:"json_schema"`
	}
	streamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	}
	request struct {
		Model               string            `json:"model"`
		Messages            []json.RawMessage `json:"messages"`
		Tools               []toolDef         `json:"tools,omitempty"`
		ToolChoice          any               `json:"tool_choice,omitempty"`
		ResponseFormat      *responseFormat   `json:"response_format,omitempty"`
		MaxCompletionTokens int               `json:"max_completion_tokens,omitempty"`
		Temperature         *float64          `json:"temperature,omitempty"`
		Stream              bool              `json:"stream,omitempty"`
		StreamOptions       *streamOptions    `json:"stream_options,omitempty"`
	}
	usageJSON struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	}
	reply struct {
		Content   string     `json:"content"`
		ToolCalls []toolCall `json:"tool_calls"`
	}
	response struct {
		Choices []struct {
			Message      reply  `json:"message"`
			Delta        reply  `json:"delta"`
			FinishReason string `json:"finish_reason"`
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
		return llm.Response{}, m.wrap(err)
	}
	if len(resp.Choices) == 0 {
		return llm.Response{}, fmt.Errorf("%s: the reply holds no choice", m.provider)
	}
	ch := resp.Choices[0]
	out := llm.Response{Text: ch.Message.Content, StopReason: stopReason(ch.FinishReason), Usage: usage(resp.Usage)}
	for _, tc := range ch.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue
		}
		out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: arguments(tc.Function.Arguments)})
	}
	return out, nil
}

// Stream implements llm.ChatModel over the API's server-sent events. Tool
// calls arrive as fragments keyed by index; each is yielded once, whole,
// before the Done event.
func (m *Model) Stream(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		body, err := m.body(req, true)
		if err != nil {
			yield(llm.Event{}, err)
			return
		}
		resp, err := m.client.Stream(ctx, m.base+"/chat/completions", m.header(), body)
		if err != nil {
			yield(llm.Event{}, m.wrap(err))
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
				yield(llm.Event{}, fmt.Errorf("%s: read the stream: %w", m.provider, err))
				return
			}
			if bytes.Equal(bytes.TrimSpace(data), []byte("[DONE]")) {
				done = true
				break
			}
			var chunk response
			if err := json.Unmarshal(data, &chunk); err != nil {
				yield(llm.Event{}, fmt.Errorf("%s: a stream event: %w", m.provider, err))
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
			yield(llm.Event{}, fmt.Errorf("%s: the stream ended before the reply did", m.provider))
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

// header authorises a request; a compatible server without a key gets
// none.
func (m *Model) header() map[string]string {
	if m.key == "" {
		return nil
	}
	return map[string]string{"Authorization": "Bearer " + m.key}
}

// body maps a request to the API's JSON.
func (m *Model) body(req llm.Request, stream bool) (*request, error) {
	if err := req.Check(); err != nil {
		return nil, err
	}
	out := &request{Model: m.model, MaxCompletionTokens: req.MaxTokens, Temperature: req.Temperature, Stream: stream}
	if stream {
		out.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	for _, msg := range req.Messages {
		var v any
		switch msg.Role {
		case llm.RoleAssistant:
			a := struct {
				Role      string     `json:"role"`
				Content   *string    `json:"content"`
				ToolCalls []sentCall `json:"tool_calls,omitempty"`
			}{Role: string(msg.Role)}
			if msg.Content != "" || len(msg.ToolCalls) == 0 {
				a.Content = &msg.Content
			}
			for _, tc := range msg.ToolCalls {
				args := string(tc.Arguments)
				if args == "" {
					args = "{}"
				}
				a.ToolCalls = append(a.ToolCalls, sentCall{ID: tc.ID, Type: "function", Function: function{Name: tc.Name, Arguments: args}})
			}
			v = a
		case llm.RoleTool:
			v = struct {
				Role       string `json:"role"`
				Content    string `json:"content"`
				ToolCallID string `json:"tool_call_id"`
			}{string(msg.Role), msg.Content, msg.ToolCallID}
		default:
			v = struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			}{string(msg.Role), msg.Content}
		}
		j, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%s: encode a message: %w", m.provider, err)
		}
		out.Messages = append(out.Messages, j)
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
	case llm.ToolChoiceAuto, llm.ToolChoiceNone, llm.ToolChoiceRequired:
		out.ToolChoice = req.ToolChoice
	default:
		out.ToolChoice = map[string]any{"type": "function", "function": map[string]string{"name": req.ToolChoice}}
	}
	if req.Schema != nil {
		rf := &responseFormat{Type: "json_schema"}
		rf.JSONSchema.Name, rf.JSONSchema.Schema = req.Schema.SchemaName(), req.Schema.Schema
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

// wrap turns a status error into an llm.APIError with the body's message.
func (m *Model) wrap(err error) error {
	var se *httpx.StatusError
	if errors.As(err, &se) {
		return &llm.APIError{Provider: m.provider, StatusCode: se.StatusCode, Message: llm.BodyMessage([]byte(se.Body))}
	}
	return fmt.Errorf("%s: %w", m.provider, err)
}

func stopReason(s string) string {
	switch s {
	case "stop":
		return llm.StopEnd
	case "length":
		return llm.StopLength
	case "tool_calls", "function_call":
		return llm.StopToolCalls
	}
	return s
}

// arguments keeps a call's arguments as JSON; a model that streamed broken
// JSON gets it quoted as a string rather than corrupting the message.
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
