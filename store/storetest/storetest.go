// Package storetest is the conformance suite every Quarry store runs: the
// same cases, the same expected results, so a filter or a search means the
// same thing on the embedded store, in memory and on PostgreSQL.
//
// A backend's test calls Run with a function that opens a fresh, empty
// store:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) *store.Store { return store.New(memory.New()) })
//	}
package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
)

// Opener returns a fresh, empty store; the suite closes it.
type Opener func(t *testing.T) *store.Store

// Options describe what an engine documents about itself that changes
// what the suite may expect.
type Options struct {
	// ShardLocalScores says keyword scores use each shard's own term
	// statistics (Weaviate, as Elasticsearch without DFS): on a sharded
	// collection of five documents the best match by the collection's
	// statistics need not rank first, so the keyword test asks that it be
	// among the hits, not at the top.
	ShardLocalScores bool
}

// Run runs the whole suite.
func Run(t *testing.T, open Opener) { RunWith(t, open, Options{}) }

// RunWith runs the whole suite with the engine's options.
func RunWith(t *testing.T, open Opener, opts Options) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s *store.Store)
	}{
		{"Collections", testCollections},
		{"CollectionsIsolated", testCollectionsIsolated},
		{"ModelMismatch", testModelMismatch},
		{"UpsertGet", testUpsertGet},
		{"UpsertIdempotent", testUpsertIdempotent},
		{"UpsertValidatesWholeBatch", testUpsertValidates},
		{"CountDelete", testCountDelete},
		{"FiltersMatchReference", testFiltersMatchReference},
		{"FilterValidation", testFilterValidation},
		{"ScopesCannotWiden", testScopes},
		{"RawFilters", testRawFilters},
		{"VectorSearch", testVectorSearch},
		{"OrderingAndTopK", testOrdering},
		{"SearchRequestValidation", testSearchRequestValidation},
		{"KeywordSearch", func(t *testing.T, s *store.Store) { testKeywordSearch(t, s, opts) }},
		{"HybridSearch", testHybridSearch},
		{"SearchVectors", testSearchVectors},
		{"ConcurrentReadersDuringWrites", testConcurrency},
		{"ReplaceSources", testReplaceSources},
		{"Jobs", testJobs},
		{"Threads", testThreads},
		{"Scan", testScan},
		{"Hierarchy", testHierarchy},
		{"Settings", testSettings},
		{"Describe", testDescribe},
		{"Uncollected", testUncollected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("close: %v", err)
				}
			})
			tt.fn(t, s)
		})
	}
}

// Model is the embedding identity the suite's collections use.
func Model(dim int) embed.ModelInfo {
	return embed.ModelInfo{Provider: "test", Model: fmt.Sprintf("unit-%d", dim), Dimension: dim, Normalized: false}
}

// Schema is the schema of the suite's main collection.
func Schema() *document.Schema {
	s, err := document.NewSchema(
		document.Field{Name: "tenant", Type: document.TypeString, Required: true, Filterable: true},
		document.Field{Name: "lang", Type: document.TypeString, Filterable: true},
		document.Field{Name: "year", Type: document.TypeInteger, Filterable: true},
		document.Field{Name: "price", Type: document.TypeFloat, Filterable: true},
		document.Field{Name: "draft", Type: document.TypeBoolean, Filterable: true},
		document.Field{Name: "tags", Type: document.TypeStringList, Filterable: true},
		document.Field{Name: "batch", Type: document.TypeInteger, Filterable: true},
		document.Field{Name: "notes", Type: document.TypeString},
	)
	if err != nil {
		panic(err)
	}
	return s
}

func ctx(t *testing.T) context.Context { return t.Context() }

func mustCollection(t *testing.T, s *store.Store, name string, dim int) *store.Collection {
	t.Helper()
	c, err := s.CreateCollection(ctx(t), store.CollectionConfig{Name: name, Schema: Schema(), Model: Model(dim)})
	if err != nil {
		t.Fatalf("create collection %s: %v", name, err)
	}
	return c
}

func doc(id, content string, vec []float32, md map[string]any) *document.Document {
	d := document.New(content)
	d.ID = id
	d.Embedding = vec
	if _, ok := md["tenant"]; !ok {
		md["tenant"] = "acme"
	}
	d.Metadata = md
	return d
}

func mustUpsert(t *testing.T, c *store.Collection, docs ...*document.Document) {
	t.Helper()
	if err := c.Upsert(ctx(t), docs); err != nil {
		t.Fatalf("upsert: %v", err)
	}
}

func hitIDs(hits []store.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Doc.ID
	}
	return out
}

