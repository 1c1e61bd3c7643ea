// Package anthropic is the llm.ChatModel for Anthropic's Messages API
// (POST /v1/messages, anthropic-version 2023-06-01), spoken with net/http.
// Streaming is the API's server-sent events; structured output uses the
// API's output_config JSON-schema format; rate limits (429), server errors
// (529 "overloaded" among them) and connection errors are retried,
// honouring Retry-After.
//
// Quarry speaks the wire format itself rather than through Anthropic's Go
// SDK: the few fields it sends and reads are below, and the SDK's
// generated types for the whole API added some 7 MB to every Quarry
// binary.
package anthropic

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
)

// EnvAPIKey is the environment variable the key is read from.
const EnvAPIKey = "ANTHROPIC_API_KEY"

// DefaultBaseURL is Anthropic's API.
const DefaultBaseURL = "https://api.anthropic.com"

// APIVersion is the anthropic-version header Quarry sends.
const APIVersion = "2023-06-01"

// DefaultMaxTokens caps a reply when the request sets no cap: the API
// requires one.
const DefaultMaxTokens = 4096

// Config configures a Model. Zero values mean the defaults.
type Config struct {
	// Model is the model name ("claude-sonnet-4-5"); required.
	Model string
	// BaseURL is DefaultBaseURL when empty; requests go to BaseURL +
	// "/v1/messages".
	BaseURL string
	// APIKey is read from ANTHROPIC_API_KEY when empty; required.
	APIKey string
	// HTTPClient sends the requests; see httpx.Options.
	HTTPClient *http.Client
	// MaxRetries is how often a 429, a 5xx or a connection error is
	// retried: 2 when 0, none when negative.
	MaxRetries int
	// RetryDelay is the first backoff, doubled per retry: 500ms when 0.
	RetryDelay time.Duration
}

// Model is an Anthropic chat model.
type Model struct {
	base, model, key string
	client           httpx.Client
}

