// Command bleve runs github.com/blevesearch/bleve/v2 on the corpus and
// queries `quarry bench keyword --export DIR` writes and prints the peer
// figures for Quarry's keyword search: build time, and p50/p99/mean latency
// and QPS of disjunctive BM25 top-k queries run one at a time, each query's
// fastest of the timed passes after one warm-up pass, exactly as Quarry
// measures itself. The index is a scorch
// index on disk (bleve.New) with the English analyzer and bleve's BM25
// scoring model set to Quarry's parameters (k1 0.9, b 0.4). Queries run once
// bleve's background persister and merger are idle.
//
// With -quarry (the JSON `quarry bench keyword --json` printed) it also
// prints the ratios, and when DIR holds quarry.run it reports how many of
// Quarry's top k bleve also returns.
//
//	cd bench/peers && go run ./bleve -dir DIR -quarry DIR/quarry.json
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/search"
	index "github.com/blevesearch/bleve_index_api"
)

type doc struct {
	ID   string `json:"_id"`
	Text string `json:"text"`
}

// report carries the fields shared with Quarry's JSON report.
type report struct {
	Docs         int     `json:"docs"`
	Queries      int     `json:"queries"`
	BuildSeconds float64 `json:"buildSeconds"`
	SettleSecs   float64 `json:"settleSeconds,omitempty"`
	P50Micros    float64 `json:"p50Micros"`
	P99Micros    float64 `json:"p99Micros"`
	MeanMicros   float64 `json:"meanMicros"`
	QPS          float64 `json:"qps"`
	MeanHits     float64 `json:"meanHits"`
	Overlap      float64 `json:"overlapWithQuarry,omitempty"`
}

func main() {
	dir := flag.String("dir", "", "directory with corpus.jsonl and queries.jsonl from quarry bench keyword --export")
	k := flag.Int("k", 10, "results per query")
	passes := flag.Int("passes", 3, "timed passes over the queries (after one warm-up pass)")
	indexDir := flag.String("index", "", "where to build the bleve index (default: a temporary directory, removed afterwards)")
	quarry := flag.String("quarry", "", "Quarry's JSON report, to print ratios")
	asJSON := flag.Bool("json", false, "print JSON")
	flag.Parse()
	if err := run(*dir, *indexDir, *quarry, *k, *passes, *asJSON); err != nil {
		fmt.Fprintln(os.Stderr, "bleve:", err)
		os.Exit(1)
	}
}

