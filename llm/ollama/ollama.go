// Package ollama is the llm.ChatModel for Ollama's /api/chat, spoken with
// net/http: Ollama has no official Go client outside its own module, and its
// API is small. Streaming is newline-delimited JSON; structured output uses
// the request's "format" schema; tools are sent as functions (Ollama has no
// tool choice: ToolChoiceNone sends no tools, other choices are left to the
// model).
package ollama

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/quarry-rag/quarry/llm"
)

// Environment variables: the server's address, as Ollama's own tools read
// it, and an optional key sent as a bearer token (hosted Ollama).
const (
	EnvHost   = "OLLAMA_HOST"
	EnvAPIKey = "OLLAMA_API_KEY"
)

// DefaultHost is where Ollama listens unless told otherwise.
const DefaultHost = "http://127.0.0.1:11434"

// Config configures a Model. Zero values mean the defaults.
type Config struct {
	// Model is the model tag ("llama3.2", "qwen2.5:7b"); required.
	Model string
	// BaseURL is the server; empty reads OLLAMA_HOST ("host:port" or a
	// URL), else DefaultHost.
	BaseURL string
	// APIKey is read from OLLAMA_API_KEY when empty; a local server needs
	// none.
	APIKey string
	// HTTPClient is http.DefaultClient when nil.
	HTTPClient *http.Client
	// MaxRetries is how often a 408, 409, 429 or 5xx response or a
	// connection error is retried: 2 when 0, none when negative.
	MaxRetries int
	// MaxRetryDelay caps one wait, whatever Retry-After says; 60 s when 0.
	MaxRetryDelay time.Duration
}

// Model is an Ollama chat model.
type Model struct {
	base     string
	model    string
	key      string
	client   *http.Client
	retries  int
	maxDelay time.Duration
}

// New returns a model; it makes no network call.
func New(cfg Config) (*Model, error) {
	if cfg.Model == "" {
		return nil, errors.New("ollama: a model name is required")
	}
	base := cfg.BaseURL
	if base == "" {
		base = os.Getenv(EnvHost)
	}
	base, err := hostURL(base)
	if err != nil {
		return nil, err
	}
	m := &Model{base: base, model: cfg.Model, key: cfg.APIKey, client: cfg.HTTPClient, retries: cfg.MaxRetries, maxDelay: cfg.MaxRetryDelay}
	if m.key == "" {
		m.key = os.Getenv(EnvAPIKey)
	}
	if m.client == nil {
		m.client = http.DefaultClient
	}
	switch {
	case m.retries == 0:
		m.retries = 2
	case m.retries < 0:
		m.retries = 0
	}
	if m.maxDelay <= 0 {
		m.maxDelay = time.Minute
	}
	return m, nil
}

// hostURL reads an address the way OLLAMA_HOST is written: a URL, or
// host[:port] meaning http; 0.0.0.0 (a listen address) means this machine.
func hostURL(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return DefaultHost, nil
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("ollama: server address %q: use http://host:port", s)
	}
	host, port := u.Hostname(), u.Port()
	if host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	if port == "" {
		port = "11434"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	u.Host = net.JoinHostPort(host, port)
	return strings.TrimRight(u.String(), "/"), nil
}

