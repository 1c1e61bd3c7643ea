// Package llm is Quarry's contract with chat models: a ChatModel generates a
// reply to a conversation, whole (Generate) or as it is produced (Stream), with
// tool calls, JSON-schema structured output and token usage.
//
// Providers live in subpackages and speak their service's real API:
// llm/openai (OpenAI and any OpenAI-compatible server), llm/anthropic,
// llm/gemini, llm/mistral and llm/ollama. A Spec ("openai:gpt-4o-mini", "ollama:llama3.2",
// "openai-compatible:qwen2.5@http://localhost:8000/v1") names one.
//
// Cancelling the context cancels the request; breaking out of a Stream loop
// closes the response body, so nothing outlives the caller's interest.
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
)

// Role is who speaks a message.
type Role string

// Roles of a conversation.
const (
	// RoleSystem carries instructions. Providers without a system role in
	// their message list (Anthropic) send system messages as the system
	// prompt, joined in order.
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	// RoleTool carries a tool's result back to the model; ToolCallID names
	// the call it answers.
	RoleTool Role = "tool"
)

// Message is one turn of a conversation.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content"`
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	// ToolCallID is the id of the call a tool message answers.
	ToolCallID string `json:"toolCallId,omitempty"`
}

// System, User and Assistant build plain messages.
func System(text string) Message { return Message{Role: RoleSystem, Content: text} }

// User builds a user message.
func User(text string) Message { return Message{Role: RoleUser, Content: text} }

// Assistant builds an assistant message.
func Assistant(text string) Message { return Message{Role: RoleAssistant, Content: text} }

// ToolResult builds the message that returns a tool call's result.
func ToolResult(callID, content string) Message {
	return Message{Role: RoleTool, Content: content, ToolCallID: callID}
}

// Tool is a function the model may call. Parameters is the JSON schema of
// its arguments object; nil means an object with no properties.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// ToolCall is a call the model asks for. Arguments is a JSON object.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Schema asks for a structured reply: a JSON value valid against Schema.
type Schema struct {
	// Name identifies the schema to providers that want one ("answer" when
	// empty); letters, digits, '_' and '-'.
	Name string `json:"name,omitempty"`
	// Schema is a JSON Schema object.
	Schema json.RawMessage `json:"schema"`
}

// ToolChoice values; any other value names the one tool the model must call.
const (
	ToolChoiceAuto     = "auto"     // the model decides (the default)
	ToolChoiceNone     = "none"     // no tool calls
	ToolChoiceRequired = "required" // at least one tool call
)

// Request is one generation.
type Request struct {
	Messages []Message
	Tools    []Tool
	// ToolChoice is "" or ToolChoiceAuto, ToolChoiceNone, ToolChoiceRequired
	// or a tool's name.
	ToolChoice string
	// Schema, when set, asks for a JSON reply valid against it (Response.Text
	// holds the JSON).
	Schema *Schema
	// MaxTokens caps the reply; 0 is the provider's default (4096 where the
	// API requires a value).
	MaxTokens int
	// Temperature is the provider's default when nil.
	Temperature *float64
}

// Check validates the request before any network call.
func (r Request) Check() error {
	if len(r.Messages) == 0 {
		return errors.New("llm: a request needs at least one message")
	}
	for i, m := range r.Messages {
		switch m.Role {
		case RoleSystem, RoleUser, RoleAssistant:
		case RoleTool:
			if m.ToolCallID == "" {
				return fmt.Errorf("llm: message %d is a tool result without the id of the call it answers", i)
			}
		default:
			return fmt.Errorf("llm: message %d has unknown role %q (use system, user, assistant or tool)", i, m.Role)
		}
	}
	names := map[string]bool{}
	for _, t := range r.Tools {
		if t.Name == "" {
			return errors.New("llm: a tool needs a name")
		}
		if names[t.Name] {
			return fmt.Errorf("llm: tool %q is declared twice", t.Name)
		}
		names[t.Name] = true
		if len(t.Parameters) > 0 && !isJSONObject(t.Parameters) {
			return fmt.Errorf("llm: tool %q: parameters must be a JSON schema object", t.Name)
		}
	}
	switch r.ToolChoice {
	case "", ToolChoiceAuto, ToolChoiceNone, ToolChoiceRequired:
	default:
		if !names[r.ToolChoice] {
			return fmt.Errorf("llm: tool choice %q names no declared tool", r.ToolChoice)
		}
	}
	if r.Schema != nil && !isJSONObject(r.Schema.Schema) {
		return errors.New("llm: the structured-output schema must be a JSON object")
	}
	if r.MaxTokens < 0 {
		return fmt.Errorf("llm: max tokens must not be negative, got %d", r.MaxTokens)
	}
	return nil
}