func testCollections(t *testing.T, s *store.Store) {
	c := mustCollection(t, s, "docs", 3)
	if c.Name() != "docs" || c.Config().Model != Model(3) {
		t.Errorf("config: %+v", c.Config())
	}
	if _, err := s.CreateCollection(ctx(t), store.CollectionConfig{Name: "docs", Model: Model(3)}); !errors.Is(err, store.ErrCollectionExists) {
		t.Errorf("duplicate create: %v", err)
	}
	if _, err := s.Collection(ctx(t), "missing"); !errors.Is(err, store.ErrCollectionNotFound) {
		t.Errorf("open missing: %v", err)
	}
	for _, bad := range []string{"", "Docs", "a b", "-x", strings.Repeat("a", 49), "x;drop", "ünï"} {
		if _, err := s.CreateCollection(ctx(t), store.CollectionConfig{Name: bad, Model: Model(3)}); !errors.Is(err, store.ErrInvalidRequest) {
			t.Errorf("name %q: %v", bad, err)
		}
	}
	if _, err := s.CreateCollection(ctx(t), store.CollectionConfig{Name: "nomodel"}); !errors.Is(err, store.ErrInvalidRequest) {
		t.Errorf("collection without a model: %v", err)
	}
	mustCollection(t, s, "a-first", 2)
	list, err := s.Collections(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, cfg := range list {
		names = append(names, cfg.Name)
	}
	if !slices.Equal(names, []string{"a-first", "docs"}) {
		t.Errorf("collections %v", names)
	}
	got, err := s.Collection(ctx(t), "docs")
	if err != nil {
		t.Fatal(err)
	}
	if got.Config().Schema == nil || len(got.Config().Schema.Fields) != len(Schema().Fields) {
		t.Errorf("schema not kept: %+v", got.Config().Schema)
	}
	if err := s.DropCollection(ctx(t), "docs"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Collection(ctx(t), "docs"); !errors.Is(err, store.ErrCollectionNotFound) {
		t.Errorf("dropped collection still opens: %v", err)
	}
	if err := s.DropCollection(ctx(t), "docs"); !errors.Is(err, store.ErrCollectionNotFound) {
		t.Errorf("drop missing: %v", err)
	}
}

func testCollectionsIsolated(t *testing.T, s *store.Store) {
	small := mustCollection(t, s, "small", 2)
	big := mustCollection(t, s, "big", 5)
	mustUpsert(t, small, doc("same-id", "two dims", []float32{1, 0}, map[string]any{}))
	mustUpsert(t, big, doc("same-id", "five dims", []float32{0, 0, 0, 0, 1}, map[string]any{}),
		doc("other", "five dims too", []float32{0, 0, 0, 1, 0}, map[string]any{}))
	if n, _ := small.Count(ctx(t), nil); n != 1 {
		t.Errorf("small count %d", n)
	}
	if n, _ := big.Count(ctx(t), nil); n != 2 {
		t.Errorf("big count %d", n)
	}
	got, err := small.Get(ctx(t), []string{"same-id", "other"})
	if err != nil || len(got) != 1 || got[0].Content != "two dims" {
		t.Errorf("small get: %v %v", got, err)
	}
	hits, err := big.Search(ctx(t), store.SearchRequest{Embedding: []float32{0, 0, 0, 0, 1}})
	if err != nil || len(hits) != 2 || hits[0].Doc.ID != "same-id" || hits[0].Doc.Content != "five dims" {
		t.Errorf("big search: %v %v", hitIDs(hits), err)
	}
	if err := small.Upsert(ctx(t), []*document.Document{doc("x", "wrong dim", []float32{1, 0, 0}, map[string]any{})}); !errors.Is(err, store.ErrInvalidRequest) || !errors.Is(err, document.ErrDimension) {
		t.Errorf("wrong dimension: %v", err)
	}
	if _, err := small.Search(ctx(t), store.SearchRequest{Embedding: []float32{1, 0, 0}}); !errors.Is(err, document.ErrDimension) {
		t.Errorf("query of the wrong dimension: %v", err)
	}
	if n, err := small.Delete(ctx(t), filter.Eq("sourceType", "manual")); err != nil || n != 1 {
		t.Errorf("delete: %d %v", n, err)
	}
	if n, _ := big.Count(ctx(t), nil); n != 2 {
		t.Errorf("a delete in one collection touched another: %d", n)
	}
}

func testModelMismatch(t *testing.T, s *store.Store) {
	cfg := store.CollectionConfig{Name: "docs", Schema: Schema(), Model: Model(3)}
	if _, err := s.EnsureCollection(ctx(t), cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EnsureCollection(ctx(t), cfg); err != nil {
		t.Errorf("ensure existing: %v", err)
	}
	other := cfg
	other.Model.Model = "another-model"
	_, err := s.EnsureCollection(ctx(t), other)
	if !errors.Is(err, store.ErrModelMismatch) || !strings.Contains(err.Error(), "docs") || !strings.Contains(err.Error(), "unit-3") {
		t.Errorf("model mismatch: %v", err)
	}
	other = cfg
	other.Model.Dimension = 4
	other.Model.Model = "unit-3"
	if _, err := s.EnsureCollection(ctx(t), other); !errors.Is(err, store.ErrModelMismatch) {
		t.Errorf("dimension mismatch: %v", err)
	}
	other = cfg
	other.Schema = nil
	if _, err := s.EnsureCollection(ctx(t), other); !errors.Is(err, store.ErrSchemaMismatch) {
		t.Errorf("schema mismatch: %v", err)
	}
}

func testUpsertGet(t *testing.T, s *store.Store) {
	c := mustCollection(t, s, "docs", 3)
	d := doc("d1", "Refunds take five days. <b>“quoted”</b>", []float32{0.5, -0.25, 1}, map[string]any{
		"year": int64(2026), "price": 9.0, "draft": false, "tags": []any{"go", "rag"},
		"nested": map[string]any{"k": []any{int64(1), 2.5, "x", nil, true}}, "notes": "Città 'q'",
	})
	d.SourceType, d.SourceName = "file", "docs/refunds.md"
	d.Provenance = document.Provenance{Source: "docs/refunds.md", LineStart: 3, LineEnd: 9, HeadingPath: []string{"Policies", "Refunds"}, ChunkIndex: 2, ChunkCount: 5}
	mustUpsert(t, c, d)
	d.Content = "changed after upsert"
	got, err := c.Get(ctx(t), []string{"missing", "d1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("get returned %d documents", len(got))
	}
	g := got[0]
	if g.Content != "Refunds take five days. <b>“quoted”</b>" {
		t.Errorf("the store kept a reference to the caller's document, or changed content: %q", g.Content)
	}
	if g.SourceType != "file" || g.SourceName != "docs/refunds.md" || g.Scored {
		t.Errorf("source/score: %+v", g)
	}
	want := map[string]any{"tenant": "acme", "year": int64(2026), "price": 9.0, "draft": false,
		"tags": []any{"go", "rag"}, "nested": map[string]any{"k": []any{int64(1), 2.5, "x", nil, true}}, "notes": "Città 'q'"}
	if fmt.Sprintf("%#v", canonical(t, g.Metadata)) != fmt.Sprintf("%#v", canonical(t, want)) {
		t.Errorf("metadata changed in the store:\n got %#v\nwant %#v", g.Metadata, want)
	}
	if !slices.Equal(g.Embedding, []float32{0.5, -0.25, 1}) {
		t.Errorf("embedding %v", g.Embedding)
	}
	if g.Provenance.LineStart != 3 || g.Provenance.LineEnd != 9 || !slices.Equal(g.Provenance.HeadingPath, []string{"Policies", "Refunds"}) || g.Provenance.ChunkCount != 5 {
		t.Errorf("provenance %+v", g.Provenance)
	}
	g.Metadata["tenant"] = "mutated"
	again, _ := c.Get(ctx(t), []string{"d1"})
	if again[0].Metadata["tenant"] != "acme" {
		t.Error("Get returned the stored document itself, not a copy")
	}
	if docs, err := c.Get(ctx(t), nil); err != nil || len(docs) != 0 {
		t.Errorf("get of no ids: %v %v", docs, err)
	}
}

// canonical puts metadata in canonical Go values (int64, float64) so
// backends that decode numbers differently compare equal only when the
// integer/float distinction survived.
func canonical(t *testing.T, m map[string]any) any {
	t.Helper()
	b, err := document.MarshalValue(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func testUpsertIdempotent(t *testing.T, s *store.Store) {
	c := mustCollection(t, s, "docs", 2)
	mustUpsert(t, c, doc("a", "v1", []float32{1, 0}, map[string]any{"year": 2020}))
	mustUpsert(t, c, doc("a", "v1", []float32{1, 0}, map[string]any{"year": 2020}))
	mustUpsert(t, c, doc("a", "v2", []float32{0, 1}, map[string]any{"year": 2021}))
	if n, _ := c.Count(ctx(t), nil); n != 1 {
		t.Fatalf("count %d after three upserts of one id", n)
	}
	got, _ := c.Get(ctx(t), []string{"a"})
	if got[0].Content != "v2" || got[0].Metadata["year"] != int64(2021) {
		t.Errorf("upsert did not replace: %+v", got[0])
	}
	if n, _ := c.Count(ctx(t), filter.Eq("year", 2020)); n != 0 {
		t.Error("old metadata still matches a filter")
	}
	hits, _ := c.Search(ctx(t), store.SearchRequest{Embedding: []float32{0, 1}, TopK: 1})
	if len(hits) != 1 || hits[0].Doc.ID != "a" || math.Abs(hits[0].Doc.Score-1) > 1e-6 {
		t.Errorf("vector index not updated: %v", hits)
	}
}

func testUpsertValidates(t *testing.T, s *store.Store) {
	c := mustCollection(t, s, "docs", 2)
	good := func(id string) *document.Document { return doc(id, "ok", []float32{1, 0}, map[string]any{}) }
	noVec := good("novec")
	noVec.Embedding = nil
	noID := good("")
	badYear := good("badyear")
	badYear.Metadata["year"] = "2026"
	missingTenant := good("notenant")
	delete(missingTenant.Metadata, "tenant")
	reserved := good("reserved")
	reserved.Metadata["score"] = 1
	nanVec := good("nan")
	nanVec.Embedding = []float32{float32(math.NaN()), 1}
	zeroVec := good("zero")
	zeroVec.Embedding = []float32{0, 0}
	emptySource := good("nosource")
	emptySource.SourceName = ""
	tests := []struct {
		bad  *document.Document
		says string
	}{
		{noVec, "novec"},
		{noID, "no id"},
		{badYear, "year"},
		{missingTenant, "tenant"},
		{reserved, "score"},
		{nanVec, "NaN"},
		{zeroVec, "zero norm"},
		{emptySource, "sourceName"},
		{good("g1"), "share id"}, // duplicate of the first document in the batch
		{nil, "nil"},
	}
	for _, tt := range tests {
		err := c.Upsert(ctx(t), []*document.Document{good("g1"), good("g2"), tt.bad})
		if !errors.Is(err, store.ErrInvalidRequest) || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("bad document %v: error %v should say %q", tt.bad, err, tt.says)
		}
		if n, _ := c.Count(ctx(t), nil); n != 0 {
			t.Fatalf("a rejected batch wrote %d documents", n)
		}
	}
	if err := c.Upsert(ctx(t), nil); err != nil {
		t.Errorf("empty batch: %v", err)
	}
}

func testCountDelete(t *testing.T, s *store.Store) {
	c := mustCollection(t, s, "docs", 2)
	web := func(id, name string, v []float32) *document.Document {
		d := doc(id, id, v, map[string]any{})
		d.SourceType, d.SourceName = "web", name
		return d
	}
	file := doc("file", "file", []float32{0.5, 0.5}, map[string]any{})
	file.SourceType, file.SourceName = "file", "doc.txt"
	mustUpsert(t, c, web("web-a", "page-a", []float32{1, 0}), web("web-b", "page-b", []float32{0, 1}), file)
	if n, _ := c.Count(ctx(t), filter.Eq("sourceType", "web")); n != 2 {
		t.Errorf("count web %d", n)
	}
	n, err := c.Delete(ctx(t), filter.And(filter.Eq("sourceType", "web"), filter.Eq("sourceName", "page-a")))
	if err != nil || n != 1 {
		t.Fatalf("delete page-a: %d %v", n, err)
	}
	hits, _ := c.Search(ctx(t), store.SearchRequest{Embedding: []float32{0.4, 0.6}})
	if got := hitIDs(hits); !slices.Equal(got, []string{"file", "web-b"}) {
		t.Errorf("after first delete: %v", got)
	}
	if n, _ := c.Delete(ctx(t), filter.Eq("sourceType", "web")); n != 1 {
		t.Errorf("delete web: %d", n)
	}
	hits, _ = c.Search(ctx(t), store.SearchRequest{Embedding: []float32{1, 0}})
	if got := hitIDs(hits); !slices.Equal(got, []string{"file"}) {
		t.Errorf("after second delete: %v", got)
	}
	if n, _ := c.Delete(ctx(t), filter.Eq("sourceType", "web")); n != 0 {
		t.Errorf("deleting nothing reported %d", n)
	}
	if _, err := c.Delete(ctx(t), nil); !errors.Is(err, store.ErrInvalidRequest) {
		t.Errorf("delete without a filter: %v", err)
	}
	if got, _ := c.Get(ctx(t), []string{"web-a"}); len(got) != 0 {
		t.Error("deleted document still readable")
	}
}

// corpus builds documents with varied metadata, including missing fields,
// integral floats, and numeric-looking strings.
func corpus(n int) []*document.Document {
	r := rand.New(rand.NewPCG(7, 11))
	langs := []string{"en", "de", "it", "EN"}
	tagSets := [][]any{{"go"}, {"rag"}, {"go", "rag"}, {"php"}, {"go", "php", "rag"}}
	var docs []*document.Document
	for i := range n {
		md := map[string]any{"tenant": []string{"acme", "globex", "initech"}[i%3]}
		if i%5 != 0 {
			md["lang"] = langs[r.IntN(len(langs))]
		}
		if i%4 != 1 {
			md["year"] = int64(2018 + r.IntN(9))
		}
		if i%3 != 2 {
			md["price"] = float64(r.IntN(40)) / 2 // integral floats included
		}
		if i%6 != 3 {
			md["draft"] = r.IntN(2) == 0
		}
		if i%7 != 4 {
			md["tags"] = tagSets[r.IntN(len(tagSets))]
		}
		md["code"] = fmt.Sprint(r.IntN(50)) // undeclared, numeric-looking string
		v := []float32{r.Float32()*2 - 1, r.Float32()*2 - 1, r.Float32()*2 - 1, 0.01}
		d := doc(fmt.Sprintf("doc-%03d", i), fmt.Sprintf("document number %d", i), v, md)
		d.SourceType = []string{"file", "url"}[i%2]
		d.SourceName = fmt.Sprintf("src/%d.md", i%10)
		docs = append(docs, d)
	}
	return docs
}

// referenceFilters are checked on every store against filter.Matcher, the
// reference semantics.
var referenceFilters = []string{
	`tenant = 'acme'`,
	`tenant != 'acme'`,
	`tenant in ('globex', 'initech')`,
	`lang = 'en'`,
	`lang in ('EN', 'de')`,
	`year = 2020`,
	`price = 10.0`,
	`year in (2019, 2021, 2023)`,
	`year > 2020`, `year >= 2020`, `year < 2020`, `year <= 2020`,
	`year >= 2019 and year < 2022`,
	`price > 9.5`, `price >= 10`, `price = 10`, `price < 3 or price > 17`,
	`draft = true`, `draft = false`,
	`tags contains any ('go')`, `tags contains any ('php', 'rag')`,
	`tags contains all ('go', 'rag')`, `tags contains all ('go', 'go')`, `tags contains any ('GO')`,
	`sourceType = 'file'`, `sourceType != 'file'`, `sourceName in ('src/1.md', 'src/2.md')`,
	`sourceName = 'src/3.md' and sourceType = 'url'`,
	`tenant = 'acme' and (year >= 2024 or tags contains any ('php'))`,
	`(lang = 'en' or lang = 'de') and draft = false and price >= 5`,
	`tenant = 'nobody'`,
	`year > 3000 or tenant = 'globex'`,
	`d = 1 or tenant = 'acme'`,
}

func testFiltersMatchReference(t *testing.T, s *store.Store) {
	sch, err := document.NewSchema(append(Schema().Fields, document.Field{Name: "d", Type: document.TypeInteger, Filterable: true})...)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.CreateCollection(ctx(t), store.CollectionConfig{Name: "docs", Schema: sch, Model: Model(4)})
	if err != nil {
		t.Fatal(err)
	}
	docs := corpus(120)
	mustUpsert(t, c, docs...)
	for _, src := range referenceFilters {
		f, err := filter.Parse(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		m, err := filter.NewMatcher(f)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, d := range docs {
			if m.MatchDocument(d) {
				want = append(want, d.ID)
			}
		}
		n, err := c.Count(ctx(t), f)
		if err != nil {
			t.Errorf("count %s: %v", src, err)
			continue
		}
		if n != len(want) {
			t.Errorf("count %s = %d, reference %d", src, n, len(want))
		}
		hits, err := c.Search(ctx(t), store.SearchRequest{Embedding: []float32{1, 0.5, -0.25, 0.01}, Filter: f, TopK: 500})
		if err != nil {
			t.Errorf("search %s: %v", src, err)
			continue
		}
		got := hitIDs(hits)
		sort.Strings(got)
		if !slices.Equal(got, want) {
			t.Errorf("search %s: %d ids, reference %d\n got %v\nwant %v", src, len(got), len(want), got, want)
		}
	}
	// Deleting by filter removes exactly the reference set.
	f := filter.And(filter.Eq("tenant", "globex"), filter.Gte("year", 2022))
	m, _ := filter.NewMatcher(f)
	var want int
	for _, d := range docs {
		if m.MatchDocument(d) {
			want++
		}
	}
	if n, err := c.Delete(ctx(t), f); err != nil || n != want {
		t.Errorf("delete: %d, %v; reference %d", n, err, want)
	}
	if n, _ := c.Count(ctx(t), nil); n != len(docs)-want {
		t.Errorf("count after delete %d", n)
	}
}

func testFilterValidation(t *testing.T, s *store.Store) {
	c := mustCollection(t, s, "docs", 2)
	mustUpsert(t, c, doc("a", "x", []float32{1, 0}, map[string]any{"year": 2026}))
	bad := []struct {
		f      filter.Expr
		reason filter.Reason
	}{
		{filter.Eq("year", "2026"), filter.ReasonType},
		{filter.Neq("lang", "de"), filter.ReasonNeqOptional},
		{filter.Gt("lang", 3), filter.ReasonNotNumeric},
		{filter.Eq("undeclared", 1), filter.ReasonUndeclared},
		{filter.Eq("content", "x"), filter.ReasonUndeclared},
		{filter.Eq("notes", "x"), filter.ReasonNotFilterable},
		{filter.Eq("tags", "go"), filter.ReasonListField},
		{filter.ContainsAny("lang", "en"), filter.ReasonNotList},
		{filter.In("year"), filter.ReasonEmptyList},
		{filter.Eq("year", nil), filter.ReasonNull},
		{filter.Or(), filter.ReasonEmptyGroup},
	}
	for _, tt := range bad {
		var fe *filter.Error
		_, err := c.Search(ctx(t), store.SearchRequest{Embedding: []float32{1, 0}, Filter: tt.f})
		if !errors.As(err, &fe) || fe.Reason != tt.reason {
			t.Errorf("search with %v: %v, want reason %s", tt.f, err, tt.reason)
		}
		if _, err := c.Count(ctx(t), tt.f); !errors.As(err, &fe) || fe.Reason != tt.reason {
			t.Errorf("count with %v: %v", tt.f, err)
		}
		if _, err := c.Delete(ctx(t), tt.f); !errors.As(err, &fe) || fe.Reason != tt.reason {
			t.Errorf("delete with %v: %v", tt.f, err)
		}
	}
	if n, _ := c.Count(ctx(t), nil); n != 1 {
		t.Error("an invalid delete removed documents")
	}
}

func testScopes(t *testing.T, s *store.Store) {
	c := mustCollection(t, s, "docs", 2)
	mustUpsert(t, c,
		doc("acme-1", "x", []float32{1, 0}, map[string]any{"tenant": "acme", "draft": true}),
		doc("globex-1", "x", []float32{1, 0}, map[string]any{"tenant": "globex", "draft": true}),
		doc("globex-2", "x", []float32{0, 1}, map[string]any{"tenant": "globex", "draft": false}),
	)
	scope := filter.Eq("tenant", "acme")
	// A caller's or, however broad, stays nested under the scope.
	caller := filter.Or(filter.Eq("draft", true), filter.Eq("tenant", "globex"), filter.Neq("tenant", "acme"))
	f := filter.Merge(scope, caller)
	hits, err := c.Search(ctx(t), store.SearchRequest{Embedding: []float32{1, 0}, Filter: f})
	if err != nil {
		t.Fatal(err)
	}
	if got := hitIDs(hits); !slices.Equal(got, []string{"acme-1"}) {
		t.Errorf("scope widened: %v", got)
	}
	if n, _ := c.Delete(ctx(t), filter.Merge(scope, filter.Eq("tenant", "globex"))); n != 0 {
		t.Errorf("scoped delete removed %d documents of another tenant", n)
	}
	if n, _ := c.Count(ctx(t), nil); n != 3 {
		t.Errorf("count %d", n)
	}
}

func testRawFilters(t *testing.T, s *store.Store) {
	c := mustCollection(t, s, "docs", 2)
	mustUpsert(t, c, doc("a", "x", []float32{1, 0}, map[string]any{}))
	other := "a-store-that-does-not-exist"
	raw := filter.And(filter.Eq("tenant", "acme"), filter.Or(filter.Eq("year", 2025), filter.NewRaw(other, "x = 1")))
	var fe *filter.Error
	if _, err := c.Search(ctx(t), store.SearchRequest{Embedding: []float32{1, 0}, Filter: raw}); !errors.As(err, &fe) || fe.Reason != filter.ReasonRaw || !strings.Contains(err.Error(), other) {
		t.Errorf("raw filter for another store: %v", err)
	}
	if _, err := c.Delete(ctx(t), raw); !errors.As(err, &fe) || fe.Reason != filter.ReasonRaw {
		t.Errorf("delete with raw filter for another store: %v", err)
	}
	empty := mustCollection(t, s, "empty", 2)
	if _, err := empty.Count(ctx(t), raw); !errors.As(err, &fe) || fe.Reason != filter.ReasonRaw {
		t.Errorf("raw filter on an empty collection: %v", err)
	}
}

func testVectorSearch(t *testing.T, s *store.Store) {
	c := mustCollection(t, s, "docs", 2)
	mustUpsert(t, c,
		doc("orthogonal", "orthogonal", []float32{0, 1}, map[string]any{}),
		doc("opposite", "opposite", []float32{-1, 0}, map[string]any{}),
		doc("identical", "identical", []float32{3, 0}, map[string]any{}),
		doc("diagonal", "diagonal", []float32{0.5, 0.5}, map[string]any{}),
	)
	hits, err := c.Search(ctx(t), store.SearchRequest{Embedding: []float32{1, 0}, Explain: true, Vectors: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id    string
		score float64
	}{{"identical", 1}, {"diagonal", math.Sqrt2 / 2}, {"orthogonal", 0}, {"opposite", -1}}
	if len(hits) != len(want) {
		t.Fatalf("got %v", hitIDs(hits))
	}
	for i, w := range want {
		h := hits[i]
		if h.Doc.ID != w.id || !h.Doc.Scored || math.Abs(h.Doc.Score-w.score) > 1e-6 {
			t.Errorf("hit %d: %s %v (scored %v), want %s %v", i, h.Doc.ID, h.Doc.Score, h.Doc.Scored, w.id, w.score)
		}
		if h.Explain == nil || h.Explain.Vector == nil || h.Explain.Vector.Rank != i+1 {
			t.Errorf("hit %d: explain %+v", i, h.Explain)
		}
		if h.Doc.Embedding == nil || h.Doc.Content != w.id {
			t.Errorf("hit %d: document not returned whole", i)
		}
	}
	filtered, err := c.Search(ctx(t), store.SearchRequest{Embedding: []float32{1, 0}, TopK: 1,
		Filter: filter.In("sourceName", "nothing")})
	if err != nil || len(filtered) != 0 {
		t.Errorf("filter matching nothing: %v %v", hitIDs(filtered), err)
	}
	empty := mustCollection(t, s, "empty", 2)
	if hits, err := empty.Search(ctx(t), store.SearchRequest{Embedding: []float32{1, 0}}); err != nil || len(hits) != 0 {
		t.Errorf("empty collection: %v %v", hits, err)
	}
}

func testOrdering(t *testing.T, s *store.Store) {
	c := mustCollection(t, s, "docs", 2)
	// Equal scores order by id ascending, whatever the insertion order.
	var docs []*document.Document
	for _, id := range []string{"m", "c", "x", "a", "k"} {
		docs = append(docs, doc(id, id, []float32{2, 0}, map[string]any{}))
	}
	docs = append(docs, doc("best", "best", []float32{1, 0.001}, map[string]any{}))
	docs[len(docs)-1].Embedding = []float32{1, 0}
	docs = append(docs, doc("worse", "worse", []float32{1, 1}, map[string]any{}))
	mustUpsert(t, c, docs...)
	hits, err := c.Search(ctx(t), store.SearchRequest{Embedding: []float32{1, 0}, TopK: 3})
	if err != nil {
		t.Fatal(err)
	}
	if got := hitIDs(hits); !slices.Equal(got, []string{"a", "best", "c"}) {
		t.Errorf("tie order: %v", got)
	}
	hits, _ = c.Search(ctx(t), store.SearchRequest{Embedding: []float32{1, 0}, TopK: 50})
	if len(hits) != len(docs) {
		t.Errorf("top-k above the corpus size returned %d", len(hits))
	}
	for i := 1; i < len(hits); i++ {
		if store.Less(hits[i].Doc, hits[i-1].Doc) {
			t.Errorf("results out of order at %d", i)
		}
	}
	// Default top-k is 10.
	var more []*document.Document
	for i := range 15 {
		more = append(more, doc(fmt.Sprintf("n%02d", i), "n", []float32{float32(i + 1), 1}, map[string]any{}))
	}
	mustUpsert(t, c, more...)
	hits, _ = c.Search(ctx(t), store.SearchRequest{Embedding: []float32{1, 0}})
	if len(hits) != store.DefaultTopK {
		t.Errorf("default top-k returned %d", len(hits))
	}
}

func testSearchRequestValidation(t *testing.T, s *store.Store) {
	c := mustCollection(t, s, "docs", 2)
	bad := []store.SearchRequest{
		{Embedding: []float32{1, 0}, TopK: -3},
		{Embedding: []float32{1, 0}, TopK: math.MinInt},
		{Embedding: []float32{1, 0}, TopK: store.MaxTopK + 1},
		{},
		{Embedding: []float32{}},
		{Embedding: []float32{0, 0}},
		{Embedding: []float32{float32(math.Inf(1)), 0}},
		{Mode: store.ModeVector, Query: "text only"},
		{Mode: store.ModeKeyword, Embedding: []float32{1, 0}},
		{Mode: store.ModeHybrid, Embedding: []float32{1, 0}},
		{Mode: "semantic", Embedding: []float32{1, 0}},
		{Embedding: []float32{1, 0}, Query: "x", Fusion: store.Fusion{Method: "magic"}},
		{Embedding: []float32{1, 0}, Query: "x", Fusion: store.Fusion{Alpha: 2}},
		{Embedding: []float32{1, 0}, Query: "x", Fusion: store.Fusion{K: -1}},
	}
	for _, req := range bad {
		if _, err := c.Search(ctx(t), req); !errors.Is(err, store.ErrInvalidRequest) {
			t.Errorf("request %+v: %v", req, err)
		}
	}
	if _, err := c.Search(ctx(t), store.SearchRequest{Embedding: []float32{1, 0}, TopK: -3}); err == nil || !strings.Contains(err.Error(), "top-k") {
		t.Errorf("top-k error should name top-k: %v", err)
	}
}

// keywordCorpus is small enough that BM25 rankings are unambiguous.
func keywordCorpus() []*document.Document {
	texts := map[string]string{
		"refunds":  "Refunds are paid back within five days of the return.",
		"shipping": "Shipping takes two days; express shipping takes one day.",
		"returns":  "Returns are accepted within thirty days. Refunds follow returns.",
		"privacy":  "We never sell personal data. Privacy matters.",
		"careers":  "Join the team: we hire engineers.",
	}
	var docs []*document.Document
	i := 0
	for _, id := range []string{"careers", "privacy", "refunds", "returns", "shipping"} {
		v := []float32{float32(i), 1}
		docs = append(docs, doc(id, texts[id], v, map[string]any{"year": int64(2020 + i)}))
		i++
	}
	return docs
}

func testKeywordSearch(t *testing.T, s *store.Store, opts Options) {
	c := mustCollection(t, s, "docs", 2)
	mustUpsert(t, c, keywordCorpus()...)
	hits, err := c.Search(ctx(t), store.SearchRequest{Query: "shipping days"})
	if errors.Is(err, store.ErrUnsupported) {
		t.Skip("store has no keyword search")
	}
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case opts.ShardLocalScores && !slices.Contains(hitIDs(hits), "shipping"):
		t.Fatalf("keyword search: %v", hitIDs(hits))
	case !opts.ShardLocalScores && (len(hits) == 0 || hits[0].Doc.ID != "shipping"):
		t.Fatalf("keyword search: %v", hitIDs(hits))
	}
	for i, h := range hits {
		if !h.Doc.Scored || h.Doc.Score <= 0 {
			t.Errorf("hit %d has no positive BM25 score: %v", i, h.Doc.Score)
		}
		if i > 0 && store.Less(h.Doc, hits[i-1].Doc) {
			t.Errorf("keyword results out of order")
		}
	}
	for _, id := range hitIDs(hits) {
		if id == "privacy" || id == "careers" {
			t.Errorf("document %s shares no term with the query but was returned", id)
		}
	}
	hits, _ = c.Search(ctx(t), store.SearchRequest{Query: "REFUNDS", Filter: filter.Gte("year", 2023)})
	if got := hitIDs(hits); !slices.Equal(got, []string{"returns"}) {
		t.Errorf("filtered keyword search: %v", got)
	}
	hits, _ = c.Search(ctx(t), store.SearchRequest{Query: "zebra"})
	if len(hits) != 0 {
		t.Errorf("query with no matching term: %v", hitIDs(hits))
	}
}

func testHybridSearch(t *testing.T, s *store.Store) {
	c := mustCollection(t, s, "docs", 2)
	docs := keywordCorpus()
	mustUpsert(t, c, docs...)
	req := store.SearchRequest{Query: "refunds", Embedding: []float32{4, 1}, TopK: 3, Explain: true}
	hits, err := c.Search(ctx(t), req)
	if errors.Is(err, store.ErrUnsupported) {
		t.Skip("store has no keyword search")
	}
	if err != nil {
		t.Fatal(err)
	}
	// Reference: fuse the two branches as SEMANTICS §5 says.
	vec, err := c.Search(ctx(t), store.SearchRequest{Embedding: req.Embedding, TopK: 2 * req.TopK})
	if err != nil {
		t.Fatal(err)
	}
	kw, err := c.Search(ctx(t), store.SearchRequest{Query: req.Query, TopK: 2 * req.TopK})
	if err != nil {
		t.Fatal(err)
	}
	rrf := map[string]float64{}
	for i, h := range vec {
		rrf[h.Doc.ID] += 1.0 / float64(60+i+1)
	}
	for i, h := range kw {
		rrf[h.Doc.ID] += 1.0 / float64(60+i+1)
	}
	if len(hits) != req.TopK {
		t.Fatalf("hybrid returned %d hits", len(hits))
	}
	for i, h := range hits {
		if math.Abs(h.Doc.Score-rrf[h.Doc.ID]) > 1e-9 {
			t.Errorf("hit %s: fused score %v, reference %v", h.Doc.ID, h.Doc.Score, rrf[h.Doc.ID])
		}
		if h.Explain == nil || (h.Explain.Vector == nil && h.Explain.Keyword == nil) {
			t.Errorf("hit %d: no explanation", i)
		}
		if i > 0 && store.Less(h.Doc, hits[i-1].Doc) {
			t.Error("hybrid results out of order")
		}
	}
	if hits[0].Doc.ID != "returns" && hits[0].Doc.ID != "refunds" {
		t.Errorf("hybrid top hit %s", hits[0].Doc.ID)
	}
	// Filters apply inside each branch.
	hits, err = c.Search(ctx(t), store.SearchRequest{Query: "refunds", Embedding: []float32{4, 1}, Filter: filter.Lte("year", 2021)})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		if y := h.Doc.Metadata["year"]; y != int64(2020) && y != int64(2021) {
			t.Errorf("hybrid returned %s (year %v) outside the filter", h.Doc.ID, y)
		}
	}
	// Convex fusion stays within [0, 1].
	hits, err = c.Search(ctx(t), store.SearchRequest{Query: "refunds returns", Embedding: []float32{4, 1}, Fusion: store.Fusion{Method: store.FusionConvex, Alpha: 0.3}})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		if h.Doc.Score < 0 || h.Doc.Score > 1+1e-9 {
			t.Errorf("convex score %v outside [0,1]", h.Doc.Score)
		}
	}
}

// testConcurrency runs four writers (each its own batches, all or nothing)
// beside four readers that must never see part of a batch.
func testConcurrency(t *testing.T, s *store.Store) {
	c := mustCollection(t, s, "docs", 2)
	const batches, size, writers, readers = 32, 20, 4, 4
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, writers+readers)
	for r := range readers {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				b := (i + r) % batches
				n, err := c.Count(ctx(t), filter.Eq("batch", b))
				if err != nil {
					errs <- err
					return
				}
				if n != 0 && n != size {
					errs <- fmt.Errorf("reader saw %d of the %d documents of batch %d", n, size, b)
					return
				}
				hits, err := c.Search(ctx(t), store.SearchRequest{Embedding: []float32{1, float32(r)}, Filter: filter.Eq("batch", b), TopK: size})
				if err != nil {
					errs <- err
					return
				}
				if len(hits) != 0 && len(hits) != size {
					errs <- fmt.Errorf("search saw %d of the %d documents of batch %d", len(hits), size, b)
					return
				}
			}
		})
	}
	var wr sync.WaitGroup
	for w := range writers {
		wr.Go(func() {
			for b := w; b < batches; b += writers {
				var docs []*document.Document
				for i := range size {
					docs = append(docs, doc(fmt.Sprintf("b%02d-%02d", b, i), "x", []float32{float32(i + 1), float32(b + 1)}, map[string]any{"batch": b}))
				}
				if err := c.Upsert(ctx(t), docs); err != nil {
					errs <- fmt.Errorf("writer %d: %w", w, err)
					return
				}
			}
		})
	}
	wr.Wait()
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n, _ := c.Count(ctx(t), nil); n != batches*size {
		t.Errorf("count %d after concurrent writes", n)
	}
}

