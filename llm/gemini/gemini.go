// Package gemini is the llm.ChatModel for Google's Gemini API
// (generativelanguage.googleapis.com), spoken with net/http: generateContent
// for whole replies and streamGenerateContent?alt=sse for streams. System
// messages become the system instruction; tools are function declarations;
// structured output is responseJsonSchema with an application/json reply.
// Rate limits (429) and server errors are retried, honouring Retry-After.
package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/quarry-rag/quarry/internal/httpx"
	"github.com/quarry-rag/quarry/llm"
)

// Environment variables the key is read from, in order.
const (
	EnvAPIKey       = "GEMINI_API_KEY"
	EnvGoogleAPIKey = "GOOGLE_API_KEY"
)

// DefaultBaseURL is Gemini's API.
const DefaultBaseURL = "https://generativelanguage.googleapis.com/v1beta"

// Config configures a Model. Zero values mean the defaults.
type Config struct {
	// Model is the model name ("gemini-2.5-flash"); required.
	Model string
	// BaseURL is DefaultBaseURL when empty.
	BaseURL string
	// APIKey is read from GEMINI_API_KEY, then GOOGLE_API_KEY, when empty.
	APIKey string
	// HTTPClient sends the requests; see httpx.Options.
	HTTPClient *http.Client
	// MaxRetries is how often a 429, a 5xx or a connection error is
	// retried: 2 when 0, none when negative.
	MaxRetries int
	// RetryDelay is the first backoff, doubled per retry: 500ms when 0.
	RetryDelay time.Duration
}

// Model is a Gemini chat model.
type Model struct {
	base, model, key string
	client           httpx.Client
}

// New returns a model; it makes no network call.
func New(cfg Config) (*Model, error) {
	if cfg.Model == "" {
		return nil, errors.New("gemini: a model name is required")
	}
	key := cfg.APIKey
	for _, v := range []string{EnvAPIKey, EnvGoogleAPIKey} {
		if key == "" {
			key = strings.TrimSpace(os.Getenv(v))
		}
	}
	if key == "" {
		return nil, fmt.Errorf("gemini: %w: set %s", llm.ErrNoAPIKey, EnvAPIKey)
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
	return &Model{base: base, model: strings.TrimPrefix(cfg.Model, "models/"), key: key, client: c}, nil
}

// Wire format of generateContent.
type (
	part struct {
		Text             string        `json:"text,omitempty"`
		FunctionCall     *functionCall `json:"functionCall,omitempty"`
		FunctionResponse *functionResp `json:"functionResponse,omitempty"`
		// Thought marks a thinking model's reasoning, which is not reply text.
		Thought bool `json:"thought,omitempty"`
	}
	functionCall struct {
		ID   string          `json:"id,omitempty"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args,omitempty"`
	}
	functionResp struct {
		ID       string          `json:"id,omitempty"`
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	}
	content struct {
		Role  string `json:"role,omitempty"`
		Parts []part `json:"parts"`
	}
	funcDecl struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	}
	tool struct {
		FunctionDeclarations []funcDecl `json:"functionDeclarations"`
	}
	toolConfig struct {
		FunctionCallingConfig struct {
			Mode                 string   `json:"mode"`
			AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
		} `json:"functionCallingConfig"`
	}
	genConfig struct {
		MaxOutputTokens    int             `json:"maxOutputTokens,omitempty"`
		Temperature        *float64        `json:"temperature,omitempty"`
		ResponseMimeType   string          `json:"responseMimeType,omitempty"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema,omitempty"`
	}
	request struct {
		SystemInstruction *content    `json:"systemInstruction,omitempty"`
		Contents          []content   `json:"contents"`
		Tools             []tool      `json:"tools,omitempty"`
		ToolConfig        *toolConfig `json:"toolConfig,omitempty"`
		GenerationConfig  *genConfig  `json:"generationConfig,omitempty"`
	}
	response struct {
		Candidates []struct {
			Content      content `json:"content"`
			FinishReason string  `json:"finishReason"`
		} `json:"candidates"`
		UsageMetadata *struct {
			PromptTokenCount     int `json:"promptTokenCount"`
			CandidatesTokenCount int `json:"candidatesTokenCount"`
			ThoughtsTokenCount   int `json:"thoughtsTokenCount"`
		} `json:"usageMetadata"`
		PromptFeedback *struct {
			BlockReason string `json:"blockReason"`
		} `json:"promptFeedback"`
	}
)