// New returns a model; it makes no network call.
func New(cfg Config) (*Model, error) {
	if cfg.Model == "" {
		return nil, errors.New("anthropic: a model name is required")
	}
	key := cfg.APIKey
	if key == "" {
		key = strings.TrimSpace(os.Getenv(EnvAPIKey))
	}
	if key == "" {
		return nil, fmt.Errorf("anthropic: %w: set %s", llm.ErrNoAPIKey, EnvAPIKey)
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

// Wire format of /v1/messages.
type (
	// block is a content block, sent or received.
	block struct {
		Type      string          `json:"type"`
		Text      string          `json:"text,omitempty"`
		ID        string          `json:"id,omitempty"`
		Name      string          `json:"name,omitempty"`
		Input     json.RawMessage `json:"input,omitempty"`
		ToolUseID string          `json:"tool_use_id,omitempty"`
		Content   string          `json:"content,omitempty"`
	}
	turn struct {
		Role    string  `json:"role"`
		Content []block `json:"content"`
	}
	toolDef struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	outputConfig struct {
		Format struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		} `json:"format"`
	}
	request struct {
		Model        string         `json:"model"`
		MaxTokens    int            `json:"max_tokens"`
		System       []block        `json:"system,omitempty"`
		Messages     []turn         `json:"messages"`
		Tools        []toolDef      `json:"tools,omitempty"`
		ToolChoice   map[string]any `json:"tool_choice,omitempty"`
		OutputConfig *outputConfig  `json:"output_config,omitempty"`
		Temperature  *float64       `json:"temperature,omitempty"`
		Stream       bool           `json:"stream,omitempty"`
	}
	usageJSON struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	}
	message struct {
		Content    []block   `json:"content"`
		StopReason string    `json:"stop_reason"`
		Usage      usageJSON `json:"usage"`
	}
	// event is one server-sent event of a stream; its type says which
	// fields it has.
	event struct {
		Type         string  `json:"type"`
		Index        int     `json:"index"`
		Message      message `json:"message"`
		ContentBlock block   `json:"content_block"`
		Delta        struct {
			Type        string `json:"type"`
			Text        string `json:"text"`
			PartialJSON string `json:"partial_json"`
			StopReason  string `json:"stop_reason"`
		} `json:"delta"`
		Usage usageJSON `json:"usage"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
)

// Generate implements llm.ChatModel.
func (m *Model) Generate(ctx context.Context, req llm.Request) (llm.Response, error) {
	body, err := m.body(req, false)
	if err != nil {
		return llm.Response{}, err
	}
	var msg message
	if err := m.client.PostJSON(ctx, m.base+"/v1/messages", m.header(), body, &msg); err != nil {
		return llm.Response{}, wrap(err)
	}
	out := llm.Response{
		StopReason: stopReason(msg.StopReason),
		Usage:      llm.Usage{InputTokens: msg.Usage.InputTokens, OutputTokens: msg.Usage.OutputTokens},
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
// fragments are joined and the call yielded when its block stops; an
// error event ends the stream with the API's message.
func (m *Model) Stream(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		body, err := m.body(req, true)
		if err != nil {
			yield(llm.Event{}, err)
			return
		}
		resp, err := m.client.Stream(ctx, m.base+"/v1/messages", m.header(), body)
		if err != nil {
			yield(llm.Event{}, wrap(err))
			return
		}
		defer resp.Body.Close()
		type partial struct {
			id, name string
			json     []byte
		}
		tools := map[int]*partial{}
		var usage llm.Usage
		stop, stopped := "", false
		for data, err := range httpx.Events(resp.Body) {
			if err != nil {
				yield(llm.Event{}, fmt.Errorf("anthropic: read the stream: %w", err))
				return
			}
			var ev event
			if err := json.Unmarshal(data, &ev); err != nil {
				yield(llm.Event{}, fmt.Errorf("anthropic: a stream event: %w", err))
				return
			}
			switch ev.Type {
			case "message_start":
				usage.InputTokens = ev.Message.Usage.InputTokens
				usage.OutputTokens = ev.Message.Usage.OutputTokens
			case "content_block_start":
				if ev.ContentBlock.Type == "tool_use" {
					tools[ev.Index] = &partial{id: ev.ContentBlock.ID, name: ev.ContentBlock.Name}
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
					stop = ev.Delta.StopReason
				}
				// message_delta's usage is cumulative.
				if ev.Usage.OutputTokens > 0 {
					usage.OutputTokens = ev.Usage.OutputTokens
				}
				if ev.Usage.InputTokens > 0 {
					usage.InputTokens = ev.Usage.InputTokens
				}
			case "message_stop":
				stopped = true
			case "error":
				yield(llm.Event{}, &llm.APIError{Provider: llm.ProviderAnthropic, Message: ev.Error.Type + ": " + ev.Error.Message})
				return
			}
		}
		if !stopped && stop == "" {
			yield(llm.Event{}, errors.New("anthropic: the stream ended before the reply did"))
			return
		}
		yield(llm.Event{Done: true, Usage: usage, StopReason: stopReason(stop)}, nil)
	}
}

func (m *Model) header() map[string]string {
	return map[string]string{"x-api-key": m.key, "anthropic-version": APIVersion}
}

// body maps a request to the API's JSON. System messages become the
// system prompt; tool results ride in user turns, as the API wants;
// consecutive messages of one role merge into one turn.
func (m *Model) body(req llm.Request, stream bool) (*request, error) {
	if err := req.Check(); err != nil {
		return nil, err
	}
	out := &request{Model: m.model, MaxTokens: DefaultMaxTokens, Temperature: req.Temperature, Stream: stream}
	if req.MaxTokens > 0 {
		out.MaxTokens = req.MaxTokens
	}
	var (
		blocks []block
		role   llm.Role
	)
	flush := func() {
		if len(blocks) > 0 {
			out.Messages = append(out.Messages, turn{Role: string(role), Content: blocks})
			blocks = nil
		}
	}
	for _, msg := range req.Messages {
		if msg.Role == llm.RoleSystem {
			out.System = append(out.System, block{Type: "text", Text: msg.Content})
			continue
		}
		r := msg.Role
		if r == llm.RoleTool {
			r = llm.RoleUser
		}
		if r != role {
			flush()
			role = r
		}
		switch msg.Role {
		case llm.RoleTool:
			blocks = append(blocks, block{Type: "tool_result", ToolUseID: msg.ToolCallID, Content: msg.Content})
		case llm.RoleAssistant:
			if msg.Content != "" {
				blocks = append(blocks, block{Type: "text", Text: msg.Content})
			}
			for _, tc := range msg.ToolCalls {
				in := tc.Arguments
				if len(in) == 0 {
					in = json.RawMessage("{}")
				}
				if !json.Valid(in) {
					return nil, fmt.Errorf("anthropic: tool call %s: its arguments are not JSON", tc.ID)
				}
				blocks = append(blocks, block{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: in})
			}
		default:
			blocks = append(blocks, block{Type: "text", Text: msg.Content})
		}
	}
	flush()
	for _, t := range req.Tools {
		schema := t.Parameters
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out.Tools = append(out.Tools, toolDef{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	switch req.ToolChoice {
	case "":
	case llm.ToolChoiceAuto:
		out.ToolChoice = map[string]any{"type": "auto"}
	case llm.ToolChoiceNone:
		out.ToolChoice = map[string]any{"type": "none"}
	case llm.ToolChoiceRequired:
		out.ToolChoice = map[string]any{"type": "any"}
	default:
		out.ToolChoice = map[string]any{"type": "tool", "name": req.ToolChoice}
	}
	if req.Schema != nil {
		oc := &outputConfig{}
		oc.Format.Type, oc.Format.Schema = "json_schema", req.Schema.Schema
		out.OutputConfig = oc
	}
	return out, nil
}

// wrap turns a status error into an llm.APIError with the body's message.
func wrap(err error) error {
	var se *httpx.StatusError
	if errors.As(err, &se) {
		return &llm.APIError{Provider: llm.ProviderAnthropic, StatusCode: se.StatusCode, Message: llm.BodyMessage([]byte(se.Body))}
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
