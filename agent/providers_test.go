package agent_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/agent"
	"github.com/quarry-rag/quarry/llm"
	"github.com/quarry-rag/quarry/llm/anthropic"
	"github.com/quarry-rag/quarry/llm/gemini"
	"github.com/quarry-rag/quarry/llm/mistral"
	"github.com/quarry-rag/quarry/llm/ollama"
	"github.com/quarry-rag/quarry/llm/openai"
)

// turn is what the agent asked for in one request, read from its body.
type turn int

const (
	triageTurn turn = iota
	judgeTurn
	toolTurn // the model should call search
	doneTurn // tool results are in: the model is done
)

// turnOf reads a provider request's body: the triage and verdict schemas
// name their own fields, and a tool round after a search carries the
// passage it returned.
func turnOf(body string) turn {
	switch {
	case strings.Contains(body, "next_query"):
		return judgeTurn
	case strings.Contains(body, "multi_step"):
		return triageTurn
	case strings.Contains(body, "fourteen days"):
		return doneTurn
	}
	return toolTurn
}

const (
	triageJSON  = `{"kind":"lookup","aspects":["refunds"],"sources":["docs"]}`
	verdictJSON = `{"sufficient":true,"missing":"","next_query":""}`
)

// providerFakes answer each provider's own wire format (non-streamed, as
// the agent calls Generate): structured replies as text, a search as the
// provider's tool-call shape.
var providerFakes = map[string]func(w http.ResponseWriter, t turn, judged int){
	"openai": func(w http.ResponseWriter, t turn, judged int) {
		msg := map[string]any{"role": "assistant", "content": textFor(t, judged)}
		finish := "stop"
		if t == toolTurn {
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "call_1", "type": "function",
				"function": map[string]any{"name": "search", "arguments": `{"query":"refunds paid"}`}}}}
			finish = "tool_calls"
		}
		writeJSON(w, map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	},
	"mistral": func(w http.ResponseWriter, t turn, judged int) {
		msg := map[string]any{"role": "assistant", "content": textFor(t, judged), "tool_calls": nil}
		finish := "stop"
		if t == toolTurn {
			msg = map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{"id": "D681PevKs", "type": "function",
				"function": map[string]any{"name": "search", "arguments": `{"query":"refunds paid"}`}}}}
			finish = "tool_calls"
		}
		writeJSON(w, map[string]any{"id": "x", "object": "chat.completion", "model": "m",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	},
	"anthropic": func(w http.ResponseWriter, t turn, judged int) {
		content := []any{map[string]any{"type": "text", "text": textFor(t, judged)}}
		stop := "end_turn"
		if t == toolTurn {
			content = []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "search", "input": map[string]any{"query": "refunds paid"}}}
			stop = "tool_use"
		}
		writeJSON(w, map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": "c", "content": content,
			"stop_reason": stop, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 10, "output_tokens": 5}})
	},
	"gemini": func(w http.ResponseWriter, t turn, judged int) {
		part := map[string]any{"text": textFor(t, judged)}
		if t == toolTurn {
			part = map[string]any{"functionCall": map[string]any{"name": "search", "args": map[string]any{"query": "refunds paid"}}}
		}
		writeJSON(w, map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{part}},
			"finishReason": "STOP", "index": 0}}, "usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 5}})
	},
	"ollama": func(w http.ResponseWriter, t turn, judged int) {
		msg := map[string]any{"role": "assistant", "content": textFor(t, judged)}
		if t == toolTurn {
			msg = map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{"function": map[string]any{"name": "search", "arguments": map[string]any{"query": "refunds paid"}}}}}
		}
		writeJSON(w, map[string]any{"model": "llama3.2", "created_at": "2026-01-01T00:00:00Z", "message": msg, "done": true, "done_reason": "stop",
			"prompt_eval_count": 10, "eval_count": 5})
	},
}

func textFor(t turn, judged int) string {
	switch t {
	case triageTurn:
		return triageJSON
	case judgeTurn:
		if judged == 1 {
			return `{"sufficient":false,"missing":"the refund policy's exceptions","next_query":""}`
		}
		return verdictJSON
	}
	return "DONE"
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func providerModel(t *testing.T, name, url string) llm.ChatModel {
	t.Helper()
	var (
		m   llm.ChatModel
		err error
	)
	switch name {
	case "openai":
		m, err = openai.New(openai.Config{Model: "m", BaseURL: url, APIKey: "k"})
	case "mistral":
		m, err = mistral.New(mistral.Config{Model: "m", BaseURL: url + "/v1", APIKey: "k", RetryDelay: time.Millisecond})
	case "anthropic":
		m, err = anthropic.New(anthropic.Config{Model: "c", BaseURL: url, APIKey: "k"})
	case "gemini":
		m, err = gemini.New(gemini.Config{Model: "gemini-2.5-flash", BaseURL: url, APIKey: "k", RetryDelay: time.Millisecond})
	case "ollama":
		m, err = ollama.New(ollama.Config{Model: "llama3.2", BaseURL: url})
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// toolResultShape is how each provider's request carries a tool's result
// back to the model.
var toolResultShape = map[string]string{
	"openai":    `"tool_call_id":"call_1"`,
	"mistral":   `"tool_call_id":"D681PevKs"`,
	"anthropic": `"tool_use_id":"toolu_1"`,
	"gemini":    `"functionResponse"`,
	"ollama":    `"role":"tool"`,
}

// TestProvidersToolCalls runs the agent's model loop through each
// provider's client against a server speaking that provider's wire
// format: the triage and the verdict arrive as structured replies, the
// search as the provider's tool call, and its result goes back as the
// provider's tool result.
func TestProvidersToolCalls(t *testing.T) {
	for name, fake := range providerFakes {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			var turns []turn
			judged := 0
			var back string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				tn := turnOf(string(b))
				mu.Lock()
				turns = append(turns, tn)
				if tn == judgeTurn {
					judged++
				}
				if tn == doneTurn {
					back = string(b)
				}
				n := judged
				mu.Unlock()
				fake(w, tn, n)
			}))
			defer srv.Close()
			docs := newCorpus(t, "kb", "Refunds are paid within fourteen days.", "Shipping takes three days.")
			g, err := (&agent.Agent{Model: providerModel(t, name, srv.URL), Sources: []agent.Source{{Name: "docs", Searcher: docs}}}).
				Gather(context.Background(), agent.Request{Question: "How fast are refunds paid?"})
			if err != nil {
				t.Fatal(err)
			}
			if g.Triage.By != "model" || g.Triage.Kind != agent.KindLookup {
				t.Errorf("triage %+v", g.Triage)
			}
			if !g.Sufficient || g.ToolCalls != 1 || len(g.Passages) == 0 || g.Passages[0].ID != "kba" {
				t.Errorf("sufficient=%v calls=%d passages=%d", g.Sufficient, g.ToolCalls, len(g.Passages))
			}
			if q := docs.asked(); len(q) != 1 || q[0] != "refunds paid" {
				t.Errorf("searched %q", q)
			}
			want := []turn{triageTurn, toolTurn, judgeTurn, doneTurn, judgeTurn}
			mu.Lock()
			defer mu.Unlock()
			if len(turns) != len(want) {
				t.Fatalf("requests %v, want %v", turns, want)
			}
			for i := range want {
				if turns[i] != want[i] {
					t.Fatalf("requests %v, want %v", turns, want)
				}
			}
			if !strings.Contains(back, toolResultShape[name]) {
				t.Errorf("the tool result went back as %s, want %s in it", back, toolResultShape[name])
			}
			if g.Usage.Total() == 0 {
				t.Error("usage not counted")
			}
		})
	}
}
