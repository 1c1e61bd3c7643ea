// Package quarrytest gives programs built on Quarry what their tests need:
// a deterministic offline embedder, a scripted chat model that speaks
// through the real llm interface, an httptest server speaking OpenAI's
// chat-completions wire format (for end-to-end tests through the real
// provider), and an in-memory knowledge base.
//
// Nothing here calls a network service or downloads a model.
package quarrytest

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/embed/hash"
	"github.com/quarry-rag/quarry/llm"
	"github.com/quarry-rag/quarry/store"
)

// Embedder is Quarry's offline hash embedder: deterministic, lexical, 512
// dimensions. Equal texts always get equal vectors, on every machine.
func Embedder(tb testing.TB) embed.Embedder {
	tb.Helper()
	e, err := hash.New(hash.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// NewKB is an in-memory knowledge base with the offline embedder and the
// options given (quarry.WithChatModel(&ChatModel{…}), say). It is closed
// when the test ends.
func NewKB(tb testing.TB, opts ...quarry.Option) *quarry.KB {
	tb.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, "memory:")
	if err != nil {
		tb.Fatal(err)
	}
	kb, err := quarry.New(ctx, st, append([]quarry.Option{quarry.WithEmbedder(Embedder(tb))}, opts...)...)
	if err != nil {
		st.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		kb.Close()
		st.Close()
	})
	return kb
}

// ChatModel is a scripted llm.ChatModel. Reply gives the reply to each
// request (nil: Replies in turn, the last one repeated); Requests records
// what it was asked, in order. Stream yields the reply a few characters at
// a time, as a provider does. It is safe for concurrent use.
type ChatModel struct {
	// Respond, when set, gives the whole response to a request, tool
	// calls included (an agent's tool rounds); Reply and Replies are then
	// not used.
	Respond func(req llm.Request) (llm.Response, error)
	// Reply writes the reply to a request; an error fails the call.
	Reply func(req llm.Request) (string, error)
	// Replies are used in turn when Reply is nil.
	Replies []string

	mu       sync.Mutex
	requests []llm.Request
}

// Requests are the requests the model received.
func (m *ChatModel) Requests() []llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]llm.Request(nil), m.requests...)
}

func (m *ChatModel) respond(req llm.Request) (llm.Response, error) {
	m.mu.Lock()
	n := len(m.requests)
	m.requests = append(m.requests, req)
	m.mu.Unlock()
	if m.Respond != nil {
		resp, err := m.Respond(req)
		if err == nil && resp.Usage == (llm.Usage{}) {
			resp.Usage = usage(req, resp.Text)
		}
		if err == nil && resp.StopReason == "" {
			resp.StopReason = llm.StopEnd
			if len(resp.ToolCalls) > 0 {
				resp.StopReason = llm.StopToolCalls
			}
		}
		return resp, err
	}
	text, err := m.scripted(req, n)
	if err != nil {
		return llm.Response{}, err
	}
	return llm.Response{Text: text, Usage: usage(req, text), StopReason: llm.StopEnd}, nil
}

func (m *ChatModel) scripted(req llm.Request, n int) (string, error) {
	if m.Reply != nil {
		return m.Reply(req)
	}
	if len(m.Replies) == 0 {
		return "", fmt.Errorf("quarrytest: the chat model has no scripted reply")
	}
	return m.Replies[min(n, len(m.Replies)-1)], nil
}

// Generate implements llm.ChatModel.
func (m *ChatModel) Generate(_ context.Context, req llm.Request) (llm.Response, error) {
	return m.respond(req)
}

// Stream implements llm.ChatModel.
func (m *ChatModel) Stream(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		resp, err := m.respond(req)
		if err != nil {
			yield(llm.Event{}, err)
			return
		}
		for _, piece := range pieces(resp.Text) {
			if err := ctx.Err(); err != nil {
				yield(llm.Event{}, err)
				return
			}
			if !yield(llm.Event{Text: piece}, nil) {
				return
			}
		}
		for _, c := range resp.ToolCalls {
			if !yield(llm.Event{ToolCall: &c}, nil) {
				return
			}
		}
		yield(llm.Event{Done: true, Usage: resp.Usage, StopReason: resp.StopReason}, nil)
	}
}

// pieces cuts text into pieces of up to 4 bytes, on rune boundaries, so a
// streamed citation marker arrives split as a provider's would.
func pieces(text string) []string {
	var out []string
	for len(text) > 0 {
		n := min(4, len(text))
		for n < len(text) && !isRuneStart(text[n]) {
			n++
		}
		out = append(out, text[:n])
		text = text[n:]
	}
	return out
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// usage counts words, which is all a scripted model can promise.
func usage(req llm.Request, reply string) llm.Usage {
	in := 0
	for _, m := range req.Messages {
		in += len(strings.Fields(m.Content))
	}
	return llm.Usage{InputTokens: in, OutputTokens: len(strings.Fields(reply))}
}

// OpenAIServer serves OpenAI's chat-completions API (POST
// /v1/chat/completions, whole or streamed as server-sent events) with the
// replies reply writes from the request's messages (role, content). Point
// the real provider at it: "openai-compatible:MODEL@" + URL + "/v1". It is
// closed when the test ends.
func OpenAIServer(tb testing.TB, reply func(messages []map[string]any) string) *httptest.Server {
	tb.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, `{"error":{"message":"not found","type":"invalid_request_error"}}`, http.StatusNotFound)
			return
		}
		var req struct {
			Model    string           `json:"model"`
			Messages []map[string]any `json:"messages"`
			Stream   bool             `json:"stream"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model == "" || len(req.Messages) == 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"message":"model and messages are required","type":"invalid_request_error"}}`)
			return
		}
		text := reply(req.Messages)
		if !req.Stream {
			content, _ := json.Marshal(text)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":%q,"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":%s}}],"usage":{"prompt_tokens":10,"completion_tokens":%d,"total_tokens":%d}}`,
				req.Model, content, len(strings.Fields(text)), 10+len(strings.Fields(text)))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, piece := range pieces(text) {
			b, _ := json.Marshal(piece)
			fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{\"content\":%s},\"finish_reason\":null}]}\n\n", req.Model, b)
		}
		fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n", req.Model)
	}))
	tb.Cleanup(srv.Close)
	return srv
}
