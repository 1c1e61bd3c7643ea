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

func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

func TestBenchANNJSON(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := runCLI("bench", "ann", "--n", "400", "--dim", "8", "--queries", "10", "--clusters", "4",
		"--ef", "16,32", "--filter-selectivity", "0.5", "--threads", "2", "--json", "--export", dir)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep struct {
		Sweep    []struct{ Ef int }      `json:"sweep"`
		Filtered []struct{ Allowed int } `json:"filtered"`
		Inserts  struct{ Wall float64 }  `json:"insertsPerSecond"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if len(rep.Sweep) != 2 || len(rep.Filtered) != 1 || rep.Inserts.Wall <= 0 {
		t.Fatalf("report %+v", rep)
	}
	for _, f := range []string{"base.fvecs", "query.fvecs", "gt.ivecs"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBenchANNTable(t *testing.T) {
	code, out, stderr := runCLI("bench", "ann", "--n", "300", "--dim", "8", "--queries", "5", "--clusters", "3", "--ef", "16")
	if code != ExitOK || !strings.Contains(out, "recall@10") || !strings.Contains(out, "inserts/s") {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
}

func TestBenchANNUsage(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "ann", "--n", "0"},
		{"bench", "ann", "--filter-selectivity", "1.5"},
		{"bench", "ann", "--ef", "-3"},
		{"bench", "ann", "--nope"},
		{"bench", "ann", "extra"},
	} {
		if code, _, _ := runCLI(args...); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, ExitUsage)
		}
	}
}
