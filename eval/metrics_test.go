package eval

import (
	"bufio"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// readRun reads the fixture's run: "query<TAB>doc<TAB>score" lines.
func readRun(t *testing.T, path string) Run {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	scored := map[string][]Scored{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p := strings.Split(sc.Text(), "\t")
		s, err := strconv.ParseFloat(p[2], 64)
		if err != nil {
			t.Fatal(err)
		}
		scored[p[0]] = append(scored[p[0]], Scored{ID: p[1], Score: s})
	}
	run := Run{}
	for q, docs := range scored {
		run[q] = Rank(docs)
	}
	return run
}

// TestFixture checks every metric against values worked out by hand for
// testdata/fixture (qrels/test.tsv and run.tsv).
//
// Rankings after Rank (ties by id ascending, repeats counted once):
//
//	q1: d3(2) d1(1) d5(0) d8(–) d7(1)   relevant d1:1 d3:2 d7:1
//	q2: d6(–) d2(3) d4(1)               relevant d2:3 d4:1
//	q3: only d9:0 is judged: no relevant document, not counted
//	q4: relevant d1:1, no results: counted, scores 0
//	q5: not judged: ignored
func TestFixture(t *testing.T) {
	dir := filepath.Join("testdata", "fixture")
	ds, err := LoadBEIR(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Corpus) != 10 || ds.Corpus[9].ID != "10" || len(ds.Queries) != 5 || len(ds.Qrels) != 4 {
		t.Fatalf("loaded %d docs (last %q), %d queries, %d judged queries", len(ds.Corpus), ds.Corpus[len(ds.Corpus)-1].ID, len(ds.Queries), len(ds.Qrels))
	}
	run := readRun(t, filepath.Join(dir, "run.tsv"))
	if want := []string{"d3", "d1", "d5", "d8", "d7"}; !slices.Equal(run["q1"], want) {
		t.Fatalf("q1 ranked %v, want %v", run["q1"], want)
	}

	l3, l6 := math.Log2(3), math.Log2(6)
	q1 := map[string]float64{
		"ndcg@3":   (2 + 1/l3) / (2 + 1/l3 + 1.0/2),
		"ndcg@10":  (2 + 1/l3 + 1/l6) / (2 + 1/l3 + 1.0/2),
		"recall@3": 2.0 / 3, "recall@10": 1,
		"p@3": 2.0 / 3, "p@10": 3.0 / 10,
		"mrr@10": 1, "mrr@1": 1,
		"map": (1.0/1 + 2.0/2 + 3.0/5) / 3,
	}
	q2 := map[string]float64{
		"ndcg@3":   (3/l3 + 1.0/2) / (3 + 1/l3),
		"ndcg@10":  (3/l3 + 1.0/2) / (3 + 1/l3),
		"recall@3": 1, "recall@10": 1,
		"p@3": 2.0 / 3, "p@10": 2.0 / 10,
		"mrr@10": 1.0 / 2, "mrr@1": 0,
		"map": (1.0/2 + 2.0/3) / 2,
	}
	var metrics []Metric
	for _, name := range []string{"ndcg@3", "ndcg@10", "recall@3", "recall@10", "p@3", "p@10", "mrr@10", "mrr@1", "map"} {
		m, err := ParseMetric(name)
		if err != nil {
			t.Fatal(err)
		}
		if m.String() != name {
			t.Fatalf("ParseMetric(%q).String() = %q", name, m.String())
		}
		metrics = append(metrics, m)
	}
	res := Evaluate(ds.Qrels, run, metrics...)
	if res.Queries != 3 {
		t.Fatalf("counted %d queries, want 3 (q1, q2, q4)", res.Queries)
	}
	for _, m := range metrics {
		name := m.String()
		checks := []struct {
			what      string
			got, want float64
		}{
			{"q1", res.PerQuery["q1"][name], q1[name]},
			{"q2", res.PerQuery["q2"][name], q2[name]},
			{"q4", res.PerQuery["q4"][name], 0},
			{"mean", res.Mean[name], (q1[name] + q2[name]) / 3},
		}
		for _, c := range checks {
			if math.Abs(c.got-c.want) > 1e-9 {
				t.Errorf("%s %s = %.12f, want %.12f", c.what, name, c.got, c.want)
			}
		}
	}
	if _, ok := res.PerQuery["q3"]; ok {
		t.Error("q3 has no relevant document and must not count")
	}
}

func TestParseMetric(t *testing.T) {
	for in, want := range map[string]Metric{
		"NDCG@10": NDCG(10), "recall@100": Recall(100), "precision@5": Precision(5),
		"p@1": Precision(1), "mrr": MRR(0), "map": MAP(0), "map@100": MAP(100),
	} {
		got, err := ParseMetric(in)
		if err != nil || got != want {
			t.Errorf("ParseMetric(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"ndcg@0", "ndcg@x", "bpref", "", "recall@-1"} {
		if _, err := ParseMetric(in); err == nil {
			t.Errorf("ParseMetric(%q) accepted", in)
		}
	}
}

func TestWholeRankingMetrics(t *testing.T) {
	judged := map[string]int{"a": 1, "b": 2}
	ranking := []string{"x", "b", "y", "a"}
	for _, c := range []struct {
		m    Metric
		want float64
	}{
		{Precision(0), 2.0 / 4},
		{Recall(0), 1},
		{MRR(0), 1.0 / 2},
		{NDCG(0), (2/math.Log2(3) + 1/math.Log2(5)) / (2 + 1/math.Log2(3))},
		{Precision(0), 2.0 / 4},
	} {
		if got := c.m.Score(ranking, judged); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%v = %v, want %v", c.m, got, c.want)
		}
	}
	if got := Precision(0).Score(nil, judged); got != 0 {
		t.Errorf("p on an empty ranking = %v", got)
	}
	if got := NDCG(10).Score(ranking, map[string]int{"a": 0}); got != 0 {
		t.Errorf("ndcg without relevant documents = %v", got)
	}
}

func TestReaders(t *testing.T) {
	q, err := ReadQrels(strings.NewReader("1 0 doc1 2\n1 0 doc2 0\n2\tdoc3\t1\n"))
	if err != nil || q["1"]["doc1"] != 2 || q["2"]["doc3"] != 1 || len(q["1"]) != 2 {
		t.Fatalf("TREC qrels: %v, %v", q, err)
	}
	for _, bad := range []string{"a\tb\n", "h\th\th\nq\td\tx\n"} {
		if _, err := ReadQrels(strings.NewReader(bad)); err == nil {
			t.Errorf("qrels %q accepted", bad)
		}
	}
	for _, bad := range []string{"{not json}\n", "{\"title\":\"no id\"}\n", "{\"_id\": true}\n"} {
		if _, err := ReadCorpus(strings.NewReader(bad)); err == nil {
			t.Errorf("corpus %q accepted", bad)
		}
		if _, err := ReadQueries(strings.NewReader(bad)); err == nil {
			t.Errorf("queries %q accepted", bad)
		}
	}
	if _, err := LoadBEIR(t.TempDir()); err == nil {
		t.Error("empty directory accepted")
	}
	var b strings.Builder
	docs := []Doc{{ID: "1", Title: "a <b>", Text: "x & y"}, {ID: "2", Text: "z"}}
	if err := WriteCorpus(&b, docs); err != nil {
		t.Fatal(err)
	}
	back, err := ReadCorpus(strings.NewReader(b.String()))
	if err != nil || !slices.Equal(back, docs) {
		t.Fatalf("corpus round trip: %v, %v", back, err)
	}
	b.Reset()
	qs := []Query{{ID: "q", Text: "t"}}
	if err := WriteQueries(&b, qs); err != nil {
		t.Fatal(err)
	}
	if back, err := ReadQueries(strings.NewReader(b.String())); err != nil || !slices.Equal(back, qs) {
		t.Fatalf("queries round trip: %v, %v", back, err)
	}
}