// Generate implements llm.ChatModel.
func (m *Model) Generate(ctx context.Context, req llm.Request) (llm.Response, error) {
	body, err := m.body(req)
	if err != nil {
		return llm.Response{}, err
	}
	var resp response
	if err := m.client.PostJSON(ctx, m.url("generateContent"), m.header(), body, &resp); err != nil {
		return llm.Response{}, wrap(err)
	}
	if len(resp.Candidates) == 0 {
		if resp.PromptFeedback != nil && resp.PromptFeedback.BlockReason != "" {
			return llm.Response{}, fmt.Errorf("gemini: the prompt was blocked (%s)", resp.PromptFeedback.BlockReason)
		}
		return llm.Response{}, errors.New("gemini: the reply holds no candidate")
	}
	var out llm.Response
	var b strings.Builder
	for _, p := range resp.Candidates[0].Content.Parts {
		if p.FunctionCall != nil {
			out.ToolCalls = append(out.ToolCalls, toolCall(p.FunctionCall, len(out.ToolCalls)))
		} else if !p.Thought {
			b.WriteString(p.Text)
		}
	}
	out.Text = b.String()
	out.Usage = usage(resp)
	out.StopReason = stopReason(resp.Candidates[0].FinishReason, len(out.ToolCalls) > 0)
	return out, nil
}

// Stream implements llm.ChatModel over server-sent events; each event is a
// whole generateContent response holding the next piece.
func (m *Model) Stream(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		body, err := m.body(req)
		if err != nil {
			yield(llm.Event{}, err)
			return
		}
		resp, err := m.client.Stream(ctx, m.url("streamGenerateContent")+"?alt=sse", m.header(), body)
		if err != nil {
			yield(llm.Event{}, wrap(err))
			return
		}
		defer resp.Body.Close()
		var u llm.Usage
		finish, calls := "", 0
		for data, err := range httpx.Events(resp.Body) {
			if err != nil {
				yield(llm.Event{}, fmt.Errorf("gemini: read the stream: %w", err))
				return
			}
			var chunk response
			if err := json.Unmarshal(data, &chunk); err != nil {
				yield(llm.Event{}, fmt.Errorf("gemini: a stream event: %w", err))
				return
			}
			if chunk.UsageMetadata != nil {
				u = usage(chunk)
			}
			if len(chunk.Candidates) == 0 {
				continue
			}
			c := chunk.Candidates[0]
			if c.FinishReason != "" {
				finish = c.FinishReason
			}
			for _, p := range c.Content.Parts {
				ev := llm.Event{}
				switch {
				case p.FunctionCall != nil:
					tc := toolCall(p.FunctionCall, calls)
					calls++
					ev.ToolCall = &tc
				case p.Thought || p.Text == "":
					continue
				default:
					ev.Text = p.Text
				}
				if !yield(ev, nil) {
					return
				}
			}
		}
		if ctx.Err() != nil {
			yield(llm.Event{}, fmt.Errorf("gemini: %w", ctx.Err()))
			return
		}
		yield(llm.Event{Done: true, Usage: u, StopReason: stopReason(finish, calls > 0)}, nil)
	}
}

func (m *Model) url(method string) string {
	return m.base + "/models/" + url.PathEscape(m.model) + ":" + method
}

func (m *Model) header() map[string]string {
	return map[string]string{"x-goog-api-key": m.key}
}

