package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEvalGate(t *testing.T) {
	if testing.Short() {
		t.Skip("indexes a BEIR dataset")
	}
	dir := filepath.Join("..", "..", "..", "shared", "data", "cranfield")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("BEIR data not found at %s: skipped", dir)
	}
	code, out, errOut := run(t, "", "eval", "--beir", dir, "--mode", "keyword", "--gate", "ndcg@10>=0.33", "--json")
	if code != 0 {
		t.Fatalf("eval: %d %q %q", code, out, errOut)
	}
	var rep struct {
		Configs []struct {
			Mean map[string]float64 `json:"mean"`
		} `json:"configs"`
		Gates []struct {
			Pass bool `json:"pass"`
		} `json:"gates"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Gates) != 1 || !rep.Gates[0].Pass {
		t.Fatalf("report: %q", out)
	}
	t.Logf("cranfield keyword ndcg@10 = %.4f", rep.Configs[0].Mean["ndcg@10"])
	code, _, errOut = run(t, "", "eval", "--beir", dir, "--mode", "keyword", "--gate", "ndcg@10>=0.99")
	if code != 3 || !strings.Contains(errOut, "gate") {
		t.Errorf("failing gate: %d %q", code, errOut)
	}
	code, _, _ = run(t, "", "eval", "--beir", dir, "--gate", "ndcg>>1")
	if code != 2 {
		t.Errorf("bad gate: %d", code)
	}
}
