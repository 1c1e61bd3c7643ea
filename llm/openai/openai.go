// Package openai is the llm.ChatModel for OpenAI's Chat Completions API and
// every server that speaks it (vLLM, llama.cpp, LM Studio, TGI, …), through
// the official SDK (github.com/openai/openai-go/v3). Streaming is the API's
// server-sent events; rate limits (429) and server errors are retried as the
// SDK does, honouring Retry-After.
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"os"
	"sort"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/quarry-rag/quarry/llm"
)

// EnvAPIKey is the environment variable the key is read from.
const EnvAPIKey = "OPENAI_API_KEY"

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
	// HTTPClient is http.DefaultClient when nil.
	HTTPClient *http.Client
	// MaxRetries is how often a 408, 409, 429 or 5xx response or a
	// connection error is retried: 2 when 0, none when negative.
	MaxRetries int
}

// Model is an OpenAI or OpenAI-compatible chat model.
type Model struct {
	client   oai.Client
	model    string
	provider string // "openai" or "openai-compatible", for messages
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
	if cfg.APIKey == "" {
		cfg.APIKey = os.Getenv(EnvAPIKey)
	}
	if cfg.APIKey == "" && cfg.BaseURL == "" {
		return nil, fmt.Errorf("openai: %w: set %s (or use openai-compatible:MODEL@BASEURL for a local server)", llm.ErrNoAPIKey, EnvAPIKey)
	}
	retries := cfg.MaxRetries
	switch {
	case retries == 0:
		retries = 2
	case retries < 0:
		retries = 0
	}
	opts := []option.RequestOption{option.WithAPIKey(cfg.APIKey), option.WithMaxRetries(retries)}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &Model{client: oai.NewClient(opts...), model: cfg.Model, provider: provider}, nil
}

// Generate implements llm.ChatModel.
func (m *Model) Generate(ctx context.Context, req llm.Request) (llm.Response, error) {
	params, err := m.params(req)
	if err != nil {
		return llm.Response{}, err
	}
	c, err := m.client.Chat.Completions.New(ctx, params)
	if err != nil {
		return llm.Response{}, m.wrap(err)
	}
	if len(c.Choices) == 0 {
		return llm.Response{}, fmt.Errorf("%s: the reply holds no choice", m.provider)
	}
	ch := c.Choices[0]
	out := llm.Response{
		Text:       ch.Message.Content,
		StopReason: stopReason(ch.FinishReason),
		Usage:      llm.Usage{InputTokens: int(c.Usage.PromptTokens), OutputTokens: int(c.Usage.CompletionTokens)},
	}
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
		params, err := m.params(req)
		if err != nil {
			yield(llm.Event{}, err)
			return
		}
		params.StreamOptions.IncludeUsage = param.NewOpt(true)
		stream := m.client.Chat.Completions.NewStreaming(ctx, params)
		defer stream.Close()
		type partial struct {
			id, name string
			args     []byte
		}
		calls := map[int64]*partial{}
		var usage llm.Usage
		finish := ""
		for stream.Next() {
			chunk := stream.Current()
			if chunk.Usage.PromptTokens > 0 || chunk.Usage.CompletionTokens > 0 {
				usage = llm.Usage{InputTokens: int(chunk.Usage.PromptTokens), OutputTokens: int(chunk.Usage.CompletionTokens)}
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
			if ch.Delta.Content != "" {
				if !yield(llm.Event{Text: ch.Delta.Content}, nil) {
					return
				}
			}
		}
		if err := stream.Err(); err != nil {
			yield(llm.Event{}, m.wrap(err))
			return
		}
		idx := make([]int64, 0, len(calls))
		for i := range calls {
			idx = append(idx, i)
		}
		sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
		for _, i := range idx {
			p := calls[i]
			tc := &llm.ToolCall{ID: p.id, Name: p.name, Arguments: arguments(string(p.args))}
			if !yield(llm.Event{ToolCall: tc}, nil) {
				return
			}
		}
		yield(llm.Event{Done: true, Usage: usage, StopReason: stopReason(finish)}, nil)
	}
}

// params maps a request to the API's parameters.
func (m *Model) params(req llm.Request) (oai.ChatCompletionNewParams, error) {
	if err := req.Check(); err != nil {
		return oai.ChatCompletionNewParams{}, err
	}
	p := oai.ChatCompletionNewParams{Model: shared.ChatModel(m.model)}
	for _, msg := range req.Messages {
		switch msg.Role {
		case llm.RoleSystem:
			p.Messages = append(p.Messages, oai.SystemMessage(msg.Content))
		case llm.RoleUser:
			p.Messages = append(p.Messages, oai.UserMessage(msg.Content))
		case llm.RoleTool:
			p.Messages = append(p.Messages, oai.ToolMessage(msg.Content, msg.ToolCallID))
		case llm.RoleAssistant:
			a := oai.ChatCompletionAssistantMessageParam{}
			if msg.Content != "" || len(msg.ToolCalls) == 0 {
				a.Content.OfString = param.NewOpt(msg.Content)
			}
			for _, tc := range msg.ToolCalls {
				args := string(tc.Arguments)
				if args == "" {
					args = "{}"
				}
				a.ToolCalls = append(a.ToolCalls, oai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &oai.ChatCompletionMessageFunctionToolCallParam{
						ID:       tc.ID,
						Function: oai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: args},
					},
				})
			}
			p.Messages = append(p.Messages, oai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		}
	}
	for _, t := range req.Tools {
		def := shared.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			def.Description = param.NewOpt(t.Description)
		}
		params := map[string]any{"type": "object", "properties": map[string]any{}}
		if len(t.Parameters) > 0 {
			params = nil
			if err := json.Unmarshal(t.Parameters, &params); err != nil {
				return p, fmt.Errorf("%s: tool %q parameters: %w", m.provider, t.Name, err)
			}
		}
		def.Parameters = params
		p.Tools = append(p.Tools, oai.ChatCompletionFunctionTool(def))
	}
	switch req.ToolChoice {
	case "":
	case llm.ToolChoiceAuto, llm.ToolChoiceNone, llm.ToolChoiceRequired:
		p.ToolChoice.OfAuto = param.NewOpt(req.ToolChoice)
	default:
		p.ToolChoice = oai.ToolChoiceOptionFunctionToolChoice(oai.ChatCompletionNamedToolChoiceFunctionParam{Name: req.ToolChoice})
	}
	if req.Schema != nil {
		var schema map[string]any
		if err := json.Unmarshal(req.Schema.Schema, &schema); err != nil {
			return p, fmt.Errorf("%s: schema: %w", m.provider, err)
		}
		p.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: req.Schema.SchemaName(), Schema: schema},
		}
	}
	if req.MaxTokens > 0 {
		p.MaxCompletionTokens = param.NewOpt(int64(req.MaxTokens))
	}
	if req.Temperature != nil {
		p.Temperature = param.NewOpt(*req.Temperature)
	}
	return p, nil
}

// wrap turns the SDK's error, whose text omits the body, into an
// llm.APIError that carries the body's message.
func (m *Model) wrap(err error) error {
	var apiErr *oai.Error
	if errors.As(err, &apiErr) {
		msg := apiErr.Message
		if msg == "" && apiErr.Response != nil && apiErr.Response.Body != nil {
			// The SDK keeps the body readable for diagnostics.
			body, _ := io.ReadAll(io.LimitReader(apiErr.Response.Body, 64<<10))
			msg = llm.BodyMessage(body)
		}
		return &llm.APIError{Provider: m.provider, StatusCode: apiErr.StatusCode, Message: msg}
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
