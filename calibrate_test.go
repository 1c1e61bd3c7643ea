package quarry_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/config"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/retrieve"
	"github.com/quarry-rag/quarry/store"
)

// calibrationKB is a knowledge base whose default collection holds n
// passages of words drawn from a fixed vocabulary.
func calibrationKB(t *testing.T, n int) *quarry.KB {
	t.Helper()
	ctx := context.Background()
	kb, err := quarry.Open(ctx, t.TempDir(), quarry.Create())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kb.Close() })
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := make([]string, 400)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%03dterm", i)
	}
	docs := make([]quarry.NewDocument, n)
	for i := range docs {
		words := make([]string, 30)
		for j := range words {
			// A skewed draw: some words are common, most are rare.
			words[j] = vocab[int(float64(len(vocab))*rng.Float64()*rng.Float64())]
		}
		docs[i] = quarry.NewDocument{ID: fmt.Sprintf("d%03d", i), Text: strings.Join(words, " ") + ".", Source: fmt.Sprintf("s%03d", i)}
	}
	if _, err := kb.Collection("").Add(ctx, docs...); err != nil {
		t.Fatal(err)
	}
	return kb
}

// TestCalibrateScopes checks who may calibrate, that a small collection is
// refused as invalid, that a dry run records nothing and that a
// calibration is recorded, shown by Status and removed by a reset.
func TestCalibrateScopes(t *testing.T) {
	ctx := context.Background()
	kb := calibrationKB(t, 240)
	for name, sc := range map[string]quarry.Scope{
		"read-only": {ReadOnly: true},
		"filtered":  {Filter: filter.Eq("sourceType", "manual")},
	} {
		if _, err := kb.Calibrate(ctx, sc, quarry.CalibrateRequest{}); !errors.Is(err, quarry.ErrForbidden) {
			t.Errorf("%s: %v, want forbidden", name, err)
		}
	}
	if _, err := kb.Calibrate(ctx, quarry.Developer(), quarry.CalibrateRequest{Queries: -1}); !errors.Is(err, quarry.ErrInvalid) {
		t.Errorf("negative queries: %v", err)
	}
	res, err := kb.Calibrate(ctx, quarry.Developer(), quarry.CalibrateRequest{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Saved || res.Calibration == nil || len(res.Calibration.Scores) != 6 || res.Calibration.Documents != 240 {
		t.Fatalf("dry run: %+v", res)
	}
	st, err := kb.Status(ctx, quarry.Developer())
	if err != nil {
		t.Fatal(err)
	}
	if ci := st.Collections[0]; ci.Calibration != nil || ci.SearchDefault != "keyword" {
		t.Errorf("after a dry run: default %q, calibration %+v", ci.SearchDefault, ci.Calibration)
	}
	res, err = kb.Calibrate(ctx, quarry.Developer(), quarry.CalibrateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	st, err = kb.Status(ctx, quarry.Developer())
	if err != nil {
		t.Fatal(err)
	}
	ci := st.Collections[0]
	if !res.Saved || ci.Calibration == nil || ci.Calibration.Choice.Name != res.Calibration.Choice.Name || ci.SearchDefault != res.Calibration.Choice.Name ||
		res.SearchDefault != ci.SearchDefault || res.ModeSet != "" {
		t.Errorf("after a calibration %+v: status default %q, calibration %+v", res.Calibration.Choice, ci.SearchDefault, ci.Calibration)
	}
	scoped, err := kb.Status(ctx, quarry.Scope{Filter: filter.Eq("sourceType", "manual")})
	if err != nil {
		t.Fatal(err)
	}
	if scoped.Collections[0].Calibration != nil {
		t.Error("a scoped caller sees the calibration's figures")
	}
	if _, err := kb.Calibrate(ctx, quarry.Developer(), quarry.CalibrateRequest{Reset: true}); err != nil {
		t.Fatal(err)
	}
	if st, err = kb.Status(ctx, quarry.Developer()); err != nil || st.Collections[0].Calibration != nil {
		t.Errorf("after a reset: %v %+v", err, st.Collections[0].Calibration)
	}

	small := calibrationKB(t, 50)
	if _, err := small.Calibrate(ctx, quarry.Developer(), quarry.CalibrateRequest{}); !errors.Is(err, quarry.ErrInvalid) {
		t.Errorf("a small collection: %v, want invalid", err)
	}
}

// TestSearchFollowsCalibration checks a search that asks for no mode runs
// the calibration's choice, one that asks for a mode runs that mode, and
// a calibration measured with another embedder is ignored.
func TestSearchFollowsCalibration(t *testing.T) {
	ctx := context.Background()
	kb := calibrationKB(t, 20)
	c, err := kb.StoreCollection(ctx, "", false)
	if err != nil {
		t.Fatal(err)
	}
	choice := retrieve.ConfigScore{Name: "hybrid-convex-0.3", Mode: store.ModeHybrid, Fusion: store.Fusion{Method: store.FusionConvex, Alpha: 0.3}, Score: 0.7}
	save := func(model string) {
		t.Helper()
		cal := &retrieve.Calibration{Choice: choice, Scores: []retrieve.ConfigScore{choice}, Rule: "keyword", Metric: "ndcg@10", Model: model}
		if err := retrieve.SaveCalibration(ctx, c, cal); err != nil {
			t.Fatal(err)
		}
	}
	save(c.Config().Model.String())
	for _, tc := range []struct {
		mode, wantMode, wantCalibrated string
	}{
		{"", "hybrid", "hybrid-convex-0.3"},
		{"auto", "hybrid", "hybrid-convex-0.3"},
		{"keyword", "keyword", ""},
		{"hybrid", "hybrid", ""},
	} {
		res, err := kb.Search(ctx, quarry.Developer(), quarry.SearchRequest{Query: "w001term", Mode: tc.mode})
		if err != nil {
			t.Fatal(err)
		}
		if res.Mode != tc.wantMode || res.Calibrated != tc.wantCalibrated {
			t.Errorf("mode %q: ran %q calibrated %q, want %q %q", tc.mode, res.Mode, res.Calibrated, tc.wantMode, tc.wantCalibrated)
		}
	}
	save("openai:text-embedding-3-small/1536")
	res, err := kb.Search(ctx, quarry.Developer(), quarry.SearchRequest{Query: "w001term"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != "keyword" || res.Calibrated != "" {
		t.Errorf("another embedder's calibration: ran %q calibrated %q", res.Mode, res.Calibrated)
	}
}

// TestIngestCalibrates checks an ingest that leaves a collection with
// AutoCalibrateDocuments passages or more calibrates it once, and that
// search.calibrate = off keeps the fixed rule.
func TestIngestCalibrates(t *testing.T) {
	if testing.Short() {
		t.Skip("ingests a thousand files")
	}
	ctx := context.Background()
	docs := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range quarry.AutoCalibrateDocuments + 20 {
		words := make([]string, 40)
		for j := range words {
			words[j] = fmt.Sprintf("w%03dterm", int(400*rng.Float64()*rng.Float64()))
		}
		text := fmt.Sprintf("# Note %d\n\n%s.\n", i, strings.Join(words, " "))
		if err := os.WriteFile(filepath.Join(docs, fmt.Sprintf("n%04d.md", i)), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		setting string
		want    bool
	}{{"auto", true}, {"off", false}} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, config.FileName), []byte("[search]\ncalibrate = \""+tc.setting+"\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		kb, err := quarry.Open(ctx, dir, quarry.Create())
		if err != nil {
			t.Fatal(err)
		}
		defer kb.Close()
		rep, err := kb.Collection("").Ingest(ctx, []string{docs})
		if err != nil {
			t.Fatal(err)
		}
		if (rep.Calibrated != "") != tc.want {
			t.Errorf("calibrate = %s: %d chunks, calibrated %q", tc.setting, rep.Chunks, rep.Calibrated)
		}
		st, err := kb.Status(ctx, quarry.Developer())
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Collections[0].Calibration != nil; got != tc.want {
			t.Errorf("calibrate = %s: status calibration %+v", tc.setting, st.Collections[0].Calibration)
		}
		if !tc.want {
			continue
		}
		// A collection that has not grown much keeps its calibration; one
		// RecalibrateGrowth times larger than at its calibration is
		// calibrated again.
		more := t.TempDir()
		for i, words := range []string{"w001term w002term w003term", "w004term w005term w006term"} {
			if err := os.WriteFile(filepath.Join(more, fmt.Sprintf("m%d.md", i)), []byte("# More\n\n"+words+".\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			rep, err := kb.Collection("").Ingest(ctx, []string{filepath.Join(more, fmt.Sprintf("m%d.md", i))})
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 && rep.Calibrated != "" {
				t.Errorf("a collection grown by one file was calibrated again")
			}
			if i == 0 {
				c, err := kb.StoreCollection(ctx, "", false)
				if err != nil {
					t.Fatal(err)
				}
				cal := st.Collections[0].Calibration
				cal.Documents = 250 // as if calibrated when it was a quarter of its size
				if err := retrieve.SaveCalibration(ctx, c, cal); err != nil {
					t.Fatal(err)
				}
			}
			if i == 1 && rep.Calibrated == "" {
				t.Errorf("a collection four times larger than at its calibration was not calibrated again")
			}
		}
	}
}
