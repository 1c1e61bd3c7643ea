package kwbench

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/index/bm25"
)

// TestWordsSurviveAnalysis checks the premise of the corpus: every word is
// distinct and the English analyzer indexes it unchanged.
func TestWordsSurviveAnalysis(t *testing.T) {
	a, err := bm25.NewAnalyzer(bm25.AnalyzerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for r := range DefaultConfig().Vocab {
		w := Word(r)
		if seen[w] {
			t.Fatalf("rank %d repeats %q", r, w)
		}
		seen[w] = true
		if got := a.Analyze(w); len(got) != 1 || got[0] != w {
			t.Fatalf("rank %d: %q analyses to %q", r, w, got)
		}
	}
}

func small() Config {
	c := DefaultConfig()
	c.Docs, c.Vocab, c.Queries, c.Passes = 500, 2000, 40, 1
	return c
}

func TestGenerateIsDeterministic(t *testing.T) {
	a, b := Generate(small()), Generate(small())
	if !slices.Equal(a.Docs, b.Docs) || !slices.Equal(a.Queries, b.Queries) {
		t.Fatal("same seed, different corpus")
	}
	more := small()
	more.Docs = 800
	if c := Generate(more); !slices.Equal(c.Queries, a.Queries) {
		t.Fatal("queries depend on the number of documents")
	}
	for _, q := range a.Queries {
		if n := len(strings.Fields(q.Text)); n < 2 || n > 5 {
			t.Fatalf("query %q has %d terms", q.Text, n)
		}
	}
	for _, d := range a.Docs {
		if n := len(strings.Fields(d.Text)); n < 50 || n > 150 {
			t.Fatalf("document %s has %d words", d.ID, n)
		}
	}
}

func TestRunExportAndReload(t *testing.T) {
	dir := t.TempDir()
	cfg := small()
	cfg.Export = dir
	rep, err := Run(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Docs != 500 || rep.Queries != 40 || rep.MeanHits != 10 || rep.P50Micros <= 0 || rep.P99Micros < rep.P50Micros {
		t.Fatalf("report %+v", rep)
	}
	run, err := os.ReadFile(filepath.Join(dir, "quarry.run"))
	if err != nil || len(strings.Split(strings.TrimSpace(string(run)), "\n")) != 400 {
		t.Fatalf("quarry.run: %v", err)
	}
	reread := Config{Data: dir, K: 10, Passes: 1}
	rep2, err := Run(context.Background(), reread, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if rep2.Docs != rep.Docs || rep2.Terms != rep.Terms || rep2.MeanHits != rep.MeanHits {
		t.Fatalf("reloaded corpus differs: %+v vs %+v", rep2, rep)
	}
	var sb strings.Builder
	rep.WriteTable(&sb)
	if !strings.Contains(sb.String(), "p50") {
		t.Fatalf("table: %s", sb.String())
	}
}

func TestConfigCheck(t *testing.T) {
	for _, mod := range []func(*Config){
		func(c *Config) { c.Docs = 0 },
		func(c *Config) { c.MaxLen = 10 },
		func(c *Config) { c.MaxTerms = 1 },
		func(c *Config) { c.Zipf = 0 },
		func(c *Config) { c.K = 0 },
	} {
		c := DefaultConfig()
		mod(&c)
		if c.Check() == nil {
			t.Errorf("accepted %+v", c)
		}
	}
	if _, err := Run(context.Background(), Config{Data: t.TempDir(), K: 10, Passes: 1}, io.Discard); err == nil {
		t.Error("missing data accepted")
	}
}

func TestPercentile(t *testing.T) {
	var l []time.Duration
	for i := 1; i <= 100; i++ {
		l = append(l, time.Duration(i))
	}
	if Percentile(l, 50) != 50 || Percentile(l, 99) != 99 || Percentile(l, 100) != 100 || Percentile(l[:1], 99) != 1 || Percentile(nil, 50) != 0 {
		t.Fatal("nearest-rank percentiles")
	}
}
