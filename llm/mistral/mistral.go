// Package mistral is the llm.ChatModel for Mistral's chat completions API
// (POST /v1/chat/completions), spoken with net/http. Streaming is the API's
// server-sent events ending with "[DONE]"; tool choice "required" is sent
// as Mistral's "any"; structured output is a json_schema response format.
// Rate limits (429) and server errors are retried, honouring Retry-After.
package mistral

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

// Wire format of a /v1/chat/completions request; the reply is
// chatcompletions'.
type (
	toolCall struct {
		ID       string                   `json:"id,omitempty"`
		Type     string                   `json:"type,omitempty"`
		Function chatcompletions.Function `json:"function"`
	}
	message struct {
		Role       string     `json:"role"`
		Content    string     `json:"content"`
		ToolCalls  []toolCall `json:"tool_calls,omitempty"`
		ToolCallID string     `json:"tool_call_id,omitempty"`
		Name       string     `json:"name,omitempty"`
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
		Model          string                    `json:"model"`
		Messages       []message                 `json:"messages"`
		Tools          []chatcompletions.ToolDef `json:"tools,omitempty"`
		ToolChoice     any                       `json:"tool_choice,omitempty"`
		ResponseFormat *responseFormat           `json:"response_format,omitempty"`
		MaxTokens      int                       `json:"max_tokens,omitempty"`
		Temperature    *float64                  `json:"temperature,omitempty"`
		Stream         bool                      `json:"stream,omitempty"`
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
		return llm.Response{}, wrap(err)
	}
	return chatcompletions.Reply("mistral", &resp, stopReason)
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
		chatcompletions.Stream("mistral", resp.Body, stopReason, yield)
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
			mm.ToolCalls = append(mm.ToolCalls, toolCall{ID: tc.ID, Type: "function", Function: chatcompletions.Function{Name: tc.Name, Arguments: args}})
		}
		if msg.Role == llm.RoleTool {
			mm.Name = names[msg.ToolCallID]
		}
		out.Messages = append(out.Messages, mm)
	}
	out.Tools = chatcompletions.Tools(req.Tools)
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
