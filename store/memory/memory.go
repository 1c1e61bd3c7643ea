// Package memory is the reference store: every document in a map, exact
// cosine search over all of them, exact BM25 over all of them, and filters
// evaluated by filter.Matcher. It is the yardstick other stores are tested
// against and a good store for tests and tiny data. Importing it registers
// the "memory:" URL scheme; each Open returns a new, empty store.
package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/store"
)

func init() { store.Register("memory", driver{}) }

type driver struct{}

func (driver) Open(_ context.Context, url string) (store.Backend, error) {
	if url != "memory:" && url != "memory://" {
		return nil, fmt.Errorf("memory store takes no location, got %q (use \"memory:\")", url)
	}
	return New(), nil
}

// BM25 parameters of the reference keyword search (Quarry's defaults).
const (
	bm25K1 = 0.9
	bm25B  = 0.4
)

// Backend is an in-memory store.Backend. It is safe for concurrent use:
// writers take the lock exclusively, so readers never see half a batch.
type Backend struct {
	mu      sync.RWMutex // guards colls, jobs, threads and closed
	colls   map[string]*collection
	jobs    map[string]store.Job
	threads map[string][]store.Turn
	closed  bool
}

type collection struct {
	cfg     store.CollectionConfig
	an      *bm25.Analyzer
	docs    map[string]*entry
	sources map[document.Source]store.SourceState
	hier    hierData // the knowledge hierarchy (hierarchy.go)
	// settings are the collection's store.SettingsKeeper values.
	settings map[string]json.RawMessage
}

// entry is a stored document with its analysed terms for keyword search.
type entry struct {
	doc   *document.Document
	terms map[string]int
	len   int
}

// New returns an empty in-memory backend.
func New() *Backend { return &Backend{colls: map[string]*collection{}, jobs: map[string]store.Job{}} }

// PutJob implements store.JobStore.
func (b *Backend) PutJob(_ context.Context, j store.Job) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return store.ErrClosed
	}
	b.jobs[j.ID] = j
	return nil
}

// GetJob implements store.JobStore.
func (b *Backend) GetJob(_ context.Context, id string) (store.Job, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	j, ok := b.jobs[id]
	if !ok {
		return store.Job{}, store.ErrJobNotFound
	}
	return j, nil
}

// ListJobs implements store.JobStore.
func (b *Backend) ListJobs(_ context.Context, limit int) ([]store.Job, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]store.Job, 0, len(b.jobs))
	for _, j := range b.jobs {
		out = append(out, j)
	}
	sort.Slice(out, func(i, k int) bool {
		if !out[i].Started.Equal(out[k].Started) {
			return out[i].Started.After(out[k].Started)
		}
		return out[i].ID > out[k].ID
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Describe implements store.Describer: the engine is this process.
func (b *Backend) Describe(context.Context) (store.Engine, error) {
	return store.Engine{Name: "memory"}, nil
}

// Dialect implements store.Backend: filters are evaluated in process, so no
// raw fragment is accepted.
func (b *Backend) Dialect() string { return "" }

func (b *Backend) get(name string) (*collection, error) {
	if b.closed {
		return nil, store.ErrClosed
	}
	c, ok := b.colls[name]
	if !ok {
		return nil, store.ErrCollectionNotFound
	}
	return c, nil
}

// CreateCollection implements store.Backend.
func (b *Backend) CreateCollection(_ context.Context, cfg store.CollectionConfig) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return store.ErrClosed
	}
	if _, ok := b.colls[cfg.Name]; ok {
		return store.ErrCollectionExists
	}
	an, err := bm25.NewAnalyzer(bm25.AnalyzerConfig{Language: cfg.Language})
	if err != nil {
		return err
	}
	b.colls[cfg.Name] = &collection{cfg: cfg, an: an, docs: map[string]*entry{}, sources: map[document.Source]store.SourceState{}}
	return nil
}

// LoadCollection implements store.Backend.
func (b *Backend) LoadCollection(_ context.Context, name string) (store.CollectionConfig, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	c, err := b.get(name)
	if err != nil {
		return store.CollectionConfig{}, err
	}
	return c.cfg, nil
}

// ListCollections implements store.Backend.
func (b *Backend) ListCollections(context.Context) ([]store.CollectionConfig, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return nil, store.ErrClosed
	}
	out := make([]store.CollectionConfig, 0, len(b.colls))
	for _, c := range b.colls {
		out = append(out, c.cfg)
	}
	return out, nil
}

// DropCollection implements store.Backend.
func (b *Backend) DropCollection(_ context.Context, name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, err := b.get(name); err != nil {
		return err
	}
	delete(b.colls, name)
	return nil
}