// Wire types of /api/chat.
type (
	chatRequest struct {
		Model    string          `json:"model"`
		Messages []message       `json:"messages"`
		Stream   bool            `json:"stream"`
		Tools    []tool          `json:"tools,omitempty"`
		Format   json.RawMessage `json:"format,omitempty"`
		Options  map[string]any  `json:"options,omitempty"`
	}
	message struct {
		Role      string     `json:"role"`
		Content   string     `json:"content"`
		ToolCalls []toolCall `json:"tool_calls,omitempty"`
		ToolName  string     `json:"tool_name,omitempty"`
	}
	toolCall struct {
		ID       string `json:"id,omitempty"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	}
	tool struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	chatResponse struct {
		Message         message `json:"message"`
		Done            bool    `json:"done"`
		DoneReason      string  `json:"done_reason"`
		PromptEvalCount int     `json:"prompt_eval_count"`
		EvalCount       int     `json:"eval_count"`
		Error           string  `json:"error"`
	}
)

// Generate implements llm.ChatModel.
func (m *Model) Generate(ctx context.Context, req llm.Request) (llm.Response, error) {
	body, err := m.body(req, false)
	if err != nil {
		return llm.Response{}, err
	}
	resp, err := m.post(ctx, body)
	if err != nil {
		return llm.Response{}, err
	}
	defer resp.Body.Close()
	var cr chatResponse
	if err := json.NewDecoder(resp.Body).Decode(&cr); err != nil {
		return llm.Response{}, fmt.Errorf("ollama: read the reply: %w", err)
	}
	if cr.Error != "" {
		return llm.Response{}, &llm.APIError{Provider: llm.ProviderOllama, StatusCode: resp.StatusCode, Message: cr.Error}
	}
	out := llm.Response{Text: cr.Message.Content, StopReason: stopReason(cr.DoneReason, len(cr.Message.ToolCalls) > 0),
		Usage: llm.Usage{InputTokens: cr.PromptEvalCount, OutputTokens: cr.EvalCount}}
	for i, tc := range cr.Message.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, convertCall(tc, i))
	}
	return out, nil
}

// Stream implements llm.ChatModel over Ollama's NDJSON stream: one JSON
// object per line, the last with "done": true and the token counts.
func (m *Model) Stream(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		body, err := m.body(req, true)
		if err != nil {
			yield(llm.Event{}, err)
			return
		}
		resp, err := m.post(ctx, body)
		if err != nil {
			yield(llm.Event{}, err)
			return
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		calls := 0
		for sc.Scan() {
			line := bytes.TrimSpace(sc.Bytes())
			if len(line) == 0 {
				continue
			}
			var cr chatResponse
			if err := json.Unmarshal(line, &cr); err != nil {
				yield(llm.Event{}, fmt.Errorf("ollama: a stream line is not JSON: %w", err))
				return
			}
			if cr.Error != "" {
				yield(llm.Event{}, &llm.APIError{Provider: llm.ProviderOllama, StatusCode: resp.StatusCode, Message: cr.Error})
				return
			}
			if cr.Message.Content != "" && !yield(llm.Event{Text: cr.Message.Content}, nil) {
				return
			}
			for _, tc := range cr.Message.ToolCalls {
				c := convertCall(tc, calls)
				calls++
				if !yield(llm.Event{ToolCall: &c}, nil) {
					return
				}
			}
			if cr.Done {
				yield(llm.Event{Done: true, StopReason: stopReason(cr.DoneReason, calls > 0),
					Usage: llm.Usage{InputTokens: cr.PromptEvalCount, OutputTokens: cr.EvalCount}}, nil)
				return
			}
		}
		if err := sc.Err(); err != nil {
			yield(llm.Event{}, fmt.Errorf("ollama: read the stream: %w", err))
			return
		}
		yield(llm.Event{}, errors.New("ollama: the stream ended before its last message"))
	}
}

// body maps a request to /api/chat's JSON. Ollama's tool calls carry no id
// everywhere, so a tool result finds its tool's name through the id of the
// call it answers.
func (m *Model) body(req llm.Request, stream bool) ([]byte, error) {
	if err := req.Check(); err != nil {
		return nil, err
	}
	cr := chatRequest{Model: m.model, Stream: stream}
	names := map[string]string{}
	for _, msg := range req.Messages {
		w := message{Role: string(msg.Role), Content: msg.Content}
		for _, tc := range msg.ToolCalls {
			names[tc.ID] = tc.Name
			var c toolCall
			c.ID = tc.ID
			c.Function.Name = tc.Name
			c.Function.Arguments = tc.Arguments
			if len(c.Function.Arguments) == 0 {
				c.Function.Arguments = json.RawMessage("{}")
			}
			w.ToolCalls = append(w.ToolCalls, c)
		}
		if msg.Role == llm.RoleTool {
			w.ToolName = names[msg.ToolCallID]
		}
		cr.Messages = append(cr.Messages, w)
	}
	if req.ToolChoice != llm.ToolChoiceNone {
		for _, t := range req.Tools {
			var w tool
			w.Type = "function"
			w.Function.Name, w.Function.Description, w.Function.Parameters = t.Name, t.Description, t.Parameters
			if len(w.Function.Parameters) == 0 {
				w.Function.Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
			}
			cr.Tools = append(cr.Tools, w)
		}
	}
	if req.Schema != nil {
		cr.Format = req.Schema.Schema
	}
	opts := map[string]any{}
	if req.MaxTokens > 0 {
		opts["num_predict"] = req.MaxTokens
	}
	if req.Temperature != nil {
		opts["temperature"] = *req.Temperature
	}
	if len(opts) > 0 {
		cr.Options = opts
	}
	b, err := json.Marshal(cr)
	if err != nil {
		return nil, fmt.Errorf("ollama: encode the request: %w", err)
	}
	return b, nil
}

// post sends the request, retrying what is worth retrying, and returns a
// 2xx response whose body the caller closes.
func (m *Model) post(ctx context.Context, body []byte) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.base+"/api/chat", bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("ollama: %w", err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/x-ndjson, application/json")
		if m.key != "" {
			req.Header.Set("Authorization", "Bearer "+m.key)
		}
		resp, err := m.client.Do(req)
		var wait time.Duration
		switch {
		case err != nil:
			if ctx.Err() != nil || attempt >= m.retries {
				return nil, fmt.Errorf("ollama: %w", err)
			}
			wait = m.backoff(attempt, "")
		case resp.StatusCode/100 == 2:
			return resp, nil
		default:
			msg, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			if !retryable(resp.StatusCode) || attempt >= m.retries {
				return nil, &llm.APIError{Provider: llm.ProviderOllama, StatusCode: resp.StatusCode, Message: llm.BodyMessage(msg)}
			}
			wait = m.backoff(attempt, resp.Header.Get("Retry-After"))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("ollama: %w", ctx.Err())
		case <-t.C:
		}
	}
}

func retryable(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests || status >= 500
}

// backoff is Retry-After when the server gave one (seconds or an HTTP
// date, capped), else 0.5 s doubling per attempt up to 8 s, with jitter.
func (m *Model) backoff(attempt int, retryAfter string) time.Duration {
	if retryAfter != "" {
		if s, err := strconv.ParseFloat(retryAfter, 64); err == nil && s >= 0 {
			return min(time.Duration(s*float64(time.Second)), m.maxDelay)
		}
		if t, err := http.ParseTime(retryAfter); err == nil {
			return min(max(time.Until(t), 0), m.maxDelay)
		}
	}
	d := min(500*time.Millisecond<<attempt, 8*time.Second)
	return d - time.Duration(rand.Int64N(int64(d)/4+1))
}

func convertCall(tc toolCall, i int) llm.ToolCall {
	id := tc.ID
	if id == "" {
		id = "call_" + strconv.Itoa(i)
	}
	args := tc.Function.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	return llm.ToolCall{ID: id, Name: tc.Function.Name, Arguments: args}
}

func stopReason(s string, calledTools bool) string {
	switch {
	case calledTools:
		return llm.StopToolCalls
	case s == "stop" || s == "":
		return llm.StopEnd
	case s == "length":
		return llm.StopLength
	}
	return s
}
