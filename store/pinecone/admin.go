package pinecone

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/internal/sparsebm25"
)

// metaVersion is the layout of a collection this package writes.
const metaVersion = 1

// bm25Params fix a collection's BM25 at its creation, as the Qdrant
// store's do (sparsebm25).
type bm25Params = sparsebm25.Params

func defaultBM25() bm25Params { return sparsebm25.Default() }

// meta is what a collection's record in the meta index holds, as JSON.
type meta struct {
	Version int                    `json:"version"`
	Config  store.CollectionConfig `json:"config"`
	BM25    bm25Params             `json:"bm25"`
}

// collection is a collection as Quarry keeps it.
type collection struct {
	cfg      store.CollectionConfig
	bm25     bm25Params
	analyzer *bm25.Analyzer
	dense    string // the dense index's data-plane URL
	sparse   string // the sparse index's
}

// ns is the collection's namespace in its dense and sparse indexes.
func (c *collection) ns() string { return c.cfg.Name }

// indexModel is the part of the control plane's IndexModel Quarry reads.
type indexModel struct {
	Name   string `json:"name"`
	Host   string `json:"host"`
	Status struct {
		Ready bool   `json:"ready"`
		State string `json:"state"`
	} `json:"status"`
}

func (b *Backend) listIndexes(ctx context.Context) ([]indexModel, error) {
	var res struct {
		Indexes []indexModel `json:"indexes"`
	}
	if err := b.call(ctx, http.MethodGet, b.control+"/indexes", nil, &res); err != nil {
		return nil, err
	}
	return res.Indexes, nil
}

// indexSpec is what an index Quarry creates is: dense of a dimension under
// cosine similarity, or sparse (dim 0) under dot product.
type indexSpec struct {
	name string
	dim  int
}

// host returns an index's data-plane URL, creating the index when create
// is set and waiting for it to be ready; "" when it does not exist and
// create is not set.
func (b *Backend) host(ctx context.Context, ix indexSpec, create bool) (string, error) {
	b.mu.Lock()
	h := b.hosts[ix.name]
	b.mu.Unlock()
	if h != "" {
		return h, nil
	}
	created := false
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, 2*time.Second) {
		var m indexModel
		err := b.call(ctx, http.MethodGet, b.control+"/indexes/"+url.PathEscape(ix.name), nil, &m)
		switch {
		case isStatus(err, http.StatusNotFound) && !create:
			return "", nil
		case isStatus(err, http.StatusNotFound) && !created:
			if err := b.createIndex(ctx, ix); err != nil {
				return "", err
			}
			created = true
			continue
		case err != nil:
			return "", fmt.Errorf("pinecone: index %s: %w", ix.name, err)
		case m.Status.Ready && m.Host != "":
			h = b.scheme + "://" + m.Host
			b.mu.Lock()
			b.hosts[ix.name] = h
			b.mu.Unlock()
			return h, nil
		case m.Status.State == "InitializationFailed" || m.Status.State == "Terminating":
			return "", fmt.Errorf("pinecone: index %s is %s", ix.name, m.Status.State)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("pinecone: waiting for index %s: %w", ix.name, ctx.Err())
		case <-time.After(delay):
		}
	}
}

// createIndex creates a serverless index; another process creating it
// first is no error.
func (b *Backend) createIndex(ctx context.Context, ix indexSpec) error {
	body := map[string]any{
		"name":                ix.name,
		"spec":                map[string]any{"serverless": map[string]any{"cloud": b.cloud, "region": b.region}},
		"deletion_protection": "disabled",
		"tags":                map[string]string{"created-by": "quarry"},
	}
	if ix.dim == 0 {
		body["vector_type"], body["metric"] = "sparse", "dotproduct"
	} else {
		body["vector_type"], body["metric"], body["dimension"] = "dense", "cosine", ix.dim
	}
	err := b.call(ctx, http.MethodPost, b.control+"/indexes", body, nil)
	if isStatus(err, http.StatusConflict) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pinecone: create index %s: %w", ix.name, err)
	}
	return nil
}