// Upsert implements store.Backend. Documents are copied in, so callers may
// reuse them.
func (b *Backend) Upsert(ctx context.Context, coll string, docs []*document.Document) error {
	entries, err := entries(docs)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	c, err := b.get(coll)
	if err != nil {
		return err
	}
	for _, e := range entries {
		c.index(e)
		c.docs[e.doc.ID] = e
	}
	return nil
}

// index analyses an entry's title and content the way the embedded store's
// keyword index does: one field, the title first.
func (c *collection) index(e *entry) {
	text := e.doc.Content
	if t, ok := e.doc.Metadata["title"].(string); ok && t != "" {
		text = t + "\n" + text
	}
	e.terms = map[string]int{}
	terms, pairs := c.an.AnalyzeDocument(text, store.Code(e.doc))
	for _, t := range terms {
		e.terms[t]++
		e.len++
	}
	for _, p := range pairs { // counted, not towards the length
		e.terms[p]++
	}
}

// entries copies documents in, with canonical metadata and analysed terms.
func entries(docs []*document.Document) ([]*entry, error) {
	entries := make([]*entry, len(docs))
	for i, d := range docs {
		c := d.Clone()
		c.ClearScore()
		// Keep canonical values (int64, float64, []any, map[string]any), as
		// stores that serialise metadata return them.
		md, err := document.Canonical(c.Metadata)
		if err != nil {
			return nil, fmt.Errorf("document %s: %w", c.ID, err)
		}
		c.Metadata, _ = md.(map[string]any)
		if c.Metadata == nil {
			c.Metadata = map[string]any{}
		}
		entries[i] = &entry{doc: c}
	}
	return entries, nil
}

// Get implements store.Backend.
func (b *Backend) Get(_ context.Context, coll string, ids []string) ([]*document.Document, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	c, err := b.get(coll)
	if err != nil {
		return nil, err
	}
	out := make([]*document.Document, 0, len(ids))
	for _, id := range ids {
		if e, ok := c.docs[id]; ok {
			out = append(out, e.doc.Clone())
		}
	}
	return out, nil
}

// Delete implements store.Backend.
func (b *Backend) Delete(_ context.Context, coll string, f filter.Expr) (int, error) {
	m, err := filter.NewMatcher(f)
	if err != nil {
		return 0, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	c, err := b.get(coll)
	if err != nil {
		return 0, err
	}
	n := 0
	for id, e := range c.docs {
		if m.MatchDocument(e.doc) {
			// A source that loses chunks no longer matches its hash.
			delete(c.sources, document.Source{Type: e.doc.SourceType, Name: e.doc.SourceName})
			delete(c.docs, id)
			n++
		}
	}
	return n, nil
}

// Sources implements store.SourceSyncer.
func (b *Backend) Sources(_ context.Context, coll string) ([]store.SourceState, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	c, err := b.get(coll)
	if err != nil {
		return nil, err
	}
	out := make([]store.SourceState, 0, len(c.sources))
	for _, s := range c.sources {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Source.Type != out[j].Source.Type {
			return out[i].Source.Type < out[j].Source.Type
		}
		return out[i].Source.Name < out[j].Source.Name
	})
	return out, nil
}

