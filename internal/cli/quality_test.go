package cli_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

func TestAskQualityFlags(t *testing.T) {
	t.Setenv("QUARRY_LLM", "")
	kb := ingestCorpus(t)
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("q") == "" || r.URL.Query().Get("format") != "json" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		io.WriteString(w, `{"results":[{"url":"https://example.com/refunds","title":"Refund law","content":"Refunds are due within fourteen days by law.","score":1}]}`)
	}))
	defer web.Close()
	brave := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Subscription-Token") != "brave-test" || r.URL.Query().Get("q") == "" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		io.WriteString(w, `{"type":"search","web":{"type":"search","results":[{"title":"Lunar tariffs","url":"https://example.com/moon","description":"Parcels to the <strong>moon</strong> cost ninety credits."}]}}`)
	}))
	defer brave.Close()
	t.Setenv("BRAVE_SEARCH_API_KEY", "brave-test")
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, "json format disabled")
	}))
	defer down.Close()
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		check    func(a map[string]any, errOut string) bool
	}{
		{"post-processors", []string{"--post", "dedupe,mmr,adaptive,neighbours,pack=2000"}, 0, func(a map[string]any, _ string) bool {
			return strings.Contains(a["answer"].(string), "refund")
		}},
		{"web source", []string{"--web", web.URL, "-k", "10"}, 0, func(a map[string]any, _ string) bool {
			return a["sourceErrors"] == nil
		}},
		{"failed web source is reported", []string{"--web", down.URL}, 0, func(a map[string]any, _ string) bool {
			errs, _ := a["sourceErrors"].([]any)
			return len(errs) == 1 && strings.Contains(errs[0].(map[string]any)["error"].(string), "json format disabled")
		}},
		{"brave web source", []string{"--web", "brave@" + brave.URL}, 0, func(a map[string]any, _ string) bool {
			return a["sourceErrors"] == nil
		}},
		{"unknown web search", []string{"--web", "bing"}, 2, nil},
		{"transform needs a model", []string{"--transform", "hyde"}, 2, nil},
		{"unknown post-processor", []string{"--post", "sparkle"}, 2, nil},
		{"rerank=llm needs a model", []string{"--post", "rerank=llm"}, 2, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, "", append([]string{"ask", "How long do refunds take?", "--kb", kb, "--json"}, tc.args...)...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d: %q %q", code, tc.wantCode, out, errOut)
			}
			if tc.check == nil {
				return
			}
			var a map[string]any
			if err := json.Unmarshal([]byte(out), &a); err != nil {
				t.Fatal(err)
			}
			if !tc.check(a, errOut) {
				t.Errorf("answer %s", out)
			}
		})
	}
}

// TestAgentWebFallback: what the knowledge base lacks, the agent looks up
// on the web (Brave here) and cites from there.
func TestAgentWebFallback(t *testing.T) {
	t.Setenv("QUARRY_LLM", "")
	kb := ingestCorpus(t)
	brave := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"type":"search","web":{"type":"search","results":[{"title":"Lunar tariffs","url":"https://example.com/moon","description":"Parcels to the <strong>moon</strong> cost ninety credits."}]}}`)
	}))
	defer brave.Close()
	t.Setenv("BRAVE_SEARCH_API_KEY", "brave-test")
	code, out, errOut := run(t, "", "ask", "What do parcels to the moon cost?", "--kb", kb, "--agent", "--web", "brave@"+brave.URL)
	if code != 0 || !strings.Contains(out, "ninety credits") || !strings.Contains(out, "https://example.com/moon") || !strings.Contains(errOut, `"source":"web"`) {
		t.Errorf("%d %q %q", code, out, errOut)
	}
}

// chatServer is an OpenAI-compatible chat server whose replies depend on
// the system prompt: Quarry's query rewrite, the judge's three prompts, and
// answers.
func chatServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		sys := req.Messages[0].Content
		reply := "Refunds are paid within five days of the return [1]."
		switch {
		case strings.Contains(sys, "best search query"):
			reply = "refund payment delay after a return"
		case strings.Contains(sys, "supported by the passages"):
			reply = `{"score": 0.8, "reason": "mostly supported"}`
		case strings.Contains(sys, "addresses the question"):
			reply = `{"score": 1, "reason": "on topic"}`
		case strings.Contains(sys, "useful for answering"):
			n := strings.Count(req.Messages[len(req.Messages)-1].Content, "\n[")
			v := make([]bool, n)
			if n > 0 {
				v[n-1] = true
			}
			b, _ := json.Marshal(map[string]any{"verdicts": v})
			reply = string(b)
		}
		content, _ := json.Marshal(reply)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":`+string(content)+`},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestAskTransformAndEvalLLMJudge(t *testing.T) {
	t.Setenv("QUARRY_LLM", "")
	kb := ingestCorpus(t)
	model := "openai-compatible:m@" + chatServer(t).URL + "/v1"
	code, out, errOut := run(t, "", "ask", "How long do refunds take?", "--kb", kb, "--model", model, "--transform", "rewrite", "--json")
	if code != 0 {
		t.Fatalf("ask: %d %q %q", code, out, errOut)
	}
	var a struct {
		Answer string `json:"answer"`
		Query  string `json:"query"`
	}
	if err := json.Unmarshal([]byte(out), &a); err != nil || a.Query != "refund payment delay after a return" || !strings.Contains(a.Answer, "five days") {
		t.Errorf("answer %s", out)
	}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"golden.jsonl": `{"id":"r","question":"How long do refunds take?","reference":"Five days.","sources":["policies/refunds.md"]}`})
	golden := filepath.Join(dir, "golden.jsonl")
	code, out, errOut = run(t, "", "eval", "--golden", golden, "--kb", kb, "--model", model, "--judge", "llm", "--judge-model", model,
		"--gate", "faithfulness>=0.8", "--gate", "contextual_precision>=0.9", "--json")
	if code != 3 {
		t.Fatalf("eval: %d %q %q", code, out, errOut)
	}
	var rep struct {
		Judge string `json:"judge"`
		Runs  []struct {
			Mean map[string]float64 `json:"mean"`
		} `json:"runs"`
		Gates []struct {
			Pass bool `json:"pass"`
		} `json:"gates"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || !strings.HasPrefix(rep.Judge, "llm") || len(rep.Gates) != 2 ||
		!rep.Gates[0].Pass || rep.Gates[1].Pass || rep.Runs[0].Mean["faithfulness"] != 0.8 || rep.Runs[0].Mean["answer_relevancy"] != 1 {
		t.Errorf("report %v: %s", err, out)
	}
}

func TestAskMemory(t *testing.T) {
	t.Setenv("QUARRY_LLM", "")
	kb := ingestCorpus(t)
	for _, q := range []struct{ thread, text string }{{"alice-1", "My order number is 4411, how long do refunds take?"}, {"bob-1", "My order number is 9999, how long is shipping?"}} {
		if code, out, errOut := run(t, "", "ask", q.text, "--kb", kb, "--thread", q.thread); code != 0 {
			t.Fatalf("ask: %d %q %q", code, out, errOut)
		}
	}
	code, out, errOut := run(t, "", "ask", "what was my order number", "--kb", kb, "--memory", "alice-1", "--json")
	if code != 0 {
		t.Fatalf("ask: %d %q %q", code, out, errOut)
	}
	if !strings.Contains(out, "4411") || strings.Contains(out, "9999") {
		t.Errorf("answer %s", out)
	}
}
