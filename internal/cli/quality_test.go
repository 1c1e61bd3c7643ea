package cli_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
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
