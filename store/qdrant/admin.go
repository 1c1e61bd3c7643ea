package qdrant

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/store"
)

// metaVersion is the layout of a collection this package writes.
const metaVersion = 1

// CreateCollection implements store.Admin: the collection with its three
// vectors, then a payload index on every key a filter may name.
func (b *Backend) CreateCollection(ctx context.Context, cfg store.CollectionConfig) error {
	if _, err := bm25.NewAnalyzer(bm25.AnalyzerConfig{Language: cfg.Language}); err != nil {
		return fmt.Errorf("%w: %v", store.ErrInvalidRequest, err)
	}
	name := b.qname(cfg.Name)
	body := map[string]any{
		"vectors": map[string]any{
			denseVector: map[string]any{"size": cfg.Model.Dimension, "distance": "Cosine"},
			rawVector:   map[string]any{"size": cfg.Model.Dimension, "distance": "Dot", "hnsw_config": map[string]any{"m": 0}, "on_disk": true},
		},
		"sparse_vectors": map[string]any{sparseVector: map[string]any{"modifier": "idf"}},
		"metadata":       map[string]any{"quarry": meta{Version: metaVersion, Config: cfg, BM25: defaultBM25()}},
	}
	err := b.call(ctx, http.MethodPut, "/collections/"+url.PathEscape(name), body, nil, false)
	if ae, ok := err.(*apiError); ok && (ae.Status == http.StatusConflict || strings.Contains(ae.Msg, "already exists")) {
		return store.ErrCollectionExists
	}
	if err != nil {
		return err
	}
	indexes := [][2]string{{keyKind, "keyword"}, {keyID, "keyword"}, {keySource, "keyword"}, {keySType, "keyword"}, {keySName, "keyword"}}
	if cfg.Schema != nil {
		for _, f := range cfg.Schema.Fields {
			if f.Filterable {
				indexes = append(indexes, [2]string{f.Name, indexType(f.Type)})
			}
		}
	}
	for _, ix := range indexes {
		err := b.call(ctx, http.MethodPut, "/collections/"+url.PathEscape(name)+"/index?wait=true",
			map[string]any{"field_name": ix[0], "field_schema": ix[1]}, nil, false)
		if err != nil {
			return fmt.Errorf("payload index on %s: %w", ix[0], err)
		}
	}
	return nil
}

// indexType is the payload index of a filterable field.
func indexType(t document.FieldType) string {
	switch t.Elem() {
	case document.TypeInteger:
		return "integer"
	case document.TypeFloat:
		return "float"
	case document.TypeBoolean:
		return "bool"
	}
	return "keyword"
}

// collectionInfo is the part of GET /collections/NAME Quarry reads.
type collectionInfo struct {
	Config struct {
		Metadata map[string]json.RawMessage `json:"metadata"`
	} `json:"config"`
}

// LoadCollection implements store.Admin.
func (b *Backend) LoadCollection(ctx context.Context, name string) (store.CollectionConfig, error) {
	c, err := b.load(ctx, name, true)
	if err != nil {
		return store.CollectionConfig{}, err
	}
	return c.cfg, nil
}

// coll returns a collection from the cache, reading it on first use. A
// collection dropped by another process answers "not found" at its next
// request, which forgets it (see forget).
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
	var info collectionInfo
	err := b.call(ctx, http.MethodGet, "/collections/"+url.PathEscape(b.qname(name)), nil, &info, false)
	if notFound(err) {
		b.forget(name)
		return nil, store.ErrCollectionNotFound
	}
	if err != nil {
		return nil, err
	}
	raw, ok := info.Config.Metadata["quarry"]
	if !ok {
		return nil, fmt.Errorf("%w: Qdrant collection %s was not made by Quarry", store.ErrCollectionNotFound, b.qname(name))
	}
	var m meta
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("qdrant: collection %s: Quarry's metadata: %w", b.qname(name), err)
	}
	if m.Version != metaVersion {
		return nil, fmt.Errorf("qdrant: collection %s has layout %d; this Quarry reads %d", b.qname(name), m.Version, metaVersion)
	}
	c = &collection{cfg: m.Config, name: b.qname(name), bm25: m.BM25}
	b.mu.Lock()
	defer b.mu.Unlock()
	if c.analyzer = b.anz[c.cfg.Language]; c.analyzer == nil {
		if c.analyzer, err = bm25.NewAnalyzer(bm25.AnalyzerConfig{Language: c.cfg.Language}); err != nil {
			return nil, fmt.Errorf("qdrant: collection %s: %w", c.name, err)
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

// ListCollections implements store.Admin: the Qdrant collections under
// the prefix that Quarry made.
func (b *Backend) ListCollections(ctx context.Context) ([]store.CollectionConfig, error) {
	var res struct {
		Collections []struct {
			Name string `json:"name"`
		} `json:"collections"`
	}
	if err := b.call(ctx, http.MethodGet, "/collections", nil, &res, false); err != nil {
		return nil, err
	}
	var out []store.CollectionConfig
	for _, qc := range res.Collections {
		name, ok := strings.CutPrefix(qc.Name, b.prefix+"_")
		if !ok {
			continue
		}
		c, err := b.load(ctx, name, true)
		if err == store.ErrCollectionNotFound || (err != nil && strings.Contains(err.Error(), "not made by Quarry")) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, c.cfg)
	}
	return out, nil
}

// DropCollection implements store.Admin.
func (b *Backend) DropCollection(ctx context.Context, name string) error {
	if _, err := b.load(ctx, name, true); err != nil {
		return err
	}
	b.forget(name)
	err := b.call(ctx, http.MethodDelete, "/collections/"+url.PathEscape(b.qname(name)), nil, nil, false)
	if notFound(err) {
		return store.ErrCollectionNotFound
	}
	return err
}

// request sends a request about a collection; a "not found" answer means
// the collection is gone.
func (b *Backend) request(ctx context.Context, c *collection, method, rest string, body, out any) error {
	err := b.call(ctx, method, b.colPath(c, rest), body, out, false)
	if notFound(err) {
		b.forget(c.cfg.Name)
		return fmt.Errorf("%w: %v", store.ErrCollectionNotFound, err)
	}
	return err
}