func run(dir, indexDir, quarryReport string, k, passes int, asJSON bool) error {
	if dir == "" {
		return errors.New("-dir is required")
	}
	docs, err := readJSONL[doc](filepath.Join(dir, "corpus.jsonl"))
	if err != nil {
		return err
	}
	queries, err := readJSONL[doc](filepath.Join(dir, "queries.jsonl"))
	if err != nil {
		return err
	}
	if indexDir == "" {
		tmp, err := os.MkdirTemp("", "bleve-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		indexDir = filepath.Join(tmp, "index")
	}

	// Quarry's BM25 parameters; bleve keeps them in package variables.
	search.BM25_k1, search.BM25_b = 0.9, 0.4
	field := bleve.NewTextFieldMapping()
	field.Analyzer = en.AnalyzerName
	field.Store, field.IncludeInAll, field.IncludeTermVectors, field.DocValues = false, false, false, false
	dm := bleve.NewDocumentStaticMapping()
	dm.AddFieldMappingsAt("text", field)
	im := bleve.NewIndexMapping()
	im.DefaultMapping = dm
	im.DefaultAnalyzer = en.AnalyzerName
	im.ScoringModel = index.BM25Scoring
	im.StoreDynamic, im.IndexDynamic, im.DocValuesDynamic = false, false, false

	rep := report{Docs: len(docs), Queries: len(queries)}
	fmt.Fprintf(os.Stderr, "indexing %d documents into %s\n", len(docs), indexDir)
	start := time.Now()
	idx, err := bleve.New(indexDir, im)
	if err != nil {
		return fmt.Errorf("create index: %w", err)
	}
	defer idx.Close()
	b := idx.NewBatch()
	for _, d := range docs {
		if err := b.Index(d.ID, map[string]any{"text": d.Text}); err != nil {
			return err
		}
		if b.Size() == 1000 {
			if err := idx.Batch(b); err != nil {
				return err
			}
			b.Reset()
		}
	}
	if err := idx.Batch(b); err != nil {
		return err
	}
	rep.BuildSeconds = time.Since(start).Seconds()
	settle := time.Now()
	for busy(idx) {
		time.Sleep(100 * time.Millisecond)
	}
	rep.SettleSecs = time.Since(settle).Seconds()
	m, _ := idx.StatsMap()["index"].(map[string]any)
	fmt.Fprintf(os.Stderr, "built in %.2fs, settled %.2fs later: %v file segments, %v in memory\n",
		rep.BuildSeconds, rep.SettleSecs, m["num_root_filesegments"], m["num_root_memorysegments"])

	terms := 0
	if fd, err := idx.FieldDict("text"); err == nil {
		for e, err := fd.Next(); e != nil && err == nil; e, err = fd.Next() {
			terms++
		}
		fd.Close()
	}
	fmt.Fprintf(os.Stderr, "%d terms in bleve's dictionary\n", terms)

	searchOne := func(q string) (*bleve.SearchResult, error) {
		mq := bleve.NewMatchQuery(q)
		mq.SetField("text")
		return idx.Search(bleve.NewSearchRequestOptions(mq, k, 0, false))
	}
	hits := 0
	top := make(map[string][]string, len(queries))
	for _, q := range queries { // warm-up, untimed
		res, err := searchOne(q.Text)
		if err != nil {
			return fmt.Errorf("query %s: %w", q.ID, err)
		}
		hits += len(res.Hits)
		for _, h := range res.Hits {
			top[q.ID] = append(top[q.ID], h.ID)
		}
	}
	rep.MeanHits = float64(hits) / float64(len(queries))
	// Each query's latency is its fastest pass, as in Quarry's benchmark.
	lat := make([]time.Duration, len(queries))
	for p := range passes {
		for i, q := range queries {
			t := time.Now()
			if _, err := searchOne(q.Text); err != nil {
				return err
			}
			if d := time.Since(t); p == 0 || d < lat[i] {
				lat[i] = d
			}
		}
	}
	var total time.Duration
	for _, d := range lat {
		total += d
	}
	slices.Sort(lat)
	rep.P50Micros = micros(percentile(lat, 50))
	rep.P99Micros = micros(percentile(lat, 99))
	rep.MeanMicros = micros(total) / float64(len(lat))
	rep.QPS = float64(len(lat)) / total.Seconds()
	if qtop, err := readRun(filepath.Join(dir, "quarry.run")); err == nil {
		rep.Overlap = overlap(qtop, top, k)
	}

	if asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	fmt.Printf("bleve %s, BM25 top-%d, disjunctive, 1 thread, %d documents, %d queries (fastest of %d passes each)\n",
		"v2.6.3", k, rep.Docs, rep.Queries, passes)
	if quarryReport == "" {
		fmt.Printf("  build %.2f s (+%.2f s to settle)\n  latency p50 %.1f µs, p99 %.1f µs, mean %.1f µs\n  QPS %.0f (mean hits %.1f)\n",
			rep.BuildSeconds, rep.SettleSecs, rep.P50Micros, rep.P99Micros, rep.MeanMicros, rep.QPS, rep.MeanHits)
		return nil
	}
	var q report
	data, err := os.ReadFile(quarryReport)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, &q); err != nil {
		return fmt.Errorf("%s: %w", quarryReport, err)
	}
	if q.Docs != rep.Docs || q.Queries != rep.Queries {
		return fmt.Errorf("%s measured %d documents and %d queries, not these %d and %d", quarryReport, q.Docs, q.Queries, rep.Docs, rep.Queries)
	}
	fmt.Printf("%-14s %12s %12s %14s\n", "", "quarry", "bleve", "bleve/quarry")
	row := func(name string, a, b float64) { fmt.Printf("%-14s %12.1f %12.1f %13.2fx\n", name, a, b, b/a) }
	row("build s", q.BuildSeconds, rep.BuildSeconds)
	row("p50 µs", q.P50Micros, rep.P50Micros)
	row("p99 µs", q.P99Micros, rep.P99Micros)
	row("mean µs", q.MeanMicros, rep.MeanMicros)
	row("QPS", q.QPS, rep.QPS)
	if rep.Overlap > 0 {
		// Same terms and k1, b; bleve multiplies a disjunction's sum by the
		// fraction of query terms matched (coord) and rounds the average
		// length up, so rankings differ.
		fmt.Printf("bleve returns %.1f%% of Quarry's top %d (bleve scales BM25 sums by the fraction of terms matched)\n", 100*rep.Overlap, k)
	}
	return nil
}

// busy reports whether scorch's persister or merger still has work.
func busy(idx bleve.Index) bool {
	m, ok := idx.StatsMap()["index"].(map[string]any)
	if !ok {
		return false
	}
	active, _ := m["index_bgthreads_active"].(bool)
	return active
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// percentile is nearest-rank, as Quarry's kwbench.Percentile.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p/100+0.9999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func readJSONL[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 64<<20)
	for n := 1; sc.Scan(); n++ {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		out = append(out, v)
	}
	return out, sc.Err()
}

// readRun reads a TREC run: "qid Q0 docid rank score tag".
func readRun(path string) (map[string][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	run := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if p := strings.Fields(sc.Text()); len(p) == 6 {
			run[p[0]] = append(run[p[0]], p[2])
		}
	}
	return run, sc.Err()
}

// overlap is the mean fraction of a's top k that b also returns.
func overlap(a, b map[string][]string, k int) float64 {
	sum, n := 0.0, 0
	for q, ids := range a {
		ids = ids[:min(k, len(ids))]
		if len(ids) == 0 {
			continue
		}
		common := 0
		for _, id := range ids {
			if slices.Contains(b[q], id) {
				common++
			}
		}
		sum += float64(common) / float64(len(ids))
		n++
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}