// body maps a request to generateContent's JSON.
func (m *Model) body(req llm.Request) (*request, error) {
	if err := req.Check(); err != nil {
		return nil, err
	}
	out := &request{}
	names := map[string]string{} // tool call id → function name
	var system []string
	for _, msg := range req.Messages {
		switch msg.Role {
		case llm.RoleSystem:
			system = append(system, msg.Content)
		case llm.RoleUser:
			out.add("user", part{Text: msg.Content})
		case llm.RoleAssistant:
			var parts []part
			if msg.Content != "" || len(msg.ToolCalls) == 0 {
				parts = append(parts, part{Text: msg.Content})
			}
			for _, tc := range msg.ToolCalls {
				names[tc.ID] = tc.Name
				args := tc.Arguments
				if len(args) == 0 {
					args = json.RawMessage("{}")
				}
				parts = append(parts, part{FunctionCall: &functionCall{ID: tc.ID, Name: tc.Name, Args: args}})
			}
			out.add("model", parts...)
		case llm.RoleTool:
			name, ok := names[msg.ToolCallID]
			if !ok {
				return nil, fmt.Errorf("gemini: tool result %q answers no earlier tool call (Gemini needs the function's name)", msg.ToolCallID)
			}
			out.add("user", part{FunctionResponse: &functionResp{ID: msg.ToolCallID, Name: name, Response: toolResponse(msg.Content)}})
		}
	}
	if len(system) > 0 {
		out.SystemInstruction = &content{Parts: []part{{Text: strings.Join(system, "\n\n")}}}
	}
	if len(out.Contents) == 0 {
		return nil, errors.New("gemini: a request needs a user message besides the system instructions")
	}
	if len(req.Tools) > 0 && req.ToolChoice != llm.ToolChoiceNone {
		t := tool{}
		for _, tl := range req.Tools {
			params := tl.Parameters
			if len(params) == 0 {
				params = json.RawMessage(`{"type":"object","properties":{}}`)
			}
			t.FunctionDeclarations = append(t.FunctionDeclarations, funcDecl{Name: tl.Name, Description: tl.Description, Parameters: params})
		}
		out.Tools = []tool{t}
		tc := &toolConfig{}
		switch req.ToolChoice {
		case "", llm.ToolChoiceAuto:
			tc.FunctionCallingConfig.Mode = "AUTO"
		case llm.ToolChoiceRequired:
			tc.FunctionCallingConfig.Mode = "ANY"
		default:
			tc.FunctionCallingConfig.Mode = "ANY"
			tc.FunctionCallingConfig.AllowedFunctionNames = []string{req.ToolChoice}
		}
		out.ToolConfig = tc
	}
	gc := genConfig{MaxOutputTokens: req.MaxTokens, Temperature: req.Temperature}
	if req.Schema != nil {
		gc.ResponseMimeType = "application/json"
		gc.ResponseJSONSchema = req.Schema.Schema
	}
	if gc.MaxOutputTokens > 0 || gc.Temperature != nil || gc.ResponseMimeType != "" {
		out.GenerationConfig = &gc
	}
	return out, nil
}

// add appends parts to the conversation, joining consecutive turns of one
// role: Gemini wants user and model to alternate.
func (r *request) add(role string, parts ...part) {
	if n := len(r.Contents); n > 0 && r.Contents[n-1].Role == role {
		r.Contents[n-1].Parts = append(r.Contents[n-1].Parts, parts...)
		return
	}
	r.Contents = append(r.Contents, content{Role: role, Parts: parts})
}

// toolResponse wraps a tool's result as the JSON object Gemini requires.
func toolResponse(s string) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(s), &obj) == nil && obj != nil {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(map[string]string{"content": s})
	return b
}

// toolCall maps a function call; Gemini models that send no id get one by
// position, so tool results can still name their call.
func toolCall(fc *functionCall, n int) llm.ToolCall {
	id := fc.ID
	if id == "" {
		id = fmt.Sprintf("call_%d", n+1)
	}
	args := fc.Args
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	return llm.ToolCall{ID: id, Name: fc.Name, Arguments: args}
}

func usage(r response) llm.Usage {
	if r.UsageMetadata == nil {
		return llm.Usage{}
	}
	return llm.Usage{InputTokens: r.UsageMetadata.PromptTokenCount,
		OutputTokens: r.UsageMetadata.CandidatesTokenCount + r.UsageMetadata.ThoughtsTokenCount}
}

func stopReason(s string, calls bool) string {
	if calls {
		return llm.StopToolCalls
	}
	switch s {
	case "STOP", "":
		return llm.StopEnd
	case "MAX_TOKENS":
		return llm.StopLength
	}
	return strings.ToLower(s)
}

// wrap turns a status error into an llm.APIError with the body's message.
func wrap(err error) error {
	var se *httpx.StatusError
	if errors.As(err, &se) {
		return &llm.APIError{Provider: "gemini", StatusCode: se.StatusCode, Message: llm.BodyMessage([]byte(se.Body))}
	}
	return fmt.Errorf("gemini: %w", err)
}
