package bm25

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/quarry-rag/quarry/index/bitset"
)

// ref is a deliberately naive BM25F: every document scored from term maps.
type ref struct {
	an   *Analyzer
	cfg  Config
	docs map[uint32]refDoc
}

type refDoc struct {
	id          string
	title, text map[string]int
	lt, lc      int
}

func newRef(t testing.TB, cfg Config) *ref {
	cfg, err := cfg.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	an, err := NewAnalyzer(cfg.Analyzer)
	if err != nil {
		t.Fatal(err)
	}
	return &ref{an: an, cfg: cfg, docs: map[uint32]refDoc{}}
}

func (r *ref) add(doc uint32, d Doc) {
	rd := refDoc{id: d.ID, title: map[string]int{}, text: map[string]int{}}
	for _, t := range r.an.Analyze(d.Title) {
		rd.title[t]++
		rd.lt++
	}
	for _, t := range r.an.Analyze(d.Text) {
		rd.text[t]++
		rd.lc++
	}
	r.docs[doc] = rd
}

// score returns every matching allowed document's score.
func (r *ref) score(q string, allow func(uint32) bool) map[uint32]float64 {
	qc := map[string]int{}
	for _, t := range r.an.Analyze(q) {
		qc[t]++
	}
	n := float64(len(r.docs))
	total := 0.0
	for _, d := range r.docs {
		total += float64(d.lc) + r.cfg.TitleWeight*float64(d.lt)
	}
	avg := total / n
	if avg <= 0 {
		avg = 1
	}
	out := map[uint32]float64{}
	for term, c := range qc {
		df := 0.0
		for _, d := range r.docs {
			if d.text[term]+d.title[term] > 0 {
				df++
			}
		}
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for id, d := range r.docs {
			f := float64(d.text[term]) + r.cfg.TitleWeight*float64(d.title[term])
			if f == 0 || (allow != nil && !allow(id)) {
				continue
			}
			dl := float64(float32(float64(d.lc) + r.cfg.TitleWeight*float64(d.lt)))
			k := r.cfg.K1 * (1 - r.cfg.B + r.cfg.B*dl/avg)
			out[id] += float64(c) * idf * (r.cfg.K1 + 1) * f / (f + k)
		}
	}
	return out
}

// check compares a Search result with the reference: scores agree, the
// order is score desc then ID asc, and the set is the top k up to ties
// within rounding.
func (r *ref) check(t *testing.T, x *Index, q string, k int, allow *bitset.Set) {
	t.Helper()
	var pred func(uint32) bool
	if allow != nil {
		pred = allow.Contains
	}
	want := r.score(q, pred)
	got := x.Search(q, k, SearchOptions{Allow: allow})
	if len(got) != min(k, len(want)) {
		t.Fatalf("query %q k=%d: %d hits, want %d", q, k, len(got), min(k, len(want)))
	}
	for i, h := range got {
		w, ok := want[h.Doc]
		if !ok {
			t.Fatalf("query %q: hit %d (%s) should not match", q, h.Doc, h.ID)
		}
		if math.Abs(w-h.Score) > 1e-9*w {
			t.Fatalf("query %q: doc %s score %v, want %v", q, h.ID, h.Score, w)
		}
		if h.ID != r.docs[h.Doc].id {
			t.Fatalf("query %q: doc %d has ID %q, want %q", q, h.Doc, h.ID, r.docs[h.Doc].id)
		}
		if i > 0 {
			p := got[i-1]
			if p.Score < h.Score || (p.Score == h.Score && p.ID > h.ID) {
				t.Fatalf("query %q: %s (%v) ranked before %s (%v)", q, p.ID, p.Score, h.ID, h.Score)
			}
		}
	}
	if len(got) == 0 {
		return
	}
	kth := got[len(got)-1].Score
	seen := map[uint32]bool{}
	for _, h := range got {
		seen[h.Doc] = true
	}
	for id, w := range want {
		if !seen[id] && w > kth*(1+1e-9) {
			t.Fatalf("query %q k=%d: doc %s (%v) missing, k-th score %v", q, k, r.docs[id].id, w, kth)
		}
	}
}

// corpus draws documents over a small skewed vocabulary with stop words,
// inflected forms and duplicates, so ties and shared stems occur.
type corpus struct {
	r     *rand.Rand
	vocab []string
}

