package quarry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/internal/cli"
	"github.com/quarry-rag/quarry/mcp"
	"github.com/quarry-rag/quarry/server"
)

// surfaces reach one knowledge base through the library, the command line
// (--json), the HTTP API and MCP; each returns the raw JSON of its answer.
type surfaces struct {
	dir  string
	kb   *quarry.KB
	http string
	mcp  *sdk.ClientSession
}

func newSurfaces(t *testing.T) *surfaces {
	t.Helper()
	for _, v := range []string{"QUARRY_KB", "QUARRY_LLM", "QUARRY_EMBEDDER", "QUARRY_SEARCH_MODE", "QUARRY_COLLECTION", "QUARRY_STORE"} {
		t.Setenv(v, "") // restored when the test ends
		os.Unsetenv(v)
	}
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), ".quarry")
	cliRun(t, "ingest", "testdata/parity", "--kb", dir)
	kb, err := quarry.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kb.Close() })

	srv, err := server.New(server.Config{KB: kb, RateLimit: -1})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { hs.Close(); srv.Close() })

	ms, err := mcp.New(mcp.Config{KB: kb, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	st, ct := sdk.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- ms.Run(mctx, st) }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "parity", Version: "1"}, nil).Connect(mctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		<-done
		ms.Close()
	})
	return &surfaces{dir: dir, kb: kb, http: hs.URL, mcp: cs}
}

func cliRun(t *testing.T, args ...string) []byte {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := cli.Run(context.Background(), args, cli.IO{In: strings.NewReader(""), Out: &out, Err: &errOut}); code != 0 {
		t.Fatalf("quarry %v: exit %d: %s", args, code, errOut.String())
	}
	return out.Bytes()
}

func (s *surfaces) post(t *testing.T, path string, body any) []byte {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(s.http+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d %s", path, resp.StatusCode, raw)
	}
	return raw
}

func (s *surfaces) tool(t *testing.T, name string, args map[string]any) []byte {
	t.Helper()
	res, err := s.mcp.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("%s: %v", name, res.Content)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// passages decodes a list of passages, keeping each one's field names.
func passages(t *testing.T, surface string, raw []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: %v: %s", surface, err, raw)
	}
	return out
}

// field decodes one field of a JSON object.
func field(t *testing.T, raw []byte, name string) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	return m[name]
}

// samePassages reports how got differs from want: field names, ids,
// ranks, locations, texts, and scores to 1e-6.
func samePassages(want, got []map[string]any) string {
	if len(want) != len(got) {
		return fmt.Sprintf("%d passages, want %d", len(got), len(want))
	}
	for i := range want {
		wk, gk := keys(want[i]), keys(got[i])
		if !slices.Equal(wk, gk) {
			return fmt.Sprintf("passage %d has fields %v, want %v", i+1, gk, wk)
		}
		for _, k := range wk {
			w, g := want[i][k], got[i][k]
			if wf, ok := w.(float64); ok && k == "score" {
				if gf, _ := g.(float64); math.Abs(wf-gf) > 1e-6 {
					return fmt.Sprintf("passage %d: score %v, want %v", i+1, g, w)
				}
				continue
			}
			if fmt.Sprint(w) != fmt.Sprint(g) {
				return fmt.Sprintf("passage %d: %s = %v, want %v", i+1, k, g, w)
			}
		}
	}
	return ""
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// TestParity sends the same searches and questions through the library,
// the command line, the HTTP API and MCP, and checks every surface returns
// the same passages (ids, ranks, scores to 1e-6, locations, field names)
// and the same cited answers: one core decides, the surfaces only carry.
func TestParity(t *testing.T) {
	s := newSurfaces(t)
	ctx := context.Background()
	const refundsOnly = "sourceName = 'refunds.md' or sourceName = 'guides/returns.md'"
	for _, mode := range []string{"", "auto", "keyword", "vector", "hybrid"} {
		for _, filt := range []string{"", refundsOnly} {
			name := fmt.Sprintf("search mode=%q filter=%v", mode, filt != "")
			t.Run(name, func(t *testing.T) {
				q := "when is a refund paid"
				var fe filter.Expr
				if filt != "" {
					var err error
					if fe, err = filter.Parse(filt); err != nil {
						t.Fatal(err)
					}
				}
				res, err := s.kb.Search(ctx, quarry.Scope{}, quarry.SearchRequest{Query: q, Mode: mode, Filter: fe, TopK: 5, Explain: true, Hierarchy: true})
				if err != nil {
					t.Fatal(err)
				}
				libRaw, _ := json.Marshal(res.Results)
				want := passages(t, "library", libRaw)
				if len(want) == 0 {
					t.Fatal("the library found nothing")
				}

				args := []string{"search", q, "--kb", s.dir, "--json", "-k", "5", "--explain"}
				body := map[string]any{"query": q, "top_k": 5, "explain": true, "hierarchy": true}
				if mode != "" {
					args = append(args, "--mode", mode)
					body["mode"] = mode
				}
				if filt != "" {
					args = append(args, "--filter", filt)
					body["filter"] = filt
				}
				for surface, raw := range map[string][]byte{
					"command line": field(t, cliRun(t, args...), "results"),
					"HTTP":         field(t, s.post(t, "/v1/collections/default/search", body), "results"),
					"MCP":          field(t, s.tool(t, mcp.ToolSearch, body), "results"),
				} {
					if d := samePassages(want, passages(t, surface, raw)); d != "" {
						t.Errorf("%s: %s", surface, d)
					}
				}
			})
		}
	}

	// Answers: a filter, post-processors and a thread (one per surface, so
	// each question is its thread's first).
	for _, mode := range []string{"", "keyword", "hybrid"} {
		t.Run(fmt.Sprintf("ask mode=%q", mode), func(t *testing.T) {
			question := "How long until a refund is paid?"
			fe, err := filter.Parse(refundsOnly)
			if err != nil {
				t.Fatal(err)
			}
			post := []string{"dedupe", "pack=2000"}
			res, err := s.kb.Ask(ctx, quarry.Scope{}, quarry.AskRequest{Question: question, Mode: mode, Filter: fe, Post: post, Thread: "lib-" + mode})
			if err != nil {
				t.Fatal(err)
			}
			libRaw, _ := json.Marshal(res)
			args := []string{"ask", question, "--kb", s.dir, "--json", "--filter", refundsOnly, "--post", strings.Join(post, ","), "--thread", "cli-" + mode}
			body := map[string]any{"question": question, "filter": refundsOnly, "post": post}
			if mode != "" {
				args = append(args, "--mode", mode)
				body["mode"] = mode
			}
			withThread := func(id string) map[string]any {
				b := maps(body)
				b["thread"] = id
				return b
			}
			for surface, raw := range map[string][]byte{
				"command line": cliRun(t, args...),
				"HTTP":         s.post(t, "/v1/collections/default/ask", withThread("http-"+mode)),
				"MCP":          s.tool(t, mcp.ToolAsk, withThread("mcp-"+mode)),
			} {
				for _, f := range []string{"answer", "extractive", "mode", "query"} {
					if w, g := string(field(t, libRaw, f)), string(field(t, raw, f)); w != g {
						t.Errorf("%s: %s = %s, want %s", surface, f, g, w)
					}
				}
				want := passages(t, "library", field(t, libRaw, "citations"))
				if len(want) == 0 {
					t.Fatal("the answer cites nothing")
				}
				if d := samePassages(want, passages(t, surface, field(t, raw, "citations"))); d != "" {
					t.Errorf("%s citations: %s", surface, d)
				}
			}
		})
	}
}

func maps(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