func sourceDocs(src document.Source, n int, version string) []*document.Document {
	var docs []*document.Document
	for i := range n {
		content := fmt.Sprintf("%s chunk %d %s", src.Name, i, version)
		d := doc(document.ChunkID(src.Type, src.Name, i, content), content, []float32{float32(i + 1), 1}, map[string]any{})
		d.SourceType, d.SourceName = src.Type, src.Name
		docs = append(docs, d)
	}
	return docs
}

func testReplaceSources(t *testing.T, s *store.Store) {
	c := mustCollection(t, s, "docs", 2)
	if _, err := c.Sources(ctx(t)); errors.Is(err, store.ErrUnsupported) {
		t.Skip("store does not track sources")
	}
	a := document.Source{Type: "file", Name: "a.md"}
	b := document.Source{Type: "file", Name: "b.md"}
	err := c.ReplaceSources(ctx(t), []store.SourceUpdate{
		{Source: a, Hash: "ha1", Docs: sourceDocs(a, 3, "v1"), Origin: "/team-a/a.md"},
		{Source: b, Hash: "hb1", Docs: sourceDocs(b, 2, "v1")},
	})
	if err != nil {
		t.Fatal(err)
	}
	states, err := c.Sources(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != 2 || states[0].Source != a || states[0].Hash != "ha1" || states[0].Chunks != 3 || states[1].Hash != "hb1" {
		t.Errorf("sources %+v", states)
	}
	// The file a source was read from comes back, so a later run can tell
	// another file of the same name from it.
	if states[0].Origin != "/team-a/a.md" || states[1].Origin != "" {
		t.Errorf("origins %q, %q", states[0].Origin, states[1].Origin)
	}
	// A new version of a replaces all of its chunks, even when it has fewer.
	if err := c.ReplaceSources(ctx(t), []store.SourceUpdate{{Source: a, Hash: "ha2", Docs: sourceDocs(a, 1, "v2")}}); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Count(ctx(t), filter.Eq("sourceName", "a.md")); n != 1 {
		t.Errorf("a has %d chunks after replacement, want 1", n)
	}
	hits, _ := c.Search(ctx(t), store.SearchRequest{Embedding: []float32{1, 1}, Filter: filter.Eq("sourceName", "a.md")})
	if len(hits) != 1 || !strings.HasSuffix(hits[0].Doc.Content, "v2") {
		t.Errorf("old chunks still searchable: %v", hitIDs(hits))
	}
	// A hash without chunks records an empty source.
	empty := document.Source{Type: "file", Name: "empty.txt"}
	if err := c.ReplaceSources(ctx(t), []store.SourceUpdate{{Source: empty, Hash: "he"}}); err != nil {
		t.Fatal(err)
	}
	states, _ = c.Sources(ctx(t))
	if len(states) != 3 || states[2].Source != empty || states[2].Chunks != 0 || states[2].Hash != "he" {
		t.Errorf("empty source: %+v", states)
	}
	if err := c.ReplaceSources(ctx(t), []store.SourceUpdate{{Source: empty}}); err != nil {
		t.Fatal(err)
	}
	// An update without a hash deletes the source and its state.
	if err := c.ReplaceSources(ctx(t), []store.SourceUpdate{{Source: b}}); err != nil {
		t.Fatal(err)
	}
	states, _ = c.Sources(ctx(t))
	if len(states) != 1 || states[0].Source != a || states[0].Hash != "ha2" {
		t.Errorf("sources after removing b: %+v", states)
	}
	if n, _ := c.Count(ctx(t), nil); n != 1 {
		t.Errorf("count %d", n)
	}
	// A bad document rejects the whole update.
	bad := sourceDocs(b, 2, "v2")
	bad[1].Metadata["year"] = "not a number"
	err = c.ReplaceSources(ctx(t), []store.SourceUpdate{{Source: a, Hash: "ha3", Docs: sourceDocs(a, 2, "v3")}, {Source: b, Hash: "hb2", Docs: bad}})
	if !errors.Is(err, store.ErrInvalidRequest) {
		t.Errorf("invalid update: %v", err)
	}
	if states, _ = c.Sources(ctx(t)); len(states) != 1 || states[0].Hash != "ha2" {
		t.Errorf("a rejected update changed sources: %+v", states)
	}
	// Documents must belong to their update's source.
	wrong := sourceDocs(b, 1, "v2")
	if err := c.ReplaceSources(ctx(t), []store.SourceUpdate{{Source: a, Hash: "x", Docs: wrong}}); !errors.Is(err, store.ErrInvalidRequest) {
		t.Errorf("foreign document accepted: %v", err)
	}
	// Deleting chunks by filter forgets the source's hash, so a later
	// sync rewrites it instead of skipping it.
	if _, err := c.Delete(ctx(t), filter.Eq("sourceName", "a.md")); err != nil {
		t.Fatal(err)
	}
	if states, _ = c.Sources(ctx(t)); len(states) != 0 {
		t.Errorf("hash kept for a source whose chunks were deleted: %+v", states)
	}
}

func testJobs(t *testing.T, s *store.Store) {
	js, err := s.Jobs()
	if errors.Is(err, store.ErrUnsupported) {
		t.Skip("store does not record jobs")
	}
	if _, err := js.GetJob(ctx(t), "nope"); !errors.Is(err, store.ErrJobNotFound) {
		t.Errorf("unknown job: %v", err)
	}
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range 3 {
		j := store.Job{ID: fmt.Sprintf("job-%d", i), Kind: "ingest", Collection: "docs", Params: []byte(`{"roots":["a"]}`),
			State: store.JobRunning, Started: base.Add(time.Duration(i) * time.Minute), Updated: base}
		if err := js.PutJob(ctx(t), j); err != nil {
			t.Fatal(err)
		}
	}
	j, _ := js.GetJob(ctx(t), "job-1")
	j.State, j.Files, j.Finished = store.JobDone, 7, base.Add(time.Hour)
	if err := js.PutJob(ctx(t), j); err != nil {
		t.Fatal(err)
	}
	got, err := js.GetJob(ctx(t), "job-1")
	params, _ := document.DecodeJSONValue(got.Params)
	if err != nil || got.State != store.JobDone || got.Files != 7 || !got.Finished.Equal(base.Add(time.Hour)) || fmt.Sprint(params) != "map[roots:[a]]" {
		t.Errorf("updated job: %+v %v", got, err)
	}
	list, err := js.ListJobs(ctx(t), 2)
	if err != nil || len(list) != 2 || list[0].ID != "job-2" || list[1].ID != "job-1" {
		t.Errorf("newest jobs: %+v %v", list, err)
	}
}

func testScan(t *testing.T, s *store.Store) {
	c := mustCollection(t, s, "docs", 2)
	var want []string
	var docs []*document.Document
	for i := range 25 {
		id := fmt.Sprintf("id-%02d", (i*7)%25) // inserted out of order
		docs = append(docs, doc(id, id, []float32{1, float32(i)}, map[string]any{"year": int64(i)}))
		want = append(want, fmt.Sprintf("id-%02d", i))
	}
	mustUpsert(t, c, docs...)
	var got []string
	pages := 0
	err := c.Scan(ctx(t), 10, func(page []*document.Document) error {
		pages++
		for _, d := range page {
			got = append(got, d.ID)
			if d.Embedding == nil || d.Metadata["tenant"] != "acme" {
				t.Errorf("document %s incomplete: %+v", d.ID, d)
			}
		}
		return nil
	})
	if errors.Is(err, store.ErrUnsupported) {
		t.Skip("store cannot list documents")
	}
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) || pages != 3 {
		t.Errorf("scan in %d pages: %v", pages, got)
	}
}

