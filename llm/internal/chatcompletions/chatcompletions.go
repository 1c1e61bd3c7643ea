// Package chatcompletions is the part of OpenAI's Chat Completions wire
// format that the providers speaking it share (OpenAI and compatible
// servers, Mistral): the reply, its server-sent event stream and tool-call
// arguments. Each provider builds its own request, where they differ.
package chatcompletions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/quarry-rag/quarry/internal/httpx"
	"github.com/quarry-rag/quarry/llm"
)

// ToolDef is a tool offered to the model.
type ToolDef struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// Tools are a request's tools as the API takes them; a tool without
// parameters takes an empty object.
func Tools(tools []llm.Tool) []ToolDef {
	var out []ToolDef
	for _, t := range tools {
		d := ToolDef{Type: "function"}
		d.Function.Name, d.Function.Description, d.Function.Parameters = t.Name, t.Description, t.Parameters
		if len(d.Function.Parameters) == 0 {
			d.Function.Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out = append(out, d)
	}
	return out
}

// Function is a tool call's function.
type Function struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolCall is a tool call of a reply; in a stream, a fragment of one,
// keyed by Index.
type ToolCall struct {
	ID       string   `json:"id,omitempty"`
	Type     string   `json:"type,omitempty"`
	Index    int      `json:"index"`
	Function Function `json:"function"`
}

// Message is a reply's message, or a stream chunk's delta.
type Message struct {
	Content   string     `json:"content"`
	ToolCalls []ToolCall `json:"tool_calls"`
}

// Usage counts a reply's tokens.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// Response is a reply, or one chunk of a streamed one.
type Response struct {
	Choices []struct {
		Message      Message `json:"message"`
		Delta        Message `json:"delta"`
		FinishReason string  `json:"finish_reason"`
	} `json:"choices"`
	Usage *Usage `json:"usage"`
}

func (u *Usage) usage() llm.Usage {
	if u == nil {
		return llm.Usage{}
	}
	return llm.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
}

// Reply turns a reply into Quarry's response; stop maps the provider's
// finish reasons.
func Reply(provider string, resp *Response, stop func(string) string) (llm.Response, error) {
	if len(resp.Choices) == 0 {
		return llm.Response{}, fmt.Errorf("%s: the reply holds no choice", provider)
	}
	ch := resp.Choices[0]
	out := llm.Response{Text: ch.Message.Content, StopReason: stop(ch.FinishReason), Usage: resp.Usage.usage()}
	for _, tc := range ch.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue
		}
		out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: Arguments(tc.Function.Arguments)})
	}
	return out, nil
}

// Stream reads a streamed reply's server-sent events, ending with
// "[DONE]", and yields its text as it comes. Tool calls arrive in pieces
// keyed by index; each is yielded once, whole, before the Done event.
func Stream(provider string, body io.Reader, stop func(string) string, yield func(llm.Event, error) bool) {
	type partial struct {
		id, name string
		args     []byte
	}
	calls := map[int]*partial{}
	var u llm.Usage
	finish, done := "", false
	for data, err := range httpx.Events(body) {
		if err != nil {
			yield(llm.Event{}, fmt.Errorf("%s: read the stream: %w", provider, err))
			return
		}
		if bytes.Equal(bytes.TrimSpace(data), []byte("[DONE]")) {
			done = true
			break
		}
		var chunk Response
		if err := json.Unmarshal(data, &chunk); err != nil {
			yield(llm.Event{}, fmt.Errorf("%s: a stream event: %w", provider, err))
			return
		}
		if chunk.Usage != nil {
			u = chunk.Usage.usage()
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
		yield(llm.Event{}, fmt.Errorf("%s: %w", provider, errEarlyEnd))
		return
	}
	idx := make([]int, 0, len(calls))
	for i := range calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		p := calls[i]
		if !yield(llm.Event{ToolCall: &llm.ToolCall{ID: p.id, Name: p.name, Arguments: Arguments(string(p.args))}}, nil) {
			return
		}
	}
	yield(llm.Event{Done: true, Usage: u, StopReason: stop(finish)}, nil)
}

var errEarlyEnd = errors.New("the stream ended before the reply did")

// Arguments keeps a call's arguments as JSON; a model that streamed broken
// JSON gets it quoted as a string rather than corrupting the message.
func Arguments(s string) json.RawMessage {
	if s == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	q, _ := json.Marshal(s)
	return q
}
