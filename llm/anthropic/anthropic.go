// Package anthropic is the llm.ChatModel for Anthropic's Messages API,
// through the official SDK (github.com/anthropics/anthropic-sdk-go/v2).
// Streaming is the API's server-sent events; structured output uses the
// API's output_config JSON-schema format; rate limits (429) and server
// errors are retried as the SDK does, honouring Retry-After.
package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"os"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/quarry-rag/quarry/llm"
)

// EnvAPIKey is the environment variable the key is read from.
const EnvAPIKey = "ANTHROPIC_API_KEY"

// DefaultMaxTokens caps a reply when the request sets no cap: the API
// requires one.
const DefaultMaxTokens = 4096

// Config configures a Model. Zero values mean the defaults.
type Config struct {
	// Model is the model name ("claude-sonnet-4-5"); required.
	Model string
	// BaseURL is Anthropic's API when empty; the SDK appends v1/messages.
	BaseURL string
	// APIKey is read from ANTHROPIC_API_KEY when empty; required.
	APIKey string
	// HTTPClient is http.DefaultClient when nil.
	HTTPClient *http.Client
	// MaxRetries is how often a 408, 409, 429 or 5xx response or a
	// connection error is retried: 2 when 0, none when negative.
	MaxRetries int
}

// Model is an Anthropic chat model.
type Model struct {
	client sdk.Client
	model  string
}

// New returns a model; it makes no network call. Only the settings given
// here (and ANTHROPIC_API_KEY) are used: the SDK's own environment and
// profile look-ups are switched off, so what runs is what Quarry says.
func New(cfg Config) (*Model, error) {
	if cfg.Model == "" {
		return nil, errors.New("anthropic: a model name is required")
	}
	if cfg.APIKey == "" {
		cfg.APIKey = os.Getenv(EnvAPIKey)
	}
	if cfg.APIKey == "" {
		return nil, fmt.Errorf("anthropic: %w: set %s", llm.ErrNoAPIKey, EnvAPIKey)
	}
	retries := cfg.MaxRetries
	switch {
	case retries == 0:
		retries = 2
	case retries < 0:
		retries = 0
	}
	opts := []option.RequestOption{option.WithoutEnvironmentDefaults(), option.WithAPIKey(cfg.APIKey), option.WithMaxRetries(retries)}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &Model{client: sdk.NewClient(opts...), model: cfg.Model}, nil
}

// Generate implements llm.ChatModel.
func (m *Model) Generate(ctx context.Context, req llm.Request) (llm.Response, error) {
	params, err := m.params(req)
	if err != nil {
		return llm.Response{}, err
	}
	msg, err := m.client.Messages.New(ctx, params, requestOptions(req)...)
	if err != nil {
		return llm.Response{}, wrap(err)
	}
	out := llm.Response{
		StopReason: stopReason(string(msg.StopReason)),
		Usage:      llm.Usage{InputTokens: int(msg.Usage.InputTokens), OutputTokens: int(msg.Usage.OutputTokens)},
	}
	var text strings.Builder
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Arguments: input(b.Input)})
		}
	}
	out.Text = text.String()
	return out, nil
}

// Stream implements llm.ChatModel over the API's server-sent events: text
// deltas are yielded as they come; a tool_use block's input_json_delta
// fragments are joined and the call yielded when its block stops.
func (m *Model) Stream(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		params, err := m.params(req)
		if err != nil {
			yield(llm.Event{}, err)
			return
		}
		stream := m.client.Messages.NewStreaming(ctx, params, requestOptions(req)...)
		defer stream.Close()
		type block struct {
			id, name string
			json     []byte
		}
		tools := map[int64]*block{}
		var usage llm.Usage
		stop := ""
		for stream.Next() {
			ev := stream.Current()
			switch ev.Type {
			case "message_start":
				usage.InputTokens = int(ev.Message.Usage.InputTokens)
				usage.OutputTokens = int(ev.Message.Usage.OutputTokens)
			case "content_block_start":
				if ev.ContentBlock.Type == "tool_use" {
					tools[ev.Index] = &block{id: ev.ContentBlock.ID, name: ev.ContentBlock.Name}
				}
			case "content_block_delta":
				switch ev.Delta.Type {
				case "text_delta":
					if ev.Delta.Text != "" && !yield(llm.Event{Text: ev.Delta.Text}, nil) {
						return
					}
				case "input_json_delta":
					if b := tools[ev.Index]; b != nil {
						b.json = append(b.json, ev.Delta.PartialJSON...)
					}
				}
			case "content_block_stop":
				if b := tools[ev.Index]; b != nil {
					delete(tools, ev.Index)
					tc := &llm.ToolCall{ID: b.id, Name: b.name, Arguments: input(b.json)}
					if !yield(llm.Event{ToolCall: tc}, nil) {
						return
					}
				}
			case "message_delta":
				if ev.Delta.StopReason != "" {
					stop = string(ev.Delta.StopReason)
				}
				// message_delta's usage is cumulative.
				if ev.Usage.OutputTokens > 0 {
					usage.OutputTokens = int(ev.Usage.OutputTokens)
				}
				if ev.Usage.InputTokens > 0 {
					usage.InputTokens = int(ev.Usage.InputTokens)
				}
			}
		}
		if err := stream.Err(); err != nil {
			yield(llm.Event{}, wrap(err))
			return
		}
		yield(llm.Event{Done: true, Usage: usage, StopReason: stopReason(stop)}, nil)
	}
}