func newCorpus(seed uint64) *corpus {
	c := &corpus{r: rand.New(rand.NewPCG(seed, 7))}
	stems := []string{"search", "index", "quarry", "stone", "engine", "rank", "score", "term", "query", "doc"}
	for _, s := range stems {
		c.vocab = append(c.vocab, s, s+"s", s+"ing")
	}
	c.vocab = append(c.vocab, "the", "a", "of", "and", "to", "in", "Tensor", "ÉCOLE", "naïve", "don't", "dog's")
	for i := range 150 {
		c.vocab = append(c.vocab, fmt.Sprintf("w%d", i))
	}
	return c
}

func (c *corpus) word() string {
	// Squaring a uniform skews toward the start of the vocabulary.
	u := c.r.Float64()
	return c.vocab[int(u*u*float64(len(c.vocab)))]
}

func (c *corpus) text(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = c.word()
	}
	return strings.Join(w, " ")
}

func (c *corpus) doc() Doc {
	d := Doc{ID: fmt.Sprintf("d%05d", c.r.IntN(100000)), Text: c.text(c.r.IntN(40))}
	if c.r.IntN(2) == 0 {
		d.Title = c.text(1 + c.r.IntN(5))
	}
	return d
}

func (c *corpus) allow(n int) *bitset.Set {
	if c.r.IntN(3) == 0 {
		return nil
	}
	s := bitset.New(n)
	p := c.r.Float64()
	for i := range n {
		if c.r.Float64() < p {
			s.Add(uint32(i))
		}
	}
	return s
}

func TestSearchMatchesReference(t *testing.T) {
	for _, cfg := range []Config{{}, {K1: 1.2, B: 0.75, TitleWeight: 2.5}, {Analyzer: AnalyzerConfig{KeepStopWords: true, NoStemming: true}}} {
		t.Run(fmt.Sprintf("%+v", cfg), func(t *testing.T) {
			c := newCorpus(1)
			x, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			r := newRef(t, cfg)
			const n = 600
			// Out-of-order ids exercise insertion into the middle of lists.
			order := c.r.Perm(n)
			var prev Doc
			for i, id := range order {
				d := c.doc()
				if i%17 == 0 {
					d = Doc{ID: d.ID, Title: prev.Title, Text: prev.Text} // a duplicate: equal scores
				}
				prev = d
				if err := x.Add(uint32(id), d); err != nil {
					t.Fatal(err)
				}
				r.add(uint32(id), d)
			}
			queries := func() {
				for range 150 {
					q := c.text(1 + c.r.IntN(5))
					r.check(t, x, q, 1+c.r.IntN(20), c.allow(n))
				}
				r.check(t, x, "search", n, nil)
			}
			queries()
			// Delete a third (enough dead entries to compact), re-add some.
			for _, id := range c.r.Perm(n)[:n/3] {
				if err := x.Delete(uint32(id)); err != nil {
					t.Fatal(err)
				}
				delete(r.docs, uint32(id))
			}
			queries()
			for id := range uint32(n) {
				if _, ok := r.docs[id]; !ok && id%2 == 0 {
					d := c.doc()
					if err := x.Add(id, d); err != nil {
						t.Fatal(err)
					}
					r.add(id, d)
				}
			}
			queries()
			if x.Len() != len(r.docs) {
				t.Fatalf("Len = %d, want %d", x.Len(), len(r.docs))
			}
		})
	}
}

func TestDeleteWithoutCompaction(t *testing.T) {
	c := newCorpus(2)
	x, _ := New(Config{})
	r := newRef(t, Config{})
	for i := range 200 {
		d := c.doc()
		if err := x.Add(uint32(i), d); err != nil {
			t.Fatal(err)
		}
		r.add(uint32(i), d)
	}
	for _, id := range []uint32{0, 5, 17, 199} {
		if err := x.Delete(id); err != nil {
			t.Fatal(err)
		}
		delete(r.docs, id)
	}
	if x.deadPostings == 0 {
		t.Fatal("expected dead postings before compaction")
	}
	for range 100 {
		r.check(t, x, c.text(3), 10, c.allow(200))
	}
	// Re-adding a deleted, uncompacted id purges its old entries first.
	d := c.doc()
	if err := x.Add(5, d); err != nil {
		t.Fatal(err)
	}
	r.add(5, d)
	for range 100 {
		r.check(t, x, c.text(3), 10, nil)
	}
}

