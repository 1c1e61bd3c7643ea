package meilisearch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/store"
)

// metaVersion is the layout of an index this package writes.
const metaVersion = 1

// meta is what the index's meta document holds, as JSON, in q_meta.
type meta struct {
	Version int                    `json:"version"`
	Config  store.CollectionConfig `json:"config"`
}

// collection is a collection's configuration as Quarry keeps it.
type collection struct {
	cfg      store.CollectionConfig
	uid      string // the Meilisearch index
	analyzer *bm25.Analyzer
}

// metaField is the field a filterable schema field is kept in.
func metaField(name string) string { return "m_" + name }

// metaID is the id of an index's meta document.
var metaID = docID(kindMeta, "")

// maxTotalHits is the pagination limit Quarry sets on its indexes: a
// search may ask for MaxTopK results and a few more for ties, where
// Meilisearch's default stops at 1,000.
const maxTotalHits = store.MaxTopK + 100

// CreateCollection implements store.Admin: the index, its settings, then
// the meta document that makes it Quarry's. An index whose settings or
// meta document could not be written is deleted again.
func (b *Backend) CreateCollection(ctx context.Context, cfg store.CollectionConfig) error {
	if _, err := bm25.NewAnalyzer(bm25.AnalyzerConfig{Language: cfg.Language}); err != nil {
		return fmt.Errorf("%w: %v", store.ErrInvalidRequest, err)
	}
	m, err := json.Marshal(meta{Version: metaVersion, Config: cfg})
	if err != nil {
		return fmt.Errorf("meilisearch: collection %s: %w", cfg.Name, err)
	}
	uid := b.uid(cfg.Name)
	_, err = b.write(ctx, http.MethodPost, "/indexes", map[string]any{"uid": uid, "primaryKey": "id"})
	if isCode(err, "index_already_exists") {
		return store.ErrCollectionExists
	}
	if err != nil {
		return err
	}
	filterable := []string{fKind, fID, fSType, fSName, fSrc, fHas}
	if cfg.Schema != nil {
		for _, f := range cfg.Schema.Fields {
			if f.Filterable {
				filterable = append(filterable, metaField(f.Name))
			}
		}
	}
	settings := map[string]any{
		"searchableAttributes": []string{fTerms},
		"filterableAttributes": filterable,
		"typoTolerance":        map[string]any{"enabled": false},
		"prefixSearch":         "disabled",
		"pagination":           map[string]any{"maxTotalHits": maxTotalHits},
		"embedders": map[string]any{embedder: map[string]any{
			"source": "userProvided", "dimensions": max(cfg.Model.Dimension, 1)}},
	}
	if _, err = b.write(ctx, http.MethodPatch, idxPath(uid, "/settings"), settings); err == nil {
		_, err = b.write(ctx, http.MethodPost, idxPath(uid, "/documents"), []map[string]any{{
			"id": metaID, fKind: kindMeta, fMeta: string(m), "_vectors": map[string]any{embedder: nil}}})
	}
	if err != nil {
		_, _ = b.write(context.WithoutCancel(ctx), http.MethodDelete, idxPath(uid, ""), nil)
		return fmt.Errorf("meilisearch: collection %s: %w", cfg.Name, err)
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

// coll returns a collection from the cache, reading it on first use. A
// collection dropped by another process answers "not found" at its next
// request, which forgets it.
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
	var doc struct {
		Meta string `json:"q_meta"`
	}
	uid := b.uid(name)
	err := b.call(ctx, http.MethodGet, idxPath(uid, "/documents/"+metaID), nil, &doc)
	switch {
	case isCode(err, "index_not_found"):
		b.forget(name)
		return nil, store.ErrCollectionNotFound
	case isCode(err, "document_not_found"):
		b.forget(name)
		return nil, fmt.Errorf("%w: Meilisearch index %s was not made by Quarry", store.ErrCollectionNotFound, uid)
	case err != nil:
		return nil, err
	}
	var m meta
	if err := json.Unmarshal([]byte(doc.Meta), &m); err != nil {
		return nil, fmt.Errorf("meilisearch: index %s: Quarry's metadata: %w", uid, err)
	}
	if m.Version != metaVersion {
		return nil, fmt.Errorf("meilisearch: index %s has layout %d; this Quarry reads %d", uid, m.Version, metaVersion)
	}
	c = &collection{cfg: m.Config, uid: uid}
	b.mu.Lock()
	defer b.mu.Unlock()
	if c.analyzer = b.anz[c.cfg.Language]; c.analyzer == nil {
		if c.analyzer, err = bm25.NewAnalyzer(bm25.AnalyzerConfig{Language: c.cfg.Language}); err != nil {
			return nil, fmt.Errorf("meilisearch: index %s: %w", uid, err)
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

// ListCollections implements store.Admin: the indexes under the prefix
// that Quarry made.
func (b *Backend) ListCollections(ctx context.Context) ([]store.CollectionConfig, error) {
	var out []store.CollectionConfig
	const page = 100
	for offset := 0; ; offset += page {
		var res struct {
			Results []struct {
				UID string `json:"uid"`
			} `json:"results"`
			Total int `json:"total"`
		}
		if err := b.call(ctx, http.MethodGet, "/indexes?limit="+strconv.Itoa(page)+"&offset="+strconv.Itoa(offset), nil, &res); err != nil {
			return nil, err
		}
		for _, ix := range res.Results {
			name, ok := strings.CutPrefix(ix.UID, b.prefix+"_")
			if !ok {
				continue
			}
			c, err := b.load(ctx, name, true)
			if err != nil {
				continue // not Quarry's, or dropped since it was listed
			}
			out = append(out, c.cfg)
		}
		if offset+page >= res.Total || len(res.Results) == 0 {
			return out, nil
		}
	}
}

// DropCollection implements store.Admin.
func (b *Backend) DropCollection(ctx context.Context, name string) error {
	if _, err := b.load(ctx, name, true); err != nil {
		return err
	}
	b.forget(name)
	_, err := b.write(ctx, http.MethodDelete, idxPath(b.uid(name), ""), nil)
	if isCode(err, "index_not_found") {
		return store.ErrCollectionNotFound
	}
	return err
}

// collErr turns a "not found" answer about an index into
// ErrCollectionNotFound, forgetting the collection.
func (b *Backend) collErr(c *collection, err error) error {
	if isCode(err, "index_not_found") {
		b.forget(c.cfg.Name)
		return fmt.Errorf("%w: %v", store.ErrCollectionNotFound, err)
	}
	return err
}