// params maps a request to the API's parameters. System messages become
// the system prompt; tool results ride in user turns, as the API wants;
// consecutive messages of one role merge into one turn.
func (m *Model) params(req llm.Request) (sdk.MessageNewParams, error) {
	if err := req.Check(); err != nil {
		return sdk.MessageNewParams{}, err
	}
	p := sdk.MessageNewParams{Model: sdk.Model(m.model), MaxTokens: int64(DefaultMaxTokens)}
	if req.MaxTokens > 0 {
		p.MaxTokens = int64(req.MaxTokens)
	}
	var (
		blocks []sdk.ContentBlockParamUnion
		role   llm.Role
	)
	flush := func() {
		if len(blocks) == 0 {
			return
		}
		if role == llm.RoleAssistant {
			p.Messages = append(p.Messages, sdk.NewAssistantMessage(blocks...))
		} else {
			p.Messages = append(p.Messages, sdk.NewUserMessage(blocks...))
		}
		blocks = nil
	}
	for _, msg := range req.Messages {
		if msg.Role == llm.RoleSystem {
			p.System = append(p.System, sdk.TextBlockParam{Text: msg.Content})
			continue
		}
		turn := msg.Role
		if turn == llm.RoleTool {
			turn = llm.RoleUser
		}
		if turn != role {
			flush()
			role = turn
		}
		switch msg.Role {
		case llm.RoleTool:
			blocks = append(blocks, sdk.NewToolResultBlock(msg.ToolCallID, msg.Content, false))
		case llm.RoleAssistant:
			if msg.Content != "" {
				blocks = append(blocks, sdk.NewTextBlock(msg.Content))
			}
			for _, tc := range msg.ToolCalls {
				var in any = map[string]any{}
				if len(tc.Arguments) > 0 {
					if err := json.Unmarshal(tc.Arguments, &in); err != nil {
						return p, fmt.Errorf("anthropic: tool call %s arguments: %w", tc.ID, err)
					}
				}
				blocks = append(blocks, sdk.NewToolUseBlock(tc.ID, in, tc.Name))
			}
		default:
			blocks = append(blocks, sdk.NewTextBlock(msg.Content))
		}
	}
	flush()
	for _, t := range req.Tools {
		schema := sdk.ToolInputSchemaParam{}
		if len(t.Parameters) > 0 {
			var s map[string]any
			if err := json.Unmarshal(t.Parameters, &s); err != nil {
				return p, fmt.Errorf("anthropic: tool %q parameters: %w", t.Name, err)
			}
			schema.Properties = s["properties"]
			if req, ok := s["required"].([]any); ok {
				for _, r := range req {
					if name, ok := r.(string); ok {
						schema.Required = append(schema.Required, name)
					}
				}
			}
			for k, v := range s {
				if k != "properties" && k != "required" && k != "type" {
					if schema.ExtraFields == nil {
						schema.ExtraFields = map[string]any{}
					}
					schema.ExtraFields[k] = v
				}
			}
		}
		tp := sdk.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tp.Description = sdk.String(t.Description)
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: &tp})
	}
	switch req.ToolChoice {
	case "":
	case llm.ToolChoiceAuto:
		p.ToolChoice.OfAuto = &sdk.ToolChoiceAutoParam{}
	case llm.ToolChoiceNone:
		p.ToolChoice.OfNone = &sdk.ToolChoiceNoneParam{}
	case llm.ToolChoiceRequired:
		p.ToolChoice.OfAny = &sdk.ToolChoiceAnyParam{}
	default:
		p.ToolChoice.OfTool = &sdk.ToolChoiceToolParam{Name: req.ToolChoice}
	}
	if req.Schema != nil {
		var s map[string]any
		if err := json.Unmarshal(req.Schema.Schema, &s); err != nil {
			return p, fmt.Errorf("anthropic: schema: %w", err)
		}
		p.OutputConfig.Format = sdk.JSONOutputFormatParam{Schema: s}
	}
	return p, nil
}

// requestOptions carries what the SDK's parameters no longer model: the
// SDK dropped temperature, which the API still takes for most models.
func requestOptions(req llm.Request) []option.RequestOption {
	if req.Temperature == nil {
		return nil
	}
	return []option.RequestOption{option.WithJSONSet("temperature", *req.Temperature)}
}

// wrap turns the SDK's error into an llm.APIError carrying the body's
// message.
func wrap(err error) error {
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		msg := apiErr.Message
		if msg == "" && apiErr.Response != nil && apiErr.Response.Body != nil {
			body, _ := io.ReadAll(io.LimitReader(apiErr.Response.Body, 64<<10))
			msg = llm.BodyMessage(body)
		}
		if msg == "" {
			msg = llm.BodyMessage([]byte(apiErr.RawJSON()))
		}
		return &llm.APIError{Provider: llm.ProviderAnthropic, StatusCode: apiErr.StatusCode, Message: msg}
	}
	return fmt.Errorf("anthropic: %w", err)
}

func stopReason(s string) string {
	switch s {
	case "end_turn", "stop_sequence":
		return llm.StopEnd
	case "max_tokens":
		return llm.StopLength
	case "tool_use":
		return llm.StopToolCalls
	}
	return s
}

func input(b []byte) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("{}")
	}
	if json.Valid(b) {
		return json.RawMessage(b)
	}
	q, _ := json.Marshal(string(b))
	return q
}