// metaHost is the meta index's URL, creating the index when create is
// set; "" when it does not exist.
func (b *Backend) metaHost(ctx context.Context, create bool) (string, error) {
	return b.host(ctx, indexSpec{name: b.metaIndex(), dim: 1}, create)
}

// one is the vector of every record in the meta index, which holds
// metadata only.
var one = []float32{1}

// schemaFields are the metadata fields a chunk namespace indexes for
// filters: the source fields and the filterable schema fields.
func schemaFields(s *document.Schema) map[string]any {
	fields := map[string]any{}
	for _, k := range []string{kSType, kSName, kSrc} {
		fields[k] = map[string]any{"filterable": true}
	}
	if s != nil {
		for _, f := range s.Fields {
			if f.Filterable {
				fields[metaKey(f.Name)] = map[string]any{"filterable": true}
			}
		}
	}
	return fields
}

// CreateCollection implements store.Admin: the collection's namespaces in
// its dense and sparse indexes, each with its metadata schema, then its
// record in the meta index, which makes it exist.
func (b *Backend) CreateCollection(ctx context.Context, cfg store.CollectionConfig) error {
	if _, err := bm25.NewAnalyzer(bm25.AnalyzerConfig{Language: cfg.Language}); err != nil {
		return fmt.Errorf("%w: %v", store.ErrInvalidRequest, err)
	}
	if cfg.Model.Dimension < 1 {
		return fmt.Errorf("%w: a Pinecone collection needs its embedding dimension", store.ErrInvalidRequest)
	}
	m, err := json.Marshal(meta{Version: metaVersion, Config: cfg, BM25: defaultBM25()})
	if err != nil {
		return fmt.Errorf("pinecone: collection %s: %w", cfg.Name, err)
	}
	mh, err := b.metaHost(ctx, true)
	if err != nil {
		return err
	}
	if got, err := b.fetch(ctx, mh, nsCollections, []string{cfg.Name}); err != nil {
		return err
	} else if len(got) > 0 {
		return store.ErrCollectionExists
	}
	c := &collection{cfg: cfg}
	if err := b.attach(ctx, c, true); err != nil {
		return err
	}
	schema := map[string]any{"fields": schemaFields(cfg.Schema)}
	for _, h := range []string{c.dense, c.sparse} {
		err := b.call(ctx, http.MethodPost, h+"/namespaces", map[string]any{"name": c.ns(), "schema": schema}, nil)
		if err != nil && !isStatus(err, http.StatusConflict) {
			return fmt.Errorf("pinecone: collection %s: namespace: %w", cfg.Name, err)
		}
	}
	return b.upsert(ctx, mh, nsCollections, []vector{{ID: cfg.Name, Values: one, Metadata: map[string]any{kMeta: string(m)}}})
}

// attach finds (or creates) the collection's dense and sparse indexes.
func (b *Backend) attach(ctx context.Context, c *collection, create bool) error {
	var err error
	if c.dense, err = b.host(ctx, indexSpec{name: b.denseIndex(c.cfg.Model.Dimension), dim: c.cfg.Model.Dimension}, create); err != nil {
		return err
	}
	if c.sparse, err = b.host(ctx, indexSpec{name: b.sparseIndex()}, create); err != nil {
		return err
	}
	if c.dense == "" || c.sparse == "" {
		return fmt.Errorf("%w: collection %s: its Pinecone indexes are gone", store.ErrCollectionNotFound, c.cfg.Name)
	}
	return nil
}

// LoadCollection implements store.Admin.
func (b *Backend) LoadCollection(ctx context.Context, name string) (store.CollectionConfig, error) {
	c, err := b.load(ctx, name, true)
	if err != nil {
		return store.CollectionConfig{}, err
	}
	return c.cfg, nil
}

