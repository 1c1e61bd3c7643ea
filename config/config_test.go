package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func environ(kv ...string) func() []string { return func() []string { return kv } }

func TestLoadPrecedence(t *testing.T) {
	dir := t.TempDir()
	c, err := Load(dir, environ())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, Defaults()) {
		t.Errorf("no file, no env: %+v", c)
	}
	os.WriteFile(filepath.Join(dir, FileName), []byte("embedder = \"ollama:nomic\"\n[search]\ntop_k = 7\nmode = \"keyword\"\n"), 0o644)
	c, err = Load(dir, environ("QUARRY_SEARCH_TOP_K=3", "QUARRY_COLLECTION=docs", "QUARRY_KB=/x", "QUARRY_TEST_PG_DSN=postgres://", "QUARRY_MY_OWN_THING=1", "QUARRY_SEARCH_NOPE=2", "OTHER=1"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Embedder != "ollama:nomic" || c.Search.Mode != "keyword" {
		t.Errorf("file not applied: %+v", c)
	}
	if c.Search.TopK != 3 || c.Collection != "docs" {
		t.Errorf("environment must override the file: %+v", c)
	}
	if c.Chunking != Defaults().Chunking {
		t.Errorf("untouched section changed: %+v", c.Chunking)
	}
	path := filepath.Join(dir, FileName)
	for key, want := range map[string]string{"search.top_k": "QUARRY_SEARCH_TOP_K", "embedder": path, "search.mode": path, "chunking.max_tokens": ""} {
		if got := c.Origin(key); got != want {
			t.Errorf("Origin(%q) = %q, want %q", key, got, want)
		}
	}
	// An invalid setting names where it came from.
	if _, err := Load(dir, environ("QUARRY_SEARCH_MODE=semantic")); err == nil || !strings.Contains(err.Error(), "environment variable QUARRY_SEARCH_MODE") || strings.Contains(err.Error(), FileName) {
		t.Errorf("a bad variable: %v", err)
	}
	os.WriteFile(path, []byte("[search]\nmode = \"semantic\"\n"), 0o644)
	if _, err := Load(dir, environ()); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("a bad file setting: %v", err)
	}
}

func TestLoadRejects(t *testing.T) {
	for _, tc := range []struct{ file, env, says string }{
		{"embeder = \"x\"\n", "", "embeder"},
		{"[search]\ntopk = 3\n", "", "topk"},
		{"[search]\ntop_k = 0\n", "", "top_k"},
		{"[chunking]\nsplitter = \"magic\"\n", "", "magic"},
		{"[chunking]\noverlap_tokens = 600\n", "", "overlap_tokens"},
		{"not toml ===", "", FileName},
		{"", "QUARRY_SEARCH_TOP_K=many", "top_k"},
		{"[search]\ncalibrate = \"always\"\n", "", "search.calibrate"},
		{"", "QUARRY_SEARCH_CALIBRATE=yes", "calibrate"},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, FileName), []byte(tc.file), 0o644)
		var e func() []string
		if tc.env != "" {
			e = environ(tc.env)
		} else {
			e = environ()
		}
		_, err := Load(dir, e)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("file %q env %q: %v, want an error naming %q", tc.file, tc.env, err, tc.says)
		}
	}
}

func TestTemplateLoadsAsDefaults(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, FileName), []byte(Template(Defaults())), 0o644)
	c, err := Load(dir, environ())
	if err != nil {
		t.Fatal(err)
	}
	c.origins = nil // every setting is the file's
	if !reflect.DeepEqual(c, Defaults()) {
		t.Errorf("template loads as %+v", c)
	}
}

func TestFindKB(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "a", "b")
	os.MkdirAll(deep, 0o755)
	none := func(string) string { return "" }
	dir, found, err := FindKB(deep, none)
	if err != nil || found || dir != filepath.Join(deep, DirName) {
		t.Errorf("no kb: %s %v %v", dir, found, err)
	}
	os.Mkdir(filepath.Join(root, DirName), 0o755)
	dir, found, _ = FindKB(deep, none)
	if !found || dir != filepath.Join(root, DirName) {
		t.Errorf("upward search: %s %v", dir, found)
	}
	dir, found, _ = FindKB(deep, func(k string) string {
		if k == EnvKB {
			return "/elsewhere/kb"
		}
		return ""
	})
	if dir != "/elsewhere/kb" || found {
		t.Errorf("QUARRY_KB: %s %v", dir, found)
	}
}

// TestLoadWithoutDir checks a knowledge base with no directory (a store URL
// alone) reads no config.toml from the working directory.
func TestLoadWithoutDir(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, FileName), []byte("bogus = 1\n"), 0o644)
	t.Chdir(dir)
	c, err := Load("", environ("QUARRY_SEARCH_TOP_K=4"))
	if err != nil || c.Search.TopK != 4 || c.Embedder != Defaults().Embedder {
		t.Errorf("Load(\"\"): %+v %v", c, err)
	}
}
