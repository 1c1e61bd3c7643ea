package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quarry-rag/quarry/keys"
	"github.com/quarry-rag/quarry/mcp"
)

// bearer adds a key to every request of a client.
type bearer struct {
	token string
	rt    http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.rt.RoundTrip(r)
}

func dial(t *testing.T, url, token string) (*sdk.ClientSession, error) {
	t.Helper()
	tr := &sdk.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}
	if token != "" {
		tr.HTTPClient = &http.Client{Transport: bearer{token, http.DefaultTransport}}
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), tr, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// TestHTTPKeys: over streamable HTTP with keys, every request needs a key,
// a read key cannot change anything, a scoped key sees only its scope, a
// revoked key is refused, and the last key going refuses everyone.
func TestHTTPKeys(t *testing.T) {
	f := newFixture(t, false)
	kf, err := keys.Open(filepath.Join(t.TempDir(), "keys.json"))
	if err != nil {
		t.Fatal(err)
	}
	mk := func(spec keys.Spec) string {
		_, token, err := kf.Create(spec)
		if err != nil {
			t.Fatal(err)
		}
		return token
	}
	admin := mk(keys.Spec{Permission: keys.PermAdmin})
	reader := mk(keys.Spec{Permission: keys.PermRead})
	writer := mk(keys.Spec{Permission: keys.PermWrite, Filter: "sourceName = 'mine'"})
	hs := httptest.NewServer(f.srv.HTTPHandler(kf))
	defer hs.Close()

	if _, err := dial(t, hs.URL, ""); err == nil {
		t.Fatal("a client without a key connected")
	}
	if _, err := dial(t, hs.URL, "qk_000000000000_nope"); err == nil {
		t.Fatal("a client with an unknown key connected")
	}
	ad, err := dial(t, hs.URL, admin)
	if err != nil {
		t.Fatal(err)
	}
	if j := ingestCorpus(t, ad); j.State != "done" {
		t.Fatalf("admin ingest: %+v", j)
	}
	rd, err := dial(t, hs.URL, reader)
	if err != nil {
		t.Fatal(err)
	}
	var out mcp.SearchOutput
	call(t, rd, mcp.ToolSearch, map[string]any{"query": "parcels Rotterdam"}, &out)
	if len(out.Results) == 0 {
		t.Fatal("the read key found nothing")
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{mcp.ToolAddDocuments, map[string]any{"documents": []map[string]any{{"text": "planted"}}}},
		{mcp.ToolDelete, map[string]any{"source": "shipping.md"}},
		{mcp.ToolIngest, map[string]any{"paths": []string{"docs"}}},
	} {
		if res := callRaw(t, rd, tc.tool, tc.args); !res.IsError || !strings.Contains(text(res), "only read") {
			t.Errorf("read key calling %s: %s", tc.tool, text(res))
		}
	}
	wr, err := dial(t, hs.URL, writer)
	if err != nil {
		t.Fatal(err)
	}
	call(t, wr, mcp.ToolSearch, map[string]any{"query": "parcels Rotterdam"}, &out)
	if len(out.Results) != 0 {
		t.Errorf("a key scoped to sourceName = 'mine' saw %+v", out.Results)
	}
	if res := callRaw(t, wr, mcp.ToolIngest, map[string]any{"paths": []string{"docs"}}); !res.IsError {
		t.Error("a write key ingested server folders")
	}
	// Revoking keys: a revoked key is refused, and with none left every
	// request is.
	list, _ := kf.List()
	for _, k := range list {
		if k.Permission == keys.PermRead {
			if err := kf.Revoke(k.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := dial(t, hs.URL, reader); err == nil {
		t.Error("a revoked key connected")
	}
	for _, k := range list {
		_ = kf.Revoke(k.ID)
	}
	if _, err := dial(t, hs.URL, ""); err == nil {
		t.Error("with every key revoked, a client without a key connected")
	}
	if _, err := dial(t, hs.URL, admin); err == nil {
		t.Error("a revoked admin key connected")
	}
}

// TestHTTPWithoutKeysLoopbackOnly: without keys the handler answers
// loopback clients only.
func TestHTTPWithoutKeysLoopbackOnly(t *testing.T) {
	f := newFixture(t, false)
	kf, err := keys.Open(filepath.Join(t.TempDir(), "keys.json"))
	if err != nil {
		t.Fatal(err)
	}
	h := f.srv.HTTPHandler(kf)
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.RemoteAddr = "192.0.2.9:4000"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusForbidden {
		t.Errorf("keyless request from another host: %d", w.Code)
	}
}
