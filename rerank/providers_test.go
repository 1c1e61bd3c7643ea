package rerank_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/internal/httpx"
	"github.com/quarry-rag/quarry/rerank"
	"github.com/quarry-rag/quarry/rerank/cohere"
	"github.com/quarry-rag/quarry/rerank/jina"
	"github.com/quarry-rag/quarry/rerank/openailike"
	"github.com/quarry-rag/quarry/rerank/voyage"
)

// provider is one reranking API: how to build a client for a fake server,
// the request it must send and the reply the real service gives.
type provider struct {
	name    string
	path    string
	auth    string
	newR    func(url string, opts rerank.HTTPOptions) (rerank.Reranker, error)
	request string // the JSON body expected, keys sorted
	reply   string // a success reply ranking passage 2 over passage 0
	errBody string // how the service words an error
}

var fast = rerank.HTTPOptions{RetryDelay: time.Millisecond}

var providers = []provider{
	{
		name: "cohere", path: "/v2/rerank", auth: "Bearer co-key",
		newR: func(url string, o rerank.HTTPOptions) (rerank.Reranker, error) {
			return cohere.New(cohere.Config{Endpoint: url + "/v2/rerank", APIKey: "co-key", TopN: 2, HTTP: o})
		},
		request: `{"documents":["alpha","beta","gamma"],"model":"rerank-v3.5","query":"which?","top_n":2}`,
		reply:   `{"id":"07734bd2","results":[{"index":2,"relevance_score":0.99},{"index":0,"relevance_score":0.25}],"meta":{"api_version":{"version":"2"},"billed_units":{"search_units":1}}}`,
		errBody: `{"id":"x","message":"invalid request: model 'nope' not found"}`,
	},
	{
		name: "jina", path: "/v1/rerank", auth: "Bearer jina-key",
		newR: func(url string, o rerank.HTTPOptions) (rerank.Reranker, error) {
			return jina.New(jina.Config{Endpoint: url + "/v1/rerank", APIKey: "jina-key", TopN: 2, HTTP: o})
		},
		request: `{"documents":["alpha","beta","gamma"],"model":"jina-reranker-v2-base-multilingual","query":"which?","return_documents":false,"top_n":2}`,
		reply:   `{"model":"jina-reranker-v2-base-multilingual","usage":{"total_tokens":38},"results":[{"index":2,"relevance_score":0.99},{"index":0,"relevance_score":0.25}]}`,
		errBody: `{"detail":"Model nope is not available"}`,
	},
	{
		name: "voyage", path: "/v1/rerank", auth: "Bearer vo-key",
		newR: func(url string, o rerank.HTTPOptions) (rerank.Reranker, error) {
			return voyage.New(voyage.Config{Endpoint: url + "/v1/rerank", APIKey: "vo-key", TopN: 2, HTTP: o})
		},
		request: `{"documents":["alpha","beta","gamma"],"model":"rerank-2.5","query":"which?","top_k":2,"truncation":true}`,
		reply:   `{"object":"list","data":[{"relevance_score":0.99,"index":2},{"relevance_score":0.25,"index":0}],"model":"rerank-2.5","usage":{"total_tokens":26}}`,
		errBody: `{"detail":"Model nope is not supported."}`,
	},
	{
		name: "vllm", path: "/v1/rerank", auth: "",
		newR: func(url string, o rerank.HTTPOptions) (rerank.Reranker, error) {
			return openailike.New(openailike.Config{BaseURL: url + "/v1", TopN: 2, HTTP: o})
		},
		request: `{"documents":["alpha","beta","gamma"],"model":"Qwen/Qwen3-Reranker-4B","query":"which?","top_n":2}`,
		reply:   `{"id":"rerank-1","model":"Qwen/Qwen3-Reranker-4B","usage":{"total_tokens":40},"results":[{"index":2,"document":{"text":"gamma"},"relevance_score":0.99},{"index":0,"document":{"text":"alpha"},"relevance_score":0.25}]}`,
		errBody: `{"object":"error","message":"The model nope does not exist.","type":"NotFoundError","param":null,"code":404}`,
	},
	{
		name: "tei", path: "/rerank", auth: "Bearer tei-key",
		newR: func(url string, o rerank.HTTPOptions) (rerank.Reranker, error) {
			return openailike.New(openailike.Config{BaseURL: url, APIKey: "tei-key", Dialect: openailike.DialectTEI, TopN: 2, HTTP: o})
		},
		request: `{"query":"which?","texts":["alpha","beta","gamma"],"truncate":true}`,
		reply:   `[{"index":2,"score":0.99},{"index":0,"score":0.25},{"index":1,"score":0.01}]`,
		errBody: `{"error":"Input validation error: inputs must have less than 512 tokens","error_type":"Validation"}`,
	},
}

