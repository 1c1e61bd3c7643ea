package eval_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/quarry-rag/quarry/eval"
	"github.com/quarry-rag/quarry/index/bm25"
)

// dataDir is the shared evaluation data, ../shared/data from the repository
// root.
var dataDir = filepath.Join("..", "..", "shared", "data")

// loadSet loads a shared BEIR set; the test is skipped without it.
func loadSet(t *testing.T, set string) *eval.Dataset {
	t.Helper()
	dir := filepath.Join(dataDir, set)
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("no evaluation data at %s", dir)
	}
	ds, err := eval.LoadBEIR(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// runBM25 indexes the corpus unsplit, title as its own field, and returns
// the top 100 for every judged query.
func runBM25(t *testing.T, ds *eval.Dataset, cfg bm25.Config) eval.Run {
	t.Helper()
	x, err := bm25.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range ds.Corpus {
		if err := x.Add(uint32(i), bm25.Doc{ID: d.ID, Title: d.Title, Text: d.Text}); err != nil {
			t.Fatal(err)
		}
	}
	run := eval.Run{}
	for _, q := range ds.Queries {
		if _, judged := ds.Qrels[q.ID]; !judged {
			continue
		}
		for _, h := range x.Search(q.Text, 100, bm25.SearchOptions{}) {
			run[q.ID] = append(run[q.ID], h.ID)
		}
	}
	return run
}

// TestBEIRQuality holds keyword search to its quality floors with the
// default English analyzer: SciFact nDCG@10 ≥ 0.67 (Anserini's flat BM25 is
// 0.679) and Cranfield ≥ 0.33 (plain BM25 is 0.328). Set
// QUARRY_EVAL_ABLATION=1 to also log runs without stemming and/or stop
// words.
func TestBEIRQuality(t *testing.T) {
	floors := map[string]float64{"scifact": 0.67, "cranfield": 0.33}
	type variant struct {
		name string
		an   bm25.AnalyzerConfig
	}
	variants := []variant{{"default", bm25.AnalyzerConfig{}}}
	if os.Getenv("QUARRY_EVAL_ABLATION") != "" {
		variants = append(variants,
			variant{"no stemming", bm25.AnalyzerConfig{NoStemming: true}},
			variant{"no stop words", bm25.AnalyzerConfig{KeepStopWords: true}},
			variant{"neither", bm25.AnalyzerConfig{NoStemming: true, KeepStopWords: true}})
	}
	for _, set := range []string{"scifact", "cranfield"} {
		t.Run(set, func(t *testing.T) {
			ds := loadSet(t, set)
			for _, v := range variants {
				res := eval.Evaluate(ds.Qrels, runBM25(t, ds, bm25.Config{Analyzer: v.an}), eval.NDCG(10), eval.Recall(100))
				ndcg, recall := res.Mean["ndcg@10"], res.Mean["recall@100"]
				t.Logf("%-9s %-13s queries %3d  nDCG@10 %.4f  Recall@100 %.4f", set, v.name, res.Queries, ndcg, recall)
				if v.name == "default" && ndcg < floors[set] {
					t.Errorf("nDCG@10 = %.4f, below the floor %.2f", ndcg, floors[set])
				}
			}
		})
	}
}