// SchemaName is the schema's name, "answer" when it has none.
func (s *Schema) SchemaName() string {
	if s.Name == "" {
		return "answer"
	}
	return s.Name
}

func isJSONObject(b json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil && m != nil
}

// Usage counts tokens as the provider reports them; 0 means not reported.
type Usage struct {
	InputTokens  int `json:"inputTokens"`
	OutputTokens int `json:"outputTokens"`
}

// Total is input plus output tokens.
func (u Usage) Total() int { return u.InputTokens + u.OutputTokens }

// Stop reasons, mapped from each provider's own names.
const (
	StopEnd       = "stop"       // the model finished
	StopLength    = "length"     // MaxTokens was reached
	StopToolCalls = "tool_calls" // the model is waiting for tool results
)

// Response is a whole reply.
type Response struct {
	Text      string
	ToolCalls []ToolCall
	Usage     Usage
	// StopReason is StopEnd, StopLength, StopToolCalls or the provider's own
	// word for anything else.
	StopReason string
}

// Event is one step of a streamed reply: a piece of text, a complete tool
// call, or (Done) the end with usage and the stop reason. Providers stream
// tool-call arguments in pieces; Stream joins them and yields each call once.
type Event struct {
	Text       string
	ToolCall   *ToolCall
	Done       bool
	Usage      Usage
	StopReason string
}

// ChatModel generates replies. Implementations are safe for concurrent use.
type ChatModel interface {
	// Generate returns the whole reply.
	Generate(ctx context.Context, req Request) (Response, error)
	// Stream yields the reply as it is produced, ending with a Done event;
	// an error ends the sequence. Stopping the loop early closes the
	// connection.
	Stream(ctx context.Context, req Request) iter.Seq2[Event, error]
}

// Collect drains a stream into a Response: what Generate returns for the
// same reply.
func Collect(seq iter.Seq2[Event, error]) (Response, error) {
	var r Response
	var b strings.Builder
	for ev, err := range seq {
		if err != nil {
			return Response{}, err
		}
		b.WriteString(ev.Text)
		if ev.ToolCall != nil {
			r.ToolCalls = append(r.ToolCalls, *ev.ToolCall)
		}
		if ev.Done {
			r.Usage, r.StopReason = ev.Usage, ev.StopReason
		}
	}
	r.Text = b.String()
	return r, nil
}

// ErrNoAPIKey is returned (wrapped, naming the environment variable to
// set) when a provider that needs a key has none.
var ErrNoAPIKey = errors.New("no API key")

// APIError is a provider's refusal: an HTTP status and the message its body
// gave, after any retries.
type APIError struct {
	Provider   string
	StatusCode int
	// Message is the error the body reported, or the start of the body when
	// it held no recognisable message.
	Message string
}

func (e *APIError) Error() string {
	msg := fmt.Sprintf("%s: HTTP %d", e.Provider, e.StatusCode)
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// BodyMessage extracts a readable message from an error body: the
// "message" or "error" field of JSON bodies as OpenAI, Anthropic and Ollama
// send them, else the body itself, trimmed and cut to 500 bytes.
func BodyMessage(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &v) == nil {
		var s string
		if json.Unmarshal(v.Error, &s) == nil && s != "" {
			return s
		}
		var inner struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		}
		if json.Unmarshal(v.Error, &inner) == nil && inner.Message != "" {
			return inner.Message
		}
		if v.Message != "" {
			return v.Message
		}
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 500 {
		s = s[:500] + "…"
	}
	return s
}