// fake serves one provider: the first fail calls get a 503, then either
// the success reply or, when status is set, that status with the error
// body.
type fake struct {
	p      provider
	fail   int32
	status int
	calls  atomic.Int32
	body   atomic.Value
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := f.calls.Add(1)
	b, _ := io.ReadAll(r.Body)
	f.body.Store(string(b))
	if r.URL.Path != f.p.path || r.Method != http.MethodPost || r.Header.Get("Authorization") != f.p.auth {
		http.Error(w, `{"message":"wrong path, method or key"}`, http.StatusUnauthorized)
		return
	}
	if n <= f.fail {
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"message":"overloaded"}`)
		return
	}
	if f.status != 0 {
		w.WriteHeader(f.status)
		io.WriteString(w, f.p.errBody)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, f.p.reply)
}

func passages() []*document.Document {
	return []*document.Document{document.New("alpha"), document.New("beta"), document.New("gamma")}
}

func TestProviders(t *testing.T) {
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			for _, tc := range []struct {
				name      string
				fail      int32
				status    int
				wantCalls int32
			}{
				{name: "success", wantCalls: 1},
				{name: "retry", fail: 2, wantCalls: 3},
				{name: "error body", status: http.StatusBadRequest, wantCalls: 1},
				{name: "retries run out", fail: 99, wantCalls: 3},
			} {
				t.Run(tc.name, func(t *testing.T) {
					f := &fake{p: p, fail: tc.fail, status: tc.status}
					srv := httptest.NewServer(f)
					defer srv.Close()
					r, err := p.newR(srv.URL, fast)
					if err != nil {
						t.Fatal(err)
					}
					in := passages()
					out, err := r.Rerank(context.Background(), "which?", in)
					if f.calls.Load() != tc.wantCalls {
						t.Errorf("%d calls, want %d", f.calls.Load(), tc.wantCalls)
					}
					if tc.status != 0 || tc.fail > 2 {
						var se *httpx.StatusError
						if !errors.As(err, &se) {
							t.Fatalf("error %v, want a status error", err)
						}
						if tc.status != 0 && (se.StatusCode != tc.status || se.Body != p.errBody) {
							t.Errorf("error %v does not carry the service's body", err)
						}
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					var sent, want any
					json.Unmarshal([]byte(f.body.Load().(string)), &sent)
					json.Unmarshal([]byte(p.request), &want)
					if a, b := mustJSON(sent), mustJSON(want); a != b {
						t.Errorf("request %s, want %s", a, b)
					}
					if len(out) != 2 || out[0].Content != "gamma" || out[0].Score != 0.99 || out[1].Content != "alpha" || out[1].Score != 0.25 || !out[0].Scored {
						t.Errorf("reranked %v", out)
					}
					if in[2].Scored {
						t.Error("the input documents were modified")
					}
				})
			}
			t.Run("empty input makes no call", func(t *testing.T) {
				f := &fake{p: p}
				srv := httptest.NewServer(f)
				defer srv.Close()
				r, _ := p.newR(srv.URL, fast)
				out, err := r.Rerank(context.Background(), "q", nil)
				if err != nil || out == nil || len(out) != 0 || f.calls.Load() != 0 {
					t.Errorf("%v %v after %d calls", out, err, f.calls.Load())
				}
			})
		})
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestMalformedResponses(t *testing.T) {
	for _, tc := range []struct{ reply, want string }{
		{`{"results":[]}`, "no results"},
		{`{"results":[{"index":3,"relevance_score":0.5}]}`, "document 3, which was not sent"},
		{`{"results":[{"index":0,"relevance_score":0.5},{"index":0,"relevance_score":0.4}]}`, "document 0 twice"},
		{`{"results":[{"index":1,"relevance_score":null}]}`, "not a number"},
		{`{"results":[{"index":1,"relevance_score":"0.5"}]}`, "not a number"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, tc.reply) }))
		r, _ := openailike.New(openailike.Config{BaseURL: srv.URL})
		_, err := r.Rerank(context.Background(), "q", passages())
		srv.Close()
		if !errors.Is(err, rerank.ErrResponse) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.reply, err, tc.want)
		}
	}
}

func TestKeysRequired(t *testing.T) {
	for _, v := range []string{cohere.EnvAPIKey, "CO_API_KEY", jina.EnvAPIKey, voyage.EnvAPIKey} {
		t.Setenv(v, "")
	}
	if _, err := cohere.New(cohere.Config{}); err == nil || !strings.Contains(err.Error(), cohere.EnvAPIKey) {
		t.Errorf("cohere: %v", err)
	}
	if _, err := jina.New(jina.Config{}); err == nil || !strings.Contains(err.Error(), jina.EnvAPIKey) {
		t.Errorf("jina: %v", err)
	}
	if _, err := voyage.New(voyage.Config{}); err == nil || !strings.Contains(err.Error(), voyage.EnvAPIKey) {
		t.Errorf("voyage: %v", err)
	}
	if _, err := openailike.New(openailike.Config{}); err == nil {
		t.Error("openailike without a URL")
	}
}
