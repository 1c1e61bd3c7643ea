package retrieve_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/load"
	"github.com/quarry-rag/quarry/retrieve"
	"github.com/quarry-rag/quarry/retrieve/sourcetest"
)

// count is a request's number of results, for a fake to honour.
func count(t *testing.T, v string, most int) int {
	t.Helper()
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > most {
		t.Errorf("count %q: want 1 to %d", v, most)
		return most
	}
	return n
}

// searxngServe answers as SearXNG's JSON API does.
func searxngServe(t *testing.T, w http.ResponseWriter, r *http.Request, rs []sourcetest.Result) {
	if r.Method != http.MethodGet || r.URL.Path != "/search" || r.URL.Query().Get("format") != "json" || r.URL.Query().Get("q") == "" {
		t.Errorf("searxng request %s %s", r.Method, r.URL)
	}
	var out []map[string]any
	for i, x := range rs {
		out = append(out, map[string]any{"url": x.URL, "title": x.Title, "content": x.Text, "engine": "duckduckgo", "score": 1.0 / float64(i+1)})
	}
	json.NewEncoder(w).Encode(map[string]any{"query": r.URL.Query().Get("q"), "number_of_results": len(out), "results": out})
}

// braveServe answers as the Brave Search API's web search does: results
// under web.results, snippets with <strong> markup.
func braveServe(t *testing.T, w http.ResponseWriter, r *http.Request, rs []sourcetest.Result) {
	q := r.URL.Query()
	if r.Method != http.MethodGet || r.URL.Path != "/res/v1/web/search" || r.Header.Get("X-Subscription-Token") != "brave-key" ||
		!strings.Contains(r.Header.Get("Accept"), "application/json") || q.Get("q") == "" {
		t.Errorf("brave request %s %s token %q", r.Method, r.URL, r.Header.Get("X-Subscription-Token"))
	}
	n := count(t, q.Get("count"), 20)
	var out []map[string]any
	for _, x := range rs[:min(n, len(rs))] {
		out = append(out, map[string]any{"title": x.Title, "url": x.URL, "description": "<strong>" + x.Text + "</strong>",
			"is_source_local": false, "language": "en", "type": "search_result"})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"type": "search", "query": map[string]any{"original": q.Get("q")},
		"web": map[string]any{"type": "search", "results": out}})
}

// tavilyServe answers as Tavily's search API does.
func tavilyServe(t *testing.T, w http.ResponseWriter, r *http.Request, rs []sourcetest.Result) {
	var body struct {
		Query        string `json:"query"`
		MaxResults   int    `json:"max_results"`
		SearchDepth  string `json:"search_depth"`
		IncludeRaw   *bool  `json:"include_raw_content"`
		IncludeImage *bool  `json:"include_images"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || r.Method != http.MethodPost || r.URL.Path != "/search" ||
		r.Header.Get("Authorization") != "Bearer tvly-key" || body.Query == "" || body.MaxResults < 1 || body.MaxResults > 20 ||
		(body.SearchDepth != "basic" && body.SearchDepth != "advanced") {
		t.Errorf("tavily request %s %s %+v (%v)", r.Method, r.URL, body, err)
	}
	var out []map[string]any
	for i, x := range rs[:min(body.MaxResults, len(rs))] {
		out = append(out, map[string]any{"title": x.Title, "url": x.URL, "content": x.Text, "score": 0.9 - 0.1*float64(i), "raw_content": nil})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"query": body.Query, "answer": nil, "images": []any{}, "results": out, "response_time": 0.4})
}

func TestWebSourcesContract(t *testing.T) {
	for name, s := range map[string]sourcetest.Source{
		"searxng": {New: func(u string) retrieve.Retriever { return &retrieve.SearXNG{BaseURL: u, MaxRetries: -1} }, Serve: searxngServe},
		"brave": {New: func(u string) retrieve.Retriever {
			return &retrieve.Brave{APIKey: "brave-key", URL: u + "/res/v1/web/search", MaxRetries: -1}
		}, Serve: braveServe},
		"tavily": {New: func(u string) retrieve.Retriever {
			return &retrieve.Tavily{APIKey: "tvly-key", URL: u + "/search", MaxRetries: -1}
		}, Serve: tavilyServe},
	} {
		s.SourceType = retrieve.SourceWeb
		t.Run(name, func(t *testing.T) { sourcetest.Run(t, s) })
	}
}

// TestWebPages: with a page reader, the top results' pages are fetched and
// read; the default client refuses addresses that are not public.
func TestWebPages(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html><head><title>Refunds</title><script>alert(1)</script></head><body><h1>Refunds</h1><p>Refunds are paid within fourteen days of the return.</p></body></html>"))
	}))
	defer site.Close()
	engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		braveServe(t, w, r, []sourcetest.Result{{URL: site.URL + "/refunds", Title: "Refunds", Text: "snippet only"}})
	}))
	defer engine.Close()
	reader := load.New(load.Options{Untrusted: true})
	defer reader.Close()
	b := &retrieve.Brave{APIKey: "brave-key", URL: engine.URL + "/res/v1/web/search",
		Pages: retrieve.Pages{Reader: reader, Client: site.Client()}}
	docs, err := b.Retrieve(context.Background(), retrieve.Request{Query: "refunds", TopK: 3})
	if err != nil || len(docs) != 1 {
		t.Fatalf("%v %v", docs, err)
	}
	if !strings.Contains(docs[0].Content, "fourteen days") || strings.Contains(docs[0].Content, "snippet only") || strings.Contains(docs[0].Content, "alert") {
		t.Errorf("page passage %q", docs[0].Content)
	}
	// The default client will not fetch a loopback page: the snippet stays.
	b.Pages.Client = nil
	docs, err = b.Retrieve(context.Background(), retrieve.Request{Query: "refunds", TopK: 3})
	if err != nil || len(docs) != 1 || !strings.Contains(docs[0].Content, "snippet only") {
		t.Errorf("a loopback page was read: %v %v", docs, err)
	}
	if _, err := retrieve.PublicClient(0).Get(site.URL); !errors.Is(err, retrieve.ErrNotPublic) {
		t.Errorf("the public client fetched %s: %v", site.URL, err)
	}
}

func TestNewWeb(t *testing.T) {
	for spec, want := range map[string]string{
		"http://localhost:8888":         "*retrieve.SearXNG",
		"searxng@http://localhost:8888": "*retrieve.SearXNG",
		"brave":                         "*retrieve.Brave",
		"tavily+pages":                  "*retrieve.Tavily",
		"tavily@http://proxy/search":    "*retrieve.Tavily",
	} {
		r, err := retrieve.NewWeb(spec, nil)
		if err != nil || typeName(r) != want {
			t.Errorf("%s: %T %v, want %s", spec, r, err, want)
		}
	}
	for _, bad := range []string{"bing", "searxng"} {
		if _, err := retrieve.NewWeb(bad, nil); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	t.Setenv("BRAVE_SEARCH_API_KEY", "")
	t.Setenv("BRAVE_API_KEY", "")
	if _, err := (&retrieve.Brave{}).Retrieve(context.Background(), retrieve.Request{Query: "x"}); err == nil || !strings.Contains(err.Error(), "BRAVE_SEARCH_API_KEY") {
		t.Errorf("brave without a key: %v", err)
	}
}

func typeName(v any) string { return fmt.Sprintf("%T", v) }