// testSearchVectors: with SearchRequest.Vectors every hit carries its
// stored embedding; without it a store may leave the embedding out, but the
// hits, their order and their scores are the same.
func testSearchVectors(t *testing.T, s *store.Store) {
	c := mustCollection(t, s, "docs", 2)
	docs := keywordCorpus()
	mustUpsert(t, c, docs...)
	stored := map[string][]float32{}
	for _, d := range docs {
		stored[d.ID] = d.Embedding
	}
	for _, mode := range []store.Mode{store.ModeVector, store.ModeKeyword, store.ModeHybrid} {
		req := store.SearchRequest{Mode: mode, Query: "shipping days refunds", Embedding: []float32{1, 0.5}, TopK: 5}
		lean, err := c.Search(ctx(t), req)
		if errors.Is(err, store.ErrUnsupported) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		req.Vectors = true
		full, err := c.Search(ctx(t), req)
		if err != nil {
			t.Fatal(err)
		}
		if len(lean) != len(full) {
			t.Fatalf("%s: %d hits without vectors, %d with", mode, len(lean), len(full))
		}
		for i := range full {
			if lean[i].Doc.ID != full[i].Doc.ID || lean[i].Doc.Score != full[i].Doc.Score {
				t.Errorf("%s hit %d: %s %g without vectors, %s %g with", mode, i, lean[i].Doc.ID, lean[i].Doc.Score, full[i].Doc.ID, full[i].Doc.Score)
			}
			if !slices.Equal(full[i].Doc.Embedding, stored[full[i].Doc.ID]) {
				t.Errorf("%s hit %s: embedding %v, stored %v", mode, full[i].Doc.ID, full[i].Doc.Embedding, stored[full[i].Doc.ID])
			}
			if lean[i].Doc.Content != full[i].Doc.Content || lean[i].Doc.SourceName != full[i].Doc.SourceName {
				t.Errorf("%s hit %s: fields differ without vectors", mode, full[i].Doc.ID)
			}
		}
	}
}

// testDescribe: the store answers and names its engine.
func testDescribe(t *testing.T, s *store.Store) {
	e, err := s.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if e.Name == "" {
		t.Errorf("engine %+v has no name", e)
	}
}
