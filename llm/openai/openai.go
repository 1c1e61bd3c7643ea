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
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/quarry-rag/quarry/internal/httpx"
	"github.com/quarry-rag/quarry/llm"
	"github.com/quarry-rag/quarry/llm/internal/chatcompletions"
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

// Wire format of a /v1/chat/completions request; the reply is
// chatcompletions'.
type (
	// sentCall is a tool call in a sent message, which has no index.
	sentCall struct {
		ID       string                   `json:"id"`
		Type     string                   `json:"type"`
		Function chatcompletions.Function `json:"function"`
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
		Model               string                    `json:"model"`
		Messages            []json.RawMessage         `json:"messages"`
		Tools               []chatcompletions.ToolDef `json:"tools,omitempty"`
		ToolChoice          any                       `json:"tool_choice,omitempty"`
		ResponseFormat      *responseFormat           `json:"response_format,omitempty"`
		MaxCompletionTokens int                       `json:"max_completion_tokens,omitempty"`
		Temperature         *float64                  `json:"temperature,omitempty"`
		Stream              bool                      `json:"stream,omitempty"`
		StreamOptions       *streamOptions            `json:"stream_options,omitempty"`
	}
)

// Generate implements llm.ChatModel.
func (m *Model) Generate(ctx context.Context, req llm.Request) (llm.Response, error) {
	body, err := m.body(req, false)
	if err != nil {
		return llm.Response{}, err
	}
	var resp chatcompletions.Response
	if err := m.client.PostJSON(ctx, m.base+"/chat/completions", m.header(), body, &resp); err != nil {
		return llm.Response{}, m.wrap(err)
	}
	return chatcompletions.Reply(m.provider, &resp, stopReason)
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
		chatcompletions.Stream(m.provider, resp.Body, stopReason, yield)
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
				a.ToolCalls = append(a.ToolCalls, sentCall{ID: tc.ID, Type: "function", Function: chatcompletions.Function{Name: tc.Name, Arguments: args}})
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
	out.Tools = chatcompletions.Tools(req.Tools)
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
