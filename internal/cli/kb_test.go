package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/embedded"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestIngestSearchStatusDelete(t *testing.T) {
	docs := t.TempDir()
	kb := filepath.Join(t.TempDir(), "kb")
	writeFiles(t, docs, map[string]string{
		"policies/refunds.md":  "# Refunds\n\nRefunds are paid within five days of the return.\n\n## Gift cards\n\nGift cards are never refunded.\n",
		"policies/shipping.md": "# Shipping\n\nShipping takes two days; express shipping takes one day.\n",
		"broken.json":          `{"a":`,
	})
	// Search before anything exists tells people what to do.
	code, _, errOut := run(t, "", "search", "refunds", "--kb", kb)
	if code != 1 || !strings.Contains(errOut, "quarry ingest") {
		t.Errorf("search without a knowledge base: %d %q", code, errOut)
	}

	// A file that cannot be parsed is that file's outcome; the run
	// succeeds, unless --strict asks otherwise.
	code, out, errOut := run(t, "", "ingest", docs, "--kb", kb, "--meta", "team=support", "--meta", "tier=2")
	if code != 0 || !strings.Contains(out, "3 files: 2 written") || !strings.Contains(errOut, "broken.json") {
		t.Fatalf("ingest with a bad file: code %d out %q err %q", code, out, errOut)
	}
	code, _, errOut = run(t, "", "ingest", docs, "--kb", kb, "--meta", "team=support", "--meta", "tier=2", "--strict")
	if code != 1 || !strings.Contains(errOut, "1 of 3 files could not be parsed") {
		t.Fatalf("ingest --strict with a bad file: code %d err %q", code, errOut)
	}
	code, _, errOut = run(t, "", "ingest", filepath.Join(docs, "broken.json"), "--kb", kb)
	if code != 1 || !strings.Contains(errOut, "no file could be read: 1 could not be parsed") {
		t.Fatalf("ingest of nothing readable: code %d err %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(kb, "config.toml")); err != nil {
		t.Errorf("no config.toml: %v", err)
	}
	os.Remove(filepath.Join(docs, "broken.json"))
	code, out, _ = run(t, "", "ingest", docs, "--kb", kb, "--meta", "team=support", "--meta", "tier=2", "--json")
	if code != 0 {
		t.Fatalf("second ingest: %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var last map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last["event"] != "done" {
		t.Errorf("--json progress: %q", lines[len(lines)-1])
	}
	for _, key := range []string{"event", "files", "chunks", "tokens", "rate", "eta_s"} {
		if _, ok := last[key]; !ok {
			t.Errorf("progress line lacks %q", key)
		}
	}

	code, out, errOut = run(t, "", "search", "gift cards refunded", "--kb", kb, "-k", "2")
	if code != 0 || !strings.Contains(out, "1. [") || !strings.Contains(out, "policies/refunds.md · Refunds › Gift cards") || !strings.Contains(out, "«Gift»") {
		t.Errorf("search: %d %q %q", code, out, errOut)
	}
	code, out, _ = run(t, "", "search", "shipping", "--kb", kb, "--json", "--mode", "hybrid", "--explain", "--filter", "sourceName = 'policies/shipping.md'")
	hits, err := searchHits(out)
	if code != 0 || err != nil || len(hits) == 0 || hits[0]["source"] != "policies/shipping.md" || hits[0]["explain"] == nil {
		t.Errorf("json hybrid search: %d %q", code, out)
	}
	if md, _ := hits[0]["metadata"].(map[string]any); md["team"] != "support" || md["tier"] != float64(2) {
		t.Errorf("--meta not on chunks: %v", hits[0]["metadata"])
	}
	code, _, errOut = run(t, "", "search", "x", "--kb", kb, "--filter", "tier >= 2")
	if code != 2 || !strings.Contains(errOut, `"tier"`) {
		t.Errorf("filtering an undeclared field: %d %q", code, errOut)
	}
	code, out, _ = run(t, "", "status", "--kb", kb)
	if code != 0 || !strings.Contains(out, "default") || !strings.Contains(out, "hash") {
		t.Errorf("status: %q", out)
	}
	code, out, _ = run(t, "", "delete", "--kb", kb, "--source", "policies/shipping.md")
	if code != 0 || !strings.Contains(out, "deleted 1 chunks") {
		t.Errorf("delete: %d %q", code, out)
	}
	code, out, _ = run(t, "", "status", "--kb", kb, "--json")
	var st struct {
		Collections []struct {
			Chunks  int `json:"chunks"`
			Sources int `json:"sources"`
		} `json:"collections"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st.Collections) != 1 || st.Collections[0].Sources != 1 {
		t.Errorf("status after delete: %q", out)
	}
	code, _, errOut = run(t, "", "delete", "--kb", kb)
	if code != 2 {
		t.Errorf("delete without a target: %d %q", code, errOut)
	}
}

func TestInitWithSchema(t *testing.T) {
	kb := filepath.Join(t.TempDir(), "kb")
	code, out, errOut := run(t, "", "init", "--kb", kb, "--schema", "testdata/schema.json", "--collection", "handbook")
	if code != 0 || !strings.Contains(out, `collection "handbook"`) {
		t.Fatalf("init: %d %q %q", code, out, errOut)
	}
	docs := t.TempDir()
	writeFiles(t, docs, map[string]string{"a.md": "# A\n\nSome text that is long enough to keep.\n"})
	code, _, errOut = run(t, "", "ingest", docs, "--kb", kb, "--collection", "handbook")
	if code != 1 || !strings.Contains(errOut, "tenant") {
		t.Errorf("ingest without a required field: %d %q", code, errOut)
	}
	code, _, errOut = run(t, "", "ingest", docs, "--kb", kb, "--collection", "handbook", "--meta", "tenant=acme")
	if code != 0 {
		t.Errorf("ingest with the required field: %d %q", code, errOut)
	}
	code, out, _ = run(t, "", "search", "text", "--kb", kb, "--collection", "handbook", "--filter", "tenant = 'acme'")
	if code != 0 || !strings.Contains(out, "a.md") {
		t.Errorf("filtered search: %q", out)
	}
	code, _, errOut = run(t, "", "init", "--kb", kb, "--embedder", "word2vec")
	if code != 2 || !strings.Contains(errOut, "word2vec") {
		t.Errorf("unknown embedder: %d %q", code, errOut)
	}
}

func TestIngestResume(t *testing.T) {
	docs := t.TempDir()
	kb := filepath.Join(t.TempDir(), "kb")
	writeFiles(t, docs, map[string]string{"a.md": "# A\n\nAlpha text that is long enough to keep.\n"})
	if code, _, errOut := run(t, "", "ingest", "--kb", kb, "--resume"); code != 1 || !strings.Contains(errOut, "knowledge base") {
		t.Errorf("resume without a knowledge base: %d %q", code, errOut)
	}
	if code, _, _ := run(t, "", "ingest", docs, "--kb", kb, "--meta", "team=ops"); code != 0 {
		t.Fatal("ingest failed")
	}
	if code, _, errOut := run(t, "", "ingest", "--kb", kb, "--resume"); code != 2 || !strings.Contains(errOut, "no interrupted") {
		t.Errorf("resume after a finished job: %d %q", code, errOut)
	}
	// A crash leaves the job "running" with a stale heartbeat.
	b, err := embedded.Open(context.Background(), kb, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	jobs, _ := b.ListJobs(context.Background(), 1)
	j := jobs[0]
	j.ID, j.State, j.Started, j.Updated = "crashed", store.JobRunning, time.Now().Add(time.Minute), time.Now().Add(-time.Hour)
	if err := b.PutJob(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	b.Close()
	writeFiles(t, docs, map[string]string{"b.md": "# B\n\nBeta text that is also long enough to keep.\n"})
	code, out, errOut := run(t, "", "ingest", "--kb", kb, "--resume")
	if code != 0 || !strings.Contains(errOut, "resuming") || !strings.Contains(out, "2 files: 1 written, 1 unchanged") {
		t.Errorf("resume: %d %q %q", code, out, errOut)
	}
	code, out, _ = run(t, "", "search", "beta", "--kb", kb, "--json")
	if code != 0 || !strings.Contains(out, `"team": "ops"`) {
		t.Errorf("resumed run lost --meta: %q", out)
	}
}

func TestMigrate(t *testing.T) {
	docs := t.TempDir()
	kb := filepath.Join(t.TempDir(), "kb")
	writeFiles(t, docs, map[string]string{"a.md": "# A\n\nAlpha text that is long enough to keep.\n", "b.md": "# B\n\nBeta text that is long enough to keep.\n"})
	if code, _, _ := run(t, "", "ingest", docs, "--kb", kb); code != 0 {
		t.Fatal("ingest")
	}
	target := filepath.Join(t.TempDir(), "kb2")
	code, out, errOut := run(t, "", "migrate", "--from", kb, "--to", "embedded:"+target, "--all")
	if code != 0 || !strings.Contains(out, "default: 2 documents, 2 sources copied, 0 sources already there") || !strings.Contains(errOut, "default: 2/2 documents") {
		t.Fatalf("migrate: %d %q %q", code, out, errOut)
	}
	if !strings.Contains(out, "; 1 nodes") || !strings.Contains(out, "1 ingestion jobs and 0 conversation threads copied") {
		t.Errorf("migrate lost the hierarchy or the jobs: %q", out)
	}
	code, out, errOut = run(t, "", "migrate", "--kb", kb, "--to", "embedded:"+target, "--all")
	if code != 0 || !strings.Contains(out, "default: 0 documents, 0 sources copied, 2 sources already there; 1 nodes") {
		t.Fatalf("migrate again: %d %q %q", code, out, errOut)
	}
	// The hierarchy and the jobs came along, once.
	code, tree, _ := run(t, "", "tree", "--kb", target)
	_, orig, _ := run(t, "", "tree", "--kb", kb)
	if code != 0 || tree != orig || !strings.Contains(tree, "Root") {
		t.Errorf("tree of the copy:\n%s\nwant:\n%s", tree, orig)
	}
	if code, st, _ := run(t, "", "status", "--kb", target); code != 0 || !strings.Contains(st, "last job") {
		t.Errorf("status of the copy lacks the last job:\n%s", st)
	}
	// The copy is a working knowledge base: search it, and re-ingesting
	// into it skips the unchanged files.
	code, out, _ = run(t, "", "search", "beta", "--kb", target)
	if code != 0 || !strings.Contains(out, "b.md") {
		t.Errorf("search the copy: %q", out)
	}
	code, out, _ = run(t, "", "ingest", docs, "--kb", target)
	if code != 0 || !strings.Contains(out, "0 written, 2 unchanged") {
		t.Errorf("ingest into the copy: %q", out)
	}
	if code, _, errOut = run(t, "", "migrate", "--kb", kb, "--to", "nosuch://x"); code != 2 {
		t.Errorf("bad target: %d %q", code, errOut)
	}
}

func TestStoreFlag(t *testing.T) {
	docs := t.TempDir()
	kb := filepath.Join(t.TempDir(), "kb")
	elsewhere := filepath.Join(t.TempDir(), "other-store")
	writeFiles(t, docs, map[string]string{"a.md": "# A\n\nAlpha text that is long enough to keep.\n"})
	if code, _, errOut := run(t, "", "ingest", docs, "--kb", kb, "--store", "embedded:"+elsewhere); code != 0 {
		t.Fatalf("ingest --store: %q", errOut)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "quarry.db")); err != nil {
		t.Errorf("--store did not choose the store: %v", err)
	}
	if code, out, _ := run(t, "", "search", "alpha", "--kb", kb, "--store", "embedded:"+elsewhere); code != 0 || !strings.Contains(out, "a.md") {
		t.Errorf("search --store: %q", out)
	}
	if code, _, errOut := run(t, "", "search", "alpha", "--kb", kb); code != 1 || !strings.Contains(errOut, "does not exist") {
		t.Errorf("the knowledge base's own store should be empty: %d %q", code, errOut)
	}
}

func TestSetup(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	if code, out, errOut := run(t, "", "setup", "--store", "embedded:"+dir); code != 0 || !strings.Contains(out, "store ready") {
		t.Errorf("setup: %d %q %q", code, out, errOut)
	}
	if code, _, _ := run(t, "", "setup"); code != 2 {
		t.Errorf("setup without --store: %d", code)
	}
	if code, _, _ := run(t, "", "setup", "--store", "nosuch://x"); code != 1 {
		t.Errorf("setup with an unknown store: %d", code)
	}
}