func TestAddDeleteErrors(t *testing.T) {
	x, _ := New(Config{})
	if err := x.Add(3, Doc{ID: "a", Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	if err := x.Add(3, Doc{ID: "b", Text: "hello"}); !errors.Is(err, ErrExists) {
		t.Fatalf("re-add: %v", err)
	}
	if err := x.Delete(4); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete missing: %v", err)
	}
	if err := x.Delete(3); err != nil {
		t.Fatal(err)
	}
	if err := x.Delete(3); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
	if x.Len() != 0 || x.IDLimit() != 4 || x.Contains(3) {
		t.Fatalf("Len %d IDLimit %d Contains %v", x.Len(), x.IDLimit(), x.Contains(3))
	}
	if hits := x.Search("hello", 10, SearchOptions{}); len(hits) != 0 {
		t.Fatalf("deleted document found: %v", hits)
	}
}

func TestConfigValidation(t *testing.T) {
	for _, cfg := range []Config{{K1: -1}, {B: 1.5}, {TitleWeight: math.Inf(1)}, {K1: math.NaN()}, {Analyzer: AnalyzerConfig{Language: "klingon"}}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
	x, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	got := x.Config()
	want := Config{K1: DefaultK1, B: DefaultB, TitleWeight: DefaultTitleWeight, Analyzer: AnalyzerConfig{Language: "english"}}
	if got != want {
		t.Fatalf("Config() = %+v, want %+v", got, want)
	}
}

func TestTiesRankByID(t *testing.T) {
	x, _ := New(Config{})
	ids := []string{"m", "b", "z", "a", "k"}
	for i, id := range ids {
		if err := x.Add(uint32(i), Doc{ID: id, Text: "granite quarry"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Add(9, Doc{ID: "0", Text: "granite"}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range x.Search("quarry granite", 4, SearchOptions{}) {
		got = append(got, h.ID)
	}
	if want := []string{"a", "b", "k", "m"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestTitleField(t *testing.T) {
	x, _ := New(Config{})
	_ = x.Add(0, Doc{ID: "titled", Title: "Basalt columns", Text: "Cooling lava contracts and cracks."})
	_ = x.Add(1, Doc{ID: "plain", Text: "Granite is an intrusive rock."})
	hits := x.Search("basalt", 10, SearchOptions{})
	if len(hits) != 1 || hits[0].ID != "titled" {
		t.Fatalf("title term not found: %v", hits)
	}
}

func TestEmptyInputs(t *testing.T) {
	x, _ := New(Config{})
	if hits := x.Search("anything", 10, SearchOptions{}); hits != nil {
		t.Fatalf("empty index: %v", hits)
	}
	_ = x.Add(0, Doc{ID: "empty"})
	_ = x.Add(1, Doc{ID: "stop", Text: "the of and"})
	_ = x.Add(2, Doc{ID: "one", Text: "rock"})
	for _, q := range []string{"", "the", "   ", "unknownword", "!!!"} {
		if hits := x.Search(q, 10, SearchOptions{}); len(hits) != 0 {
			t.Fatalf("query %q: %v", q, hits)
		}
	}
	if hits := x.Search("rock", 0, SearchOptions{}); hits != nil {
		t.Fatalf("k=0: %v", hits)
	}
	if hits := x.Search("rocks", 10, SearchOptions{}); len(hits) != 1 {
		t.Fatalf("stemmed query: %v", hits)
	}
}

// TestConcurrentSearch runs searches against a writer; -race checks the
// locking.
func TestConcurrentSearch(t *testing.T) {
	c := newCorpus(3)
	x, _ := New(Config{})
	for i := range 300 {
		_ = x.Add(uint32(i), c.doc())
	}
	queries := make([]string, 50)
	for i := range queries {
		queries[i] = c.text(3)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				hits := x.Search(queries[(i+g)%len(queries)], 10, SearchOptions{})
				for j := 1; j < len(hits); j++ {
					if hits[j].Score > hits[j-1].Score {
						t.Errorf("unordered hits")
						return
					}
				}
			}
		})
	}
	docs := make([]Doc, 400)
	for i := range docs {
		docs[i] = c.doc()
	}
	for i := range 400 {
		_ = x.Add(uint32(300+i), docs[i])
		if i%3 == 0 {
			_ = x.Delete(uint32(i))
		}
	}
	wg.Wait()
}