// ReplaceSources implements store.SourceSyncer under one lock, so readers
// see every source before or after.
func (b *Backend) ReplaceSources(ctx context.Context, coll string, updates []store.SourceUpdate) error {
	prepared := make([][]*entry, len(updates))
	for i, u := range updates {
		es, err := entries(u.Docs)
		if err != nil {
			return err
		}
		prepared[i] = es
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	c, err := b.get(coll)
	if err != nil {
		return err
	}
	for i, u := range updates {
		for id, e := range c.docs {
			if e.doc.SourceType == u.Source.Type && e.doc.SourceName == u.Source.Name {
				delete(c.docs, id)
			}
		}
		for _, e := range prepared[i] {
			c.index(e)
			c.docs[e.doc.ID] = e
		}
		if u.Hash == "" {
			delete(c.sources, u.Source)
		} else {
			c.sources[u.Source] = store.SourceState{Source: u.Source, Hash: u.Hash, Chunks: len(u.Docs), Origin: u.Origin}
		}
	}
	return nil
}

// Count implements store.Backend.
func (b *Backend) Count(_ context.Context, coll string, f filter.Expr) (int, error) {
	m, err := filter.NewMatcher(f)
	if err != nil {
		return 0, err
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	c, err := b.get(coll)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range c.docs {
		if m.MatchDocument(e.doc) {
			n++
		}
	}
	return n, nil
}

// SearchVector implements store.Backend with an exact scan: every matching
// document is scored by cosine similarity.
func (b *Backend) SearchVector(ctx context.Context, coll string, vec []float32, f filter.Expr, k int) ([]*document.Document, error) {
	m, err := filter.NewMatcher(f)
	if err != nil {
		return nil, err
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	c, err := b.get(coll)
	if err != nil {
		return nil, err
	}
	top := newTopK(k)
	for _, e := range c.docs {
		if !m.MatchDocument(e.doc) {
			continue
		}
		s, err := document.Cosine(vec, e.doc.Embedding)
		if err != nil {
			return nil, fmt.Errorf("document %s: %w", e.doc.ID, err)
		}
		top.push(e.doc, s)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return top.result(), nil
}

// SearchKeyword implements store.Backend with exact BM25 (k1 0.9, b 0.4)
// over the matching documents, title and content as one field, analysed
// by the collection's language; collection statistics count every document.
// Documents sharing no term with the query are not returned.
func (b *Backend) SearchKeyword(ctx context.Context, coll string, query string, f filter.Expr, k int) ([]*document.Document, error) {
	m, err := filter.NewMatcher(f)
	if err != nil {
		return nil, err
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	c, err := b.get(coll)
	if err != nil {
		return nil, err
	}
	qterms := map[string]int{}
	words, pairs := c.an.AnalyzeQuery(query)
	for _, t := range words {
		qterms[t]++ // a repeated query term counts as often as it appears
	}
	for _, p := range pairs {
		qterms[p]++
	}
	// A fixed summation order keeps scores, and so ties, repeatable.
	terms := slices.Sorted(maps.Keys(qterms))
	n := float64(len(c.docs))
	var total int
	df := make(map[string]int, len(qterms))
	for _, e := range c.docs {
		total += e.len
		for t := range qterms {
			if e.terms[t] > 0 {
				df[t]++
			}
		}
	}
	if n == 0 {
		return nil, nil
	}
	avgdl := float64(total) / n
	top := newTopK(k)
	for _, e := range c.docs {
		var s float64
		for _, t := range terms {
			qtf := qterms[t]
			tf := float64(e.terms[t])
			if tf == 0 {
				continue
			}
			idf := math.Log(1 + (n-float64(df[t])+0.5)/(float64(df[t])+0.5))
			s += float64(qtf) * idf * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*float64(e.len)/avgdl))
		}
		if s > 0 && m.MatchDocument(e.doc) {
			top.push(e.doc, s)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return top.result(), nil
}

// Close implements store.Backend.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	b.colls = nil
	return nil
}

// topK keeps the k best documents by (score desc, id asc).
type topK struct {
	k    int
	docs []*document.Document
}

func newTopK(k int) *topK { return &topK{k: k} }

func (t *topK) push(d *document.Document, score float64) {
	if len(t.docs) == t.k {
		worst := t.docs[len(t.docs)-1]
		if score < worst.Score || (score == worst.Score && d.ID > worst.ID) {
			return
		}
	}
	c := d.Clone()
	c.SetScore(score)
	// Insertion keeps the slice sorted; k is small next to the scan.
	i := len(t.docs)
	t.docs = append(t.docs, c)
	for i > 0 && store.Less(c, t.docs[i-1]) {
		t.docs[i] = t.docs[i-1]
		i--
	}
	t.docs[i] = c
	if len(t.docs) > t.k {
		t.docs = t.docs[:t.k]
	}
}

func (t *topK) result() []*document.Document { return t.docs }

// Scan implements store.Scanner.
func (b *Backend) Scan(_ context.Context, coll string, after string, limit int) ([]*document.Document, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	c, err := b.get(coll)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(c.docs))
	for id := range c.docs {
		if id > after {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	if len(ids) > limit {
		ids = ids[:limit]
	}
	out := make([]*document.Document, len(ids))
	for i, id := range ids {
		out[i] = c.docs[id].doc.Clone()
	}
	return out, nil
}

// Setting implements store.SettingsKeeper.
func (b *Backend) Setting(_ context.Context, coll, key string) (json.RawMessage, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	c, err := b.get(coll)
	if err != nil {
		return nil, err
	}
	return slices.Clone(c.settings[key]), nil
}

// Settings implements store.SettingsKeeper.
func (b *Backend) Settings(_ context.Context, coll string) (map[string]json.RawMessage, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	c, err := b.get(coll)
	if err != nil {
		return nil, err
	}
	out := make(map[string]json.RawMessage, len(c.settings))
	for k, v := range c.settings {
		out[k] = slices.Clone(v)
	}
	return out, nil
}

// PutSetting implements store.SettingsKeeper.
func (b *Backend) PutSetting(_ context.Context, coll, key string, value json.RawMessage) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, err := b.get(coll)
	if err != nil {
		return err
	}
	if value == nil {
		delete(c.settings, key)
		return nil
	}
	if c.settings == nil {
		c.settings = map[string]json.RawMessage{}
	}
	c.settings[key] = slices.Clone(value)
	return nil
}
