package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
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

// TestEvalGolden runs the golden set over Quarry's docs hermetically: the
// deterministic judge, extractive answers, a scratch knowledge base.
func TestEvalGolden(t *testing.T) {
	golden := filepath.Join("..", "..", "eval", "testdata", "golden", "docs.jsonl")
	docs := filepath.Join("..", "..", "docs")
	report := filepath.Join(t.TempDir(), "report.html")
	code, out, errOut := run(t, "", "eval", "--golden", golden, "--corpus", docs, "--gate", "faithfulness>=0.85",
		"--compare", "pack=1500", "--report", report, "--json")
	if code != 0 {
		t.Fatalf("eval: %d %q %q", code, out, errOut)
	}
	var rep struct {
		Judge string `json:"judge"`
		Runs  []struct {
			Name  string             `json:"name"`
			Mean  map[string]float64 `json:"mean"`
			Cases []struct {
				Answer string `json:"answer"`
				Error  string `json:"error"`
			} `json:"cases"`
		} `json:"runs"`
		Gates []struct {
			Pass bool `json:"pass"`
		} `json:"gates"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Judge != "deterministic" || len(rep.Runs) != 2 ||
		len(rep.Runs[0].Cases) != 10 || len(rep.Gates) != 1 || !rep.Gates[0].Pass {
		t.Fatalf("report %v: %.500q", err, out)
	}
	for _, c := range rep.Runs[0].Cases {
		if c.Error != "" || c.Answer == "" {
			t.Errorf("case: %+v", c)
		}
	}
	t.Logf("baseline %v; pack=1500 %v", rep.Runs[0].Mean, rep.Runs[1].Mean)
	if b, err := os.ReadFile(report); err != nil || !strings.Contains(string(b), "<svg") {
		t.Errorf("HTML report: %v", err)
	}
	code, out, errOut = run(t, "", "eval", "--golden", golden, "--corpus", docs, "--gate", "answer_relevancy>=0.99")
	if code != 3 || !strings.Contains(errOut, "gate") || !strings.Contains(out, "FAIL") {
		t.Errorf("failing gate: %d %q %q", code, out, errOut)
	}
	for _, args := range [][]string{
		{"--gate", "ndcg@10>=0.5"},
		{"--judge", "oracle"},
		{"--compare", "sparkle"},
	} {
		code, _, errOut = run(t, "", append([]string{"eval", "--golden", golden, "--corpus", docs}, args...)...)
		if code != 2 {
			t.Errorf("%v: exit %d %q", args, code, errOut)
		}
	}
}

// goDocDir is Go's own documentation, $(go env GOROOT)/doc; the test is
// skipped without it.
func goDocDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Skipf("go env GOROOT: %v", err)
	}
	goDoc := filepath.Join(strings.TrimSpace(string(out)), "doc")
	if _, err := os.Stat(filepath.Join(goDoc, "go_spec.html")); err != nil {
		t.Skipf("Go's documentation is not at %s: skipped", goDoc)
	}
	return goDoc
}

// TestEvalOfflineGate is the CI gate on offline answers: the golden set
// of eval/testdata/golden/offline.jsonl over Go's documentation and
// Quarry's docs/, answered extractively with the default relevance floor.
// The thresholds are issue #24's: quoted sentences that answer or come
// from a relevant source, answering sentences quoted, abstention on the
// unanswerable questions, answers to the answerable ones, no markup.
func TestEvalOfflineGate(t *testing.T) {
	if testing.Short() {
		t.Skip("ingests Go's documentation")
	}
	goDoc := goDocDir(t)
	golden := filepath.Join("..", "..", "eval", "testdata", "golden", "offline.jsonl")
	code, stdout, errOut := run(t, "", "eval", "--golden", golden, "--corpus", goDoc, "--corpus", filepath.Join("..", "..", "docs"),
		"--gate", "sentence_precision>=0.80", "--gate", "sentence_recall>=0.60", "--gate", "abstention>=0.9",
		"--gate", "answered>=0.9", "--gate", "markup<=0", "--json")
	var rep struct {
		Runs []struct {
			Mean map[string]float64 `json:"mean"`
		} `json:"runs"`
		Gates []struct {
			Gate  string  `json:"gate"`
			Value float64 `json:"value"`
			Pass  bool    `json:"pass"`
		} `json:"gates"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || len(rep.Runs) != 1 || len(rep.Gates) != 5 {
		t.Fatalf("eval: exit %d, %v: %.500q %q", code, err, stdout, errOut)
	}
	for _, g := range rep.Gates {
		if !g.Pass {
			t.Errorf("gate %s: %.4f", g.Gate, g.Value)
		}
	}
	if code != 0 {
		t.Errorf("exit %d: %q", code, errOut)
	}
	t.Logf("offline answers: %v", rep.Runs[0].Mean)
}

// TestEvalCalibrate calibrates a knowledge base, sees the choice in quarry
// status, and removes it.
func TestEvalCalibrate(t *testing.T) {
	docs := t.TempDir()
	for i := range 220 {
		var words []string
		for j := range 40 {
			words = append(words, fmt.Sprintf("w%03dterm", (i*7+j*j*13)%300))
		}
		text := fmt.Sprintf("# Note %d\n\n%s.\n", i, strings.Join(words, " "))
		if err := os.WriteFile(filepath.Join(docs, fmt.Sprintf("n%03d.md", i)), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	kb := t.TempDir()
	if code, _, errOut := run(t, "", "ingest", "--kb", kb, docs); code != 0 {
		t.Fatalf("ingest: %d %s", code, errOut)
	}
	code, out, errOut := run(t, "", "eval", "--calibrate", "--kb", kb, "--queries", "100", "--json")
	if code != 0 {
		t.Fatalf("eval --calibrate: %d %s", code, errOut)
	}
	var res struct {
		Saved       bool `json:"saved"`
		Calibration struct {
			Choice struct {
				Name string `json:"name"`
			} `json:"choice"`
			Scores []json.RawMessage `json:"scores"`
		} `json:"calibration"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || !res.Saved || res.Calibration.Choice.Name == "" || len(res.Calibration.Scores) != 6 {
		t.Fatalf("result %v: %s", err, out)
	}
	code, out, _ = run(t, "", "status", "--kb", kb)
	if code != 0 || !strings.Contains(out, "SEARCH DEFAULT") || !strings.Contains(out, `calibration "default"  `+res.Calibration.Choice.Name) {
		t.Errorf("status: %d %s", code, out)
	}
	if code, out, _ = run(t, "", "eval", "--calibrate", "--reset", "--kb", kb); code != 0 || !strings.Contains(out, "removed") {
		t.Errorf("reset: %d %s", code, out)
	}
	if code, out, _ = run(t, "", "status", "--kb", kb); code != 0 || strings.Contains(out, "calibration \"default\"") {
		t.Errorf("status after a reset: %d %s", code, out)
	}
	if code, _, errOut = run(t, "", "eval", "--calibrate", "--beir", docs, "--corpus", docs); code != 2 {
		t.Errorf("--beir with --corpus: %d %s", code, errOut)
	}
}

// TestEvalCalibrateGolden holds the calibration of the offline golden
// corpus to issue #24's promise: the configuration it chooses ranks the
// golden questions' sources at least as well as keyword (MRR@10), within
// one question moving one place: the corpus is Quarry's own docs/, which
// change, and a page added about an unrelated store once raised keyword
// alone from 0.9038 to 0.9150 while the choice, hybrid with convex fusion
// at 0.1, went from 0.9058 to 0.9038. One answerable question falling
// from first to second moves MRR@10 by 0.5/40 = 0.0125.
func TestEvalCalibrateGolden(t *testing.T) {
	if testing.Short() {
		t.Skip("ingests Go's documentation")
	}
	goDoc := goDocDir(t)
	golden := filepath.Join("..", "..", "eval", "testdata", "golden", "offline.jsonl")
	code, stdout, errOut := run(t, "", "eval", "--calibrate", "--golden", golden, "--corpus", goDoc, "--corpus", filepath.Join("..", "..", "docs"), "--json")
	var res struct {
		Calibration struct {
			Choice struct {
				Name string `json:"name"`
			} `json:"choice"`
		} `json:"calibration"`
		GoldenMRR []struct {
			Name  string  `json:"name"`
			Score float64 `json:"score"`
		} `json:"golden_mrr"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != 0 || len(res.GoldenMRR) == 0 {
		t.Fatalf("eval --calibrate: exit %d, %v: %.500q %q", code, err, stdout, errOut)
	}
	mrr := map[string]float64{}
	for _, s := range res.GoldenMRR {
		mrr[s.Name] = s.Score
	}
	chosen := res.Calibration.Choice.Name
	const onePlace = 0.5 / 40 // the set's 40 answerable questions
	if mrr[chosen] < mrr["keyword"]-onePlace {
		t.Errorf("chose %s: golden MRR@10 %.4f, more than one question's place under keyword's %.4f", chosen, mrr[chosen], mrr["keyword"])
	}
	t.Logf("chose %s; golden MRR@10 %v", chosen, mrr)
}
