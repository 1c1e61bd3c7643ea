package embedded_test

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store/memory"

	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/embedded"
	"github.com/quarry-rag/quarry/store/storetest"
)

func TestStoreConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) *store.Store {
		b, err := embedded.Open(context.Background(), t.TempDir(), embedded.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return store.New(b)
	})
}

// TestStoreConformanceMappedVectors runs the suite with every graph's
// vectors in a mapped file from its first node.
func TestStoreConformanceMappedVectors(t *testing.T) {
	storetest.Run(t, func(t *testing.T) *store.Store {
		b, err := embedded.Open(context.Background(), t.TempDir(), embedded.Options{MapVectorsBytes: 1})
		if err != nil {
			t.Fatal(err)
		}
		return store.New(b)
	})
}

// TestVectorsMappedPastTheThreshold: a collection's graph moves its
// vectors into a mapped file once they pass Options.MapVectorsBytes, and
// reads them straight into one when its checkpoint is that large; searches
// answer as they do with the vectors on the heap.
func TestVectorsMappedPastTheThreshold(t *testing.T) {
	ctx := context.Background()
	open := func(dir string, mapBytes int64) (*store.Store, *embedded.Backend) {
		b, err := embedded.Open(ctx, dir, embedded.Options{MapVectorsBytes: mapBytes})
		if err != nil {
			t.Fatal(err)
		}
		return store.New(b), b
	}
	// 4 dimensions: 16 bytes a row, so 25 rows pass 400 bytes.
	heapDir, mapDir := t.TempDir(), t.TempDir()
	hs, hb := open(heapDir, -1)
	ms, mb := open(mapDir, 400)
	hc, mc := ensure(t, hs), ensure(t, ms)
	for i := range 4 {
		for _, c := range []*store.Collection{hc, mc} {
			if err := c.Upsert(ctx, batch(i)); err != nil {
				t.Fatal(err)
			}
		}
		if want := (i+1)*batchSize >= 25; mb.VectorsMapped("docs") != want {
			t.Fatalf("after %d rows: mapped %v, want %v", (i+1)*batchSize, !want, want)
		}
	}
	if hb.VectorsMapped("docs") {
		t.Fatal("a store that never maps mapped")
	}
	same := func(stage string, hc, mc *store.Collection) {
		t.Helper()
		for _, d := range batch(2)[:5] {
			req := store.SearchRequest{Mode: store.ModeVector, Embedding: d.Embedding, TopK: 7}
			a, err := hc.Search(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			b, err := mc.Search(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if len(a) != len(b) || len(a) == 0 {
				t.Fatalf("%s: %d hits mapped, %d on the heap", stage, len(b), len(a))
			}
			for i := range a {
				if a[i].Doc.ID != b[i].Doc.ID || a[i].Doc.Score != b[i].Doc.Score {
					t.Fatalf("%s: hit %d is %s %v mapped, %s %v on the heap", stage, i, b[i].Doc.ID, b[i].Doc.Score, a[i].Doc.ID, a[i].Doc.Score)
				}
			}
		}
	}
	same("written", hc, mc)
	for _, s := range []*store.Store{hs, ms} {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// The checkpoint's graph file (40 rows and their links) passes 400 bytes.
	hs, _ = open(heapDir, -1)
	defer hs.Close()
	ms, mb = open(mapDir, 400)
	defer ms.Close()
	hc, mc = ensure(t, hs), ensure(t, ms)
	same("reopened", hc, mc)
	if !mb.VectorsMapped("docs") {
		t.Fatal("the graph read from a checkpoint past the threshold is on the heap")
	}
}

// TestCloseDropsMappedVectorFiles: closing the store closes its graphs'
// scratch files at once (their unwritten pages are then dropped), rather
// than when the collector finds the graphs.
func TestCloseDropsMappedVectorFiles(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts open files through /proc/self/fd")
	}
	dir := t.TempDir()
	// Only this store's files: other tests' graphs may be collected, and
	// their files closed, meanwhile.
	scratch := func() int {
		fds, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, fd := range fds {
			if target, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && strings.HasPrefix(target, dir) && strings.Contains(target, "quarry-hnsw-") {
				n++
			}
		}
		return n
	}
	b, err := embedded.Open(context.Background(), dir, embedded.Options{MapVectorsBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := store.New(b)
	if err := ensure(t, s).Upsert(context.Background(), batch(0)); err != nil {
		t.Fatal(err)
	}
	if got := scratch(); got != 1 {
		t.Fatalf("%d scratch files open while the store is, want 1", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := scratch(); got != 0 {
		t.Fatalf("%d scratch files open after Close, want 0", got)
	}
}

// TestKeywordMatchesReference holds the embedded store's BM25 index (with
// MaxScore pruning and allow-sets) to the memory store's exhaustive scoring.
func TestKeywordMatchesReference(t *testing.T) {
	ctx := context.Background()
	b, err := embedded.Open(ctx, t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	emb := store.New(b)
	defer emb.Close()
	ref := store.New(memory.New())
	defer ref.Close()
	words := strings.Fields("refund shipping return policy gift card express delivery warehouse customer order invoice payment tax discount coupon account password login support ticket")
	r := rand.New(rand.NewPCG(3, 4))
	var docs []*document.Document
	for i := range 400 {
		n := 5 + r.IntN(40)
		var ws []string
		for range n {
			ws = append(ws, words[int(float64(len(words))*r.Float64()*r.Float64())])
		}
		d := document.New(strings.Join(ws, " "))
		d.ID = fmt.Sprintf("d%03d", i)
		d.Embedding = []float32{r.Float32() + 0.01, r.Float32()}
		d.Metadata = map[string]any{"tenant": []string{"a", "b"}[i%2], "batch": int64(i % 7)}
		if i%3 == 0 {
			d.Metadata["title"] = words[r.IntN(len(words))] + " guide"
		}
		docs = append(docs, d)
	}
	var colls []*store.Collection
	for _, s := range []*store.Store{emb, ref} {
		c, err := s.CreateCollection(ctx, store.CollectionConfig{Name: "kw", Schema: storetest.Schema(), Model: storetest.Model(2)})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Upsert(ctx, docs); err != nil {
			t.Fatal(err)
		}
		colls = append(colls, c)
	}
	queries := []string{"refund", "gift card guide", "express delivery tax tax", "coupon login", "password support ticket invoice", "nothing"}
	for _, q := range queries {
		for _, f := range []filter.Expr{nil, filter.Eq("tenant", "b"), filter.In("batch", 1, 3)} {
			var got [2][]store.Hit
			for i, c := range colls {
				got[i], err = c.Search(ctx, store.SearchRequest{Query: q, TopK: 15, Filter: f})
				if err != nil {
					t.Fatal(err)
				}
			}
			if len(got[0]) != len(got[1]) {
				t.Fatalf("%q %v: %d hits, reference %d", q, f, len(got[0]), len(got[1]))
			}
			// Both sum the same terms in different orders, so scores may
			// differ in the last bits and equal scores may swap; compare
			// them rounded, ties ordered by id, and leave out ties at the
			// cut, where either store may keep either document.
			a, b := rounded(got[0]), rounded(got[1])
			for i := range a {
				if a[i].score != b[i].score {
					t.Fatalf("%q %v hit %d: score %d, reference %d", q, f, i, a[i].score, b[i].score)
				}
				if a[i].score != a[len(a)-1].score && a[i].id != b[i].id {
					t.Fatalf("%q %v hit %d: %s, reference %s", q, f, i, a[i].id, b[i].id)
				}
			}
		}
	}
}

type scoredID struct {
	score int64
	id    string
}

// rounded orders hits by score rounded to 1e-6, then id.
func rounded(hits []store.Hit) []scoredID {
	out := make([]scoredID, len(hits))
	for i, h := range hits {
		out[i] = scoredID{int64(math.Round(h.Doc.Score * 1e6)), h.Doc.ID}
	}
	slices.SortFunc(out, func(x, y scoredID) int {
		if x.score != y.score {
			return cmp.Compare(y.score, x.score)
		}
		return strings.Compare(x.id, y.id)
	})
	return out
}

// TestIDReuseAfterCompaction deletes enough to compact the graph, so new
// documents reuse internal ids, and checks filters still see only what
// each id now holds — before and after a reopen from the checkpoint.
func TestIDReuseAfterCompaction(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, err := embedded.Open(ctx, dir, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := store.New(b)
	c, err := s.CreateCollection(ctx, store.CollectionConfig{Name: "reuse", Schema: storetest.Schema(), Model: storetest.Model(2)})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(prefix string, n int, tenant string, year int) []*document.Document {
		var docs []*document.Document
		for i := range n {
			d := document.New("x")
			d.ID = fmt.Sprintf("%s-%03d", prefix, i)
			d.Embedding = []float32{1, float32(i) / 10}
			d.Metadata = map[string]any{"tenant": tenant, "year": int64(year), "tags": []any{prefix}}
			docs = append(docs, d)
		}
		return docs
	}
	if err := c.Upsert(ctx, mk("old", 100, "acme", 2020)); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Delete(ctx, filter.Eq("tenant", "acme")); err != nil || n != 100 {
		t.Fatalf("delete: %d %v", n, err)
	}
	if err := c.Upsert(ctx, mk("new", 60, "globex", 2024)); err != nil {
		t.Fatal(err)
	}
	check := func(c *store.Collection) {
		t.Helper()
		for _, tc := range []struct {
			f    filter.Expr
			want int
		}{
			{filter.Eq("tenant", "acme"), 0},
			{filter.Eq("tenant", "globex"), 60},
			{filter.Neq("tenant", "globex"), 0},
			{filter.Lt("year", 2021), 0},
			{filter.ContainsAny("tags", "old"), 0},
			{filter.ContainsAll("tags", "new"), 60},
			{nil, 60},
		} {
			if n, err := c.Count(ctx, tc.f); err != nil || n != tc.want {
				t.Errorf("count %v = %d (%v), want %d", tc.f, n, err, tc.want)
			}
		}
	}
	check(c)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, err = embedded.Open(ctx, dir, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s = store.New(b)
	defer s.Close()
	c, err = s.Collection(ctx, "reuse")
	if err != nil {
		t.Fatal(err)
	}
	check(c)
}