// coll returns a collection from the cache, reading it on first use.
func (b *Backend) coll(ctx context.Context, name string) (*collection, error) {
	return b.load(ctx, name, false)
}

func (b *Backend) load(ctx context.Context, name string, fresh bool) (*collection, error) {
	b.mu.Lock()
	c := b.colls[name]
	b.mu.Unlock()
	if c != nil && !fresh {
		return c, nil
	}
	mh, err := b.metaHost(ctx, false)
	if err != nil {
		return nil, err
	}
	if mh == "" {
		return nil, store.ErrCollectionNotFound
	}
	got, err := b.fetch(ctx, mh, nsCollections, []string{name})
	if err != nil {
		return nil, err
	}
	v, ok := got[name]
	if !ok {
		b.forget(name)
		return nil, store.ErrCollectionNotFound
	}
	return b.remember(ctx, name, v)
}

// remember reads a collection's meta record and caches it.
func (b *Backend) remember(ctx context.Context, name string, v vector) (*collection, error) {
	raw, _ := v.Metadata[kMeta].(string)
	var m meta
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, fmt.Errorf("pinecone: collection %s: Quarry's metadata: %w", name, err)
	}
	if m.Version != metaVersion {
		return nil, fmt.Errorf("pinecone: collection %s has layout %d; this Quarry reads %d", name, m.Version, metaVersion)
	}
	c := &collection{cfg: m.Config, bm25: m.BM25}
	if err := b.attach(ctx, c, false); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var err error
	if c.analyzer = b.anz[c.cfg.Language]; c.analyzer == nil {
		if c.analyzer, err = bm25.NewAnalyzer(bm25.AnalyzerConfig{Language: c.cfg.Language}); err != nil {
			return nil, fmt.Errorf("pinecone: collection %s: %w", name, err)
		}
		b.anz[c.cfg.Language] = c.analyzer
	}
	b.colls[name] = c
	return c, nil
}

func (b *Backend) forget(name string) {
	b.mu.Lock()
	delete(b.colls, name)
	b.mu.Unlock()
}

// ListCollections implements store.Admin: the meta index's collection
// records, in name order.
func (b *Backend) ListCollections(ctx context.Context) ([]store.CollectionConfig, error) {
	mh, err := b.metaHost(ctx, false)
	if err != nil || mh == "" {
		return nil, err
	}
	var out []store.CollectionConfig
	err = b.fetchWhere(ctx, mh, nsCollections, nil, func(v vector) error {
		c, err := b.remember(ctx, v.ID, v)
		if err != nil {
			return err
		}
		out = append(out, c.cfg)
		return nil
	})
	slices.SortFunc(out, func(x, y store.CollectionConfig) int { return strings.Compare(x.Name, y.Name) })
	return out, err
}

// DropCollection implements store.Admin: its record first, so a drop cut
// short leaves no collection, then its namespaces and sidecar records.
func (b *Backend) DropCollection(ctx context.Context, name string) error {
	c, err := b.load(ctx, name, true)
	if err != nil {
		return err
	}
	mh, err := b.metaHost(ctx, false)
	if err != nil {
		return err
	}
	if err := b.deleteIDs(ctx, mh, nsCollections, []string{name}); err != nil {
		return err
	}
	b.forget(name)
	defer b.wrote(name)
	for _, h := range []string{c.dense, c.sparse} {
		if err := b.dropNamespace(ctx, h, c.ns()); err != nil {
			return err
		}
	}
	return b.dropNamespace(ctx, mh, sideNS(name))
}

// dropNamespace deletes a namespace and its records; one never written
// is no error.
func (b *Backend) dropNamespace(ctx context.Context, host, ns string) error {
	err := b.call(ctx, http.MethodDelete, host+"/namespaces/"+url.PathEscape(ns), nil, nil)
	if err != nil && !isStatus(err, http.StatusNotFound) {
		return fmt.Errorf("pinecone: delete namespace %s: %w", ns, err)
	}
	return nil
}
