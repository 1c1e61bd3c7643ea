package eval_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed/hash"
	"github.com/quarry-rag/quarry/eval"
	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/store"
	_ "github.com/quarry-rag/quarry/store/embedded"
	"github.com/quarry-rag/quarry/store/memory"
)

// calibrationCollection is an in-memory collection of n chunks of words
// from a skewed vocabulary, upserted in the order given by perm.
func calibrationCollection(t *testing.T, n int, perm []int) (*store.Collection, *hash.Embedder) {
	t.Helper()
	ctx := context.Background()
	emb, err := hash.New(hash.Config{})
	if err != nil {
		t.Fatal(err)
	}
	s := store.New(memory.New())
	t.Cleanup(func() { s.Close() })
	c, err := s.EnsureCollection(ctx, store.CollectionConfig{Name: "cal", Model: emb.Model()})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	docs := make([]*document.Document, n)
	for i := range docs {
		words := make([]string, 30)
		for j := range words {
			words[j] = fmt.Sprintf("w%03dterm", int(300*rng.Float64()*rng.Float64()))
		}
		docs[i] = document.New(strings.Join(words, " "))
		docs[i].ID = fmt.Sprintf("d%03d", i)
	}
	if perm != nil {
		shuffled := make([]*document.Document, n)
		for i, p := range perm {
			shuffled[i] = docs[p]
		}
		docs = shuffled
	}
	texts := make([]string, n)
	for i, d := range docs {
		texts[i] = d.Content
	}
	vecs, err := emb.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range docs {
		docs[i].Embedding = vecs[i]
	}
	if err := c.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	return c, emb
}

// TestPseudoQueriesDeterministic checks the same chunks yield the same
// queries whatever order the store holds them in.
func TestPseudoQueriesDeterministic(t *testing.T) {
	ctx := context.Background()
	an, err := bm25.NewAnalyzer(bm25.AnalyzerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := calibrationCollection(t, 250, nil)
	b, _ := calibrationCollection(t, 250, rand.New(rand.NewPCG(7, 8)).Perm(250))
	qa, ra, na, err := eval.PseudoQueries(ctx, a, an, 40)
	if err != nil {
		t.Fatal(err)
	}
	qb, rb, nb, err := eval.PseudoQueries(ctx, b, an, 40)
	if err != nil {
		t.Fatal(err)
	}
	if na != 250 || nb != 250 || len(qa) != 40 || !reflect.DeepEqual(qa, qb) || !reflect.DeepEqual(ra, rb) {
		t.Fatalf("%d %d chunks; queries differ:\n%v\n%v", na, nb, qa, qb)
	}
	for _, q := range qa {
		if n := len(strings.Fields(q.Text)); n != 6 {
			t.Errorf("query %q: %d words", q.Text, n)
		}
		if len(ra[q.ID]) != 1 {
			t.Errorf("query %s: judgements %v", q.ID, ra[q.ID])
		}
	}
}

// TestCalibrate checks a calibration scores every configuration, chooses
// one of them, is repeatable, and refuses a collection too small to tell
// configurations apart.
func TestCalibrate(t *testing.T) {
	ctx := context.Background()
	c, emb := calibrationCollection(t, 250, nil)
	cal, err := eval.Calibrate(ctx, c, emb, eval.CalibrateOptions{Queries: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(cal.Scores) != len(eval.CalibrationConfigs()) || cal.Queries != 100 || cal.Documents != 250 || cal.Rule != "keyword" || cal.Model != emb.Model().String() {
		t.Fatalf("calibration %+v", cal)
	}
	if s, ok := cal.Score(cal.Choice.Name); !ok || s != cal.Choice.Score {
		t.Errorf("choice %+v is not among the scores", cal.Choice)
	}
	again, err := eval.Calibrate(ctx, c, emb, eval.CalibrateOptions{Queries: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again.Scores, cal.Scores) || again.Choice != cal.Choice {
		t.Errorf("a second run differs: %+v vs %+v", again.Scores, cal.Scores)
	}
	small, _ := calibrationCollection(t, 50, nil)
	if _, err := eval.Calibrate(ctx, small, emb, eval.CalibrateOptions{}); !errors.Is(err, eval.ErrTooSmall) {
		t.Errorf("a small collection: %v", err)
	}
	// Without the collection's embedder only keyword can be measured.
	kw, err := eval.Calibrate(ctx, c, nil, eval.CalibrateOptions{Queries: 50})
	if err != nil {
		t.Fatal(err)
	}
	if len(kw.Scores) != 1 || kw.Choice.Name != "keyword" {
		t.Errorf("without an embedder: %+v", kw)
	}
}

func TestParseCalibrationConfigs(t *testing.T) {
	cfgs, err := eval.ParseConfigs([]string{"calibration"})
	if err != nil || len(cfgs) != len(eval.CalibrationConfigs()) {
		t.Fatalf("%v %v", cfgs, err)
	}
	one, err := eval.ParseConfigs([]string{"hybrid-convex-0.2", "keyword"})
	if err != nil || len(one) != 2 || one[0].Fusion.Alpha != 0.2 {
		t.Errorf("%+v %v", one, err)
	}
	if _, err := eval.ParseConfigs([]string{"hybrid-convex-0.4"}); err == nil {
		t.Error("an unknown configuration parsed")
	}
}

// TestCalibrationOnBEIR holds the calibration to its promise on the shared
// BEIR sets: the configuration it chooses scores, on the sets' real
// judgements, within 0.01 nDCG@10 of the best of keyword and the hybrid
// configurations.
func TestCalibrationOnBEIR(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("indexes two BEIR sets: runs without -short and -race")
	}
	ctx := context.Background()
	for _, set := range []string{"cranfield", "scifact"} {
		t.Run(set, func(t *testing.T) {
			ds := loadSet(t, set)
			emb, err := hash.New(hash.Config{})
			if err != nil {
				t.Fatal(err)
			}
			s, err := store.Open(ctx, "embedded:"+t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			c, err := s.EnsureCollection(ctx, store.CollectionConfig{Name: "eval", Model: emb.Model()})
			if err != nil {
				t.Fatal(err)
			}
			opt, err := eval.ParseRetrievalOptions([]string{"calibration"}, []string{"ndcg@10"}, nil, 100)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := eval.RunRetrieval(ctx, c, emb, set, ds, opt)
			if err != nil {
				t.Fatal(err)
			}
			cal, err := eval.Calibrate(ctx, c, emb, eval.CalibrateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			real := map[string]float64{}
			best := 0.0
			for _, cr := range rep.Configs {
				real[cr.Name] = cr.Mean["ndcg@10"]
				best = max(best, real[cr.Name])
			}
			t.Logf("%s: chose %s (pseudo %.4f), real nDCG@10 %.4f, best %.4f; real %v", set, cal.Choice.Name, cal.Choice.Score, real[cal.Choice.Name], best, real)
			if real[cal.Choice.Name] < best-0.01 {
				t.Errorf("chose %s: nDCG@10 %.4f, more than 0.01 under the best %.4f", cal.Choice.Name, real[cal.Choice.Name], best)
			}
		})
	}
}
