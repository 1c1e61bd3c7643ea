package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/keys"
)

// TestMounted checks the host's route and Quarry's API answer side by
// side, and that Quarry's keys still hold under the host's mux.
func TestMounted(t *testing.T) {
	ctx := context.Background()
	kb, err := quarry.Open(ctx, "memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer kb.Close()
	kf, err := keys.Open(filepath.Join(t.TempDir(), "keys.json"))
	if err != nil {
		t.Fatal(err)
	}
	_, token, err := kf.Create(keys.Spec{Permission: keys.PermWrite})
	if err != nil {
		t.Fatal(err)
	}
	h, closeSrv, err := handler(kb, kf)
	if err != nil {
		t.Fatal(err)
	}
	defer closeSrv()
	hs := httptest.NewServer(h)
	defer hs.Close()

	do := func(method, path, key string, body any) (int, string) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, hs.URL+path, rd)
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := do("GET", "/hello", "", nil); code != 200 || body != "hello from the host program\n" {
		t.Errorf("host route: %d %q", code, body)
	}
	if code, _ := do("POST", "/kb/v1/collections/default/search", "", map[string]any{"query": "refunds"}); code != http.StatusUnauthorized {
		t.Errorf("search without a key: %d", code)
	}
	if code, body := do("POST", "/kb/v1/collections/default/documents", token, map[string]any{"documents": []map[string]any{{"text": "Refunds take five days.", "source": "refunds.md"}}}); code != 200 {
		t.Fatalf("add: %d %s", code, body)
	}
	code, body := do("POST", "/kb/v1/collections/default/search", token, map[string]any{"query": "refunds"})
	var res quarry.SearchResult
	if code != 200 || json.Unmarshal([]byte(body), &res) != nil || len(res.Results) != 1 || res.Results[0].Source != "refunds.md" {
		t.Errorf("search: %d %s", code, body)
	}
}
