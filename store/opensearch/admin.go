package opensearch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/store"
)

// analyzers are OpenSearch's built-in language analyzers for the
// languages Quarry's own analyzer knows (the engine analyses text here,
// not Quarry).
func analyzer(language string) (string, error) {
	if _, err := bm25.NewAnalyzer(bm25.AnalyzerConfig{Language: language}); err != nil {
		return "", fmt.Errorf("%w: %v", store.ErrInvalidRequest, err)
	}
	lang := strings.ToLower(strings.TrimSpace(language))
	switch lang {
	case "", "en":
		return "english", nil
	case "fr":
		return "french", nil
	case "de":
		return "german", nil
	case "es":
		return "spanish", nil
	case "it":
		return "italian", nil
	case "nl":
		return "dutch", nil
	case "pt":
		return "portuguese", nil
	}
	return lang, nil
}

// keywordField is an exact-match field.
func keywordField() map[string]any { return map[string]any{"type": "keyword"} }

// storedField is a field kept in _source only.
func storedField() map[string]any {
	return map[string]any{"type": "keyword", "index": false, "doc_values": false}
}

// CreateCollection implements store.Admin: the chunk, sources and
// settings indices, the chunk index's mapping naming every field Quarry
// writes.
func (b *Backend) CreateCollection(ctx context.Context, cfg store.CollectionConfig) error {
	an, err := analyzer(cfg.Language)
	if err != nil {
		return err
	}
	props := map[string]any{
		fieldID:        keywordField(),
		fieldContent:   map[string]any{"type": "text", "analyzer": an},
		fieldEmbedding: b.vectorField(cfg.Model.Dimension),
		keySType:       keywordField(),
		keySName:       keywordField(),
		fieldStored:    storedField(),
	}
	if cfg.Schema != nil {
		for _, f := range cfg.Schema.Fields {
			if f.Filterable {
				props[f.Name] = map[string]any{"type": fieldType(f.Type)}
			}
		}
	}
	name := b.index(cfg.Name)
	body := map[string]any{
		"mappings": map[string]any{"dynamic": "strict", "_meta": map[string]any{"quarry": meta{Version: metaVersion, Config: cfg}},
			"properties": props},
	}
	if !b.elastic() {
		// OpenSearch builds k-NN structures only in indices that ask.
		body["settings"] = map[string]any{"index": map[string]any{"knn": true}}
	}
	err = b.call(ctx, http.MethodPut, "/"+esc(name), body, nil)
	if ae, ok := err.(*apiError); ok && ae.Type == "resource_already_exists_exception" {
		return store.ErrCollectionExists
	}
	if err != nil {
		return err
	}
	// Each side index has a unique "key" that scans sort by.
	side := func(fields ...string) map[string]any {
		props := map[string]any{"key": keywordField()}
		for _, f := range fields {
			props[f] = keywordField()
		}
		props["value"] = storedField()
		return map[string]any{"mappings": map[string]any{"dynamic": "strict", "properties": props}}
	}
	for _, ix := range []struct {
		name string
		body map[string]any
	}{{sourcesIndex(name), side(keySType, keySName)}, {settingsIndex(name), side()}} {
		err := b.call(ctx, http.MethodPut, "/"+esc(ix.name), ix.body, nil)
		if ae, ok := err.(*apiError); ok && ae.Type == "resource_already_exists_exception" {
			err = nil // left by a drop that did not finish
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// vectorField is the embedding's mapping: HNSW with the same graph
// parameters on both engines, cosine, over float vectors. Elasticsearch
// would otherwise quantize vectors of 384 dimensions and more (int8 or
// BBQ), and its scores would stop being the cosine Quarry reports.
func (b *Backend) vectorField(dim int) map[string]any {
	if b.elastic() {
		return map[string]any{"type": "dense_vector", "dims": dim, "index": true, "similarity": "cosine",
			"index_options": map[string]any{"type": "hnsw", "m": 16, "ef_construction": 128}}
	}
	return map[string]any{"type": "knn_vector", "dimension": dim,
		"method": map[string]any{"name": "hnsw", "engine": "lucene", "space_type": "cosinesimil",
			"parameters": map[string]any{"m": 16, "ef_construction": 128}}}
}

// fieldType is the mapping type of a filterable field.
func fieldType(t document.FieldType) string {
	switch t.Elem() {
	case document.TypeInteger:
		return "long"
	case document.TypeFloat:
		return "double"
	case document.TypeBoolean:
		return "boolean"
	}
	return "keyword"
}

// mappingAnswer is GET /INDEX/_mapping's answer.
type mappingAnswer map[string]struct {
	Mappings struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	} `json:"mappings"`
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
	var ans mappingAnswer
	err := b.call(ctx, http.MethodGet, "/"+esc(b.index(name))+"/_mapping", nil, &ans)
	if notFound(err) {
		b.forget(name)
		return nil, store.ErrCollectionNotFound
	}
	if err != nil {
		return nil, err
	}
	c, err = b.fromMapping(b.index(name), ans[b.index(name)].Mappings.Meta)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.colls[name] = c
	b.mu.Unlock()
	return c, nil
}

// errNotQuarry is an index under the prefix that Quarry did not make.
var errNotQuarry = fmt.Errorf("%w: the index was not made by Quarry", store.ErrCollectionNotFound)

func (b *Backend) fromMapping(index string, m map[string]json.RawMessage) (*collection, error) {
	raw, ok := m["quarry"]
	if !ok {
		return nil, errNotQuarry
	}
	var mt meta
	if err := json.Unmarshal(raw, &mt); err != nil {
		return nil, fmt.Errorf("opensearch: index %s: Quarry's metadata: %w", index, err)
	}
	if mt.Version != metaVersion {
		return nil, fmt.Errorf("opensearch: index %s has layout %d; this Quarry reads %d", index, mt.Version, metaVersion)
	}
	return &collection{cfg: mt.Config, index: index, dialect: b.flavor}, nil
}

func (b *Backend) forget(name string) {
	b.mu.Lock()
	delete(b.colls, name)
	b.mu.Unlock()
}

// ListCollections implements store.Admin: the chunk indices under the
// prefix that Quarry made, in one mapping request.
func (b *Backend) ListCollections(ctx context.Context) ([]store.CollectionConfig, error) {
	var ans mappingAnswer
	if err := b.call(ctx, http.MethodGet, "/"+esc(b.prefix+"_*")+"/_mapping", nil, &ans); err != nil && !notFound(err) {
		return nil, err
	}
	var names []string
	for index := range ans {
		if !strings.Contains(index, ".") {
			names = append(names, index)
		}
	}
	sort.Strings(names)
	var out []store.CollectionConfig
	for _, index := range names {
		c, err := b.fromMapping(index, ans[index].Mappings.Meta)
		if err == errNotQuarry {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, c.cfg)
	}
	return out, nil
}

// DropCollection implements store.Admin: the three indices in one
// request.
func (b *Backend) DropCollection(ctx context.Context, name string) error {
	c, err := b.coll(ctx, name)
	if err != nil {
		return err
	}
	b.forget(name)
	names := strings.Join([]string{c.index, sourcesIndex(c.index), settingsIndex(c.index)}, ",")
	err = b.call(ctx, http.MethodDelete, "/"+esc(names)+"?ignore_unavailable=true", nil, nil)
	if notFound(err) {
		return store.ErrCollectionNotFound
	}
	return err
}

// request calls an endpoint of a collection's index (rest starts with
// "/"); a missing index forgets the collection and is ErrCollectionNotFound.
func (b *Backend) request(ctx context.Context, c *collection, method, rest string, body, out any) error {
	err := b.call(ctx, method, "/"+esc(c.index)+rest, body, out)
	if notFound(err) {
		b.forget(c.cfg.Name)
		return fmt.Errorf("%w: %v", store.ErrCollectionNotFound, err)
	}
	return err
}
