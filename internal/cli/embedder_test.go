package cli_test

import (
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"unicode"
)

// fakeOllama speaks Ollama's /api/embed: a request {"model","input":[…]}
// gets {"model","embeddings":[[…]…]}. A text's vector counts its words in
// 768 hashed buckets, so texts sharing words are close, as with a real model.
func fakeOllama(t *testing.T, calls *atomic.Int64) *httptest.Server {
	t.Helper()
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/embed" || r.Method != http.MethodPost {
			http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
			return
		}
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "nomic-embed-text" {
			http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
			return
		}
		calls.Add(1)
		out := make([][]float32, len(req.Input))
		for i, text := range req.Input {
			v := make([]float32, 768) // nomic-embed-text's dimension
			v[0] = 0.01               // never the zero vector
			for _, word := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) }) {
				h := sha256.Sum256([]byte(word))
				v[(int(h[0])<<8|int(h[1]))%768]++
			}
			out[i] = v
		}
		json.NewEncoder(w).Encode(map[string]any{"model": req.Model, "embeddings": out})
	}))
}

// TestOllamaEmbedderEndToEnd runs init, ingest and search through the CLI
// with the Ollama embedder against a fake server speaking its API.
func TestOllamaEmbedderEndToEnd(t *testing.T) {
	var calls atomic.Int64
	srv := fakeOllama(t, &calls)
	defer srv.Close()
	spec := "ollama:nomic-embed-text@" + srv.URL
	kb := filepath.Join(t.TempDir(), "kb")
	docs := t.TempDir()
	writeFiles(t, docs, map[string]string{
		"volcanoes.md": "# Volcanoes\n\nMagma rises through the crust and erupts as lava from volcanoes.\n",
		"oceans.md":    "# Oceans\n\nTides follow the moon; ocean currents carry heat around the planet.\n",
	})
	code, out, errOut := run(t, "", "init", "--kb", kb, "--embedder", spec)
	if code != 0 || !strings.Contains(out, "ollama") {
		t.Fatalf("init: %d %q %q", code, out, errOut)
	}
	if code, out, errOut = run(t, "", "ingest", docs, "--kb", kb); code != 0 || !strings.Contains(out, "2 written") {
		t.Fatalf("ingest: %d %q %q", code, out, errOut)
	}
	before := calls.Load()
	if before == 0 {
		t.Fatal("the embedder was never called")
	}
	code, out, errOut = run(t, "", "search", "lava erupts from volcanoes", "--kb", kb, "--mode", "vector", "-k", "1")
	if code != 0 || !strings.Contains(out, "volcanoes.md") {
		t.Errorf("vector search: %d %q %q", code, out, errOut)
	}
	if calls.Load() != before+1 {
		t.Errorf("a search should embed its query once: %d calls", calls.Load()-before)
	}
	code, out, _ = run(t, "", "status", "--kb", kb)
	if code != 0 || !strings.Contains(out, "nomic-embed-text") {
		t.Errorf("status: %q", out)
	}
}
