package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runKeyword(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Run(context.Background(), append([]string{"bench", "keyword"}, args...), IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

func TestBenchKeywordExportAndData(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := runKeyword("--docs", "300", "--vocab", "1000", "--queries", "20", "--passes", "1", "--json", "--export", dir)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep struct {
		Docs      int     `json:"docs"`
		P50Micros float64 `json:"p50Micros"`
		QPS       float64 `json:"qps"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if rep.Docs != 300 || rep.P50Micros <= 0 || rep.QPS <= 0 {
		t.Fatalf("report %+v", rep)
	}
	for _, f := range []string{"corpus.jsonl", "queries.jsonl", "quarry.run"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	code, out, stderr = runKeyword("--data", dir, "--passes", "1")
	if code != ExitOK || !strings.Contains(out, "300 documents") || !strings.Contains(out, "p50") {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
}

func TestBenchKeywordUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--docs", "0"},
		{"--min-terms", "4", "--max-terms", "2"},
		{"--k", "0"},
		{"--nope"},
		{"extra"},
	} {
		if code, _, _ := runKeyword(args...); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, ExitUsage)
		}
	}
	if code, _, _ := runKeyword("--data", filepath.Join(t.TempDir(), "missing"), "--passes", "1"); code != ExitRuntime {
		t.Errorf("missing data: exit %d, want %d", code, ExitRuntime)
	}
}
