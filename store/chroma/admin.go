package chroma

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

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

// meta is what the Chroma collection's metadata holds, as JSON, under
// "quarry".
type meta struct {
	Version int                    `json:"version"`
	Config  store.CollectionConfig `json:"config"`
	BM25    bm25Params             `json:"bm25"`
}

// collection is a collection as Quarry keeps it in the Chroma collection's
// metadata.
type collection struct {
	cfg      store.CollectionConfig
	name     string // the Chroma collection
	id       string // its UUID, which record requests name
	bm25     bm25Params
	analyzer *bm25.Analyzer
}

// path is the URL of one of the collection's operations ("/query").
func (b *Backend) path(c *collection, op string) string {
	return b.base + "/collections/" + url.PathEscape(c.id) + op
}

// collectionInfo is the part of a Chroma collection Quarry reads.
type collectionInfo struct {
	ID       string         `json:"id"`
	Name     string         `json:"name"`
	Metadata map[string]any `json:"metadata"`
}

// vectorSchema is a collection schema whose embedding index uses cosine
// distance and the HNSW settings of the embedded store's index (M 16,
// ef_construction 200, a search list of 256 where Chroma's default of 100
// loses three points of nDCG@10 on SciFact); the rest is Chroma's default
// (every metadata key indexed for filters, the document in the full-text
// index).
func vectorSchema() map[string]any {
	hnsw := map[string]any{"max_neighbors": 16, "ef_construction": 200, "ef_search": 256}
	return map[string]any{"defaults": map[string]any{}, "keys": map[string]any{
		"#embedding": map[string]any{"float_list": map[string]any{
			"vector_index": map[string]any{"enabled": true, "config": map[string]any{"space": "cosine", "hnsw": hnsw}}}},
	}}
}

// CreateCollection implements store.Admin.
func (b *Backend) CreateCollection(ctx context.Context, cfg store.CollectionConfig) error {
	if _, err := bm25.NewAnalyzer(bm25.AnalyzerConfig{Language: cfg.Language}); err != nil {
		return fmt.Errorf("%w: %v", store.ErrInvalidRequest, err)
	}
	m, err := json.Marshal(meta{Version: metaVersion, Config: cfg, BM25: defaultBM25()})
	if err != nil {
		return fmt.Errorf("chroma: collection %s: %w", cfg.Name, err)
	}
	body := map[string]any{"name": b.cname(cfg.Name), "metadata": map[string]any{"quarry": string(m)}, "schema": vectorSchema()}
	var info collectionInfo
	err = b.callJSON(ctx, http.MethodPost, b.base+"/collections", body, &info)
	if isStatus(err, http.StatusConflict) {
		return store.ErrCollectionExists
	}
	if err != nil {
		return err
	}
	_, err = b.remember(cfg.Name, info)
	return err
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
	if name == "" {
		return nil, store.ErrCollectionNotFound
	}
	b.mu.Lock()
	c := b.colls[name]
	b.mu.Unlock()
	if c != nil && !fresh {
		return c, nil
	}
	var info collectionInfo
	err := b.callJSON(ctx, http.MethodGet, b.base+"/collections/"+url.PathEscape(b.cname(name)), nil, &info)
	if isStatus(err, http.StatusNotFound) {
		b.forget(name)
		return nil, store.ErrCollectionNotFound
	}
	if err != nil {
		return nil, err
	}
	return b.remember(name, info)
}

// remember reads Quarry's configuration from a collection's metadata.
func (b *Backend) remember(name string, info collectionInfo) (*collection, error) {
	raw, ok := info.Metadata["quarry"].(string)
	if !ok {
		return nil, fmt.Errorf("%w: Chroma collection %s was not made by Quarry", store.ErrCollectionNotFound, info.Name)
	}
	var m meta
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, fmt.Errorf("chroma: collection %s: Quarry's metadata: %w", info.Name, err)
	}
	if m.Version != metaVersion {
		return nil, fmt.Errorf("chroma: collection %s has layout %d; this Quarry reads %d", info.Name, m.Version, metaVersion)
	}
	c := &collection{cfg: m.Config, name: info.Name, id: info.ID, bm25: m.BM25}
	b.mu.Lock()
	defer b.mu.Unlock()
	if c.analyzer = b.anz[c.cfg.Language]; c.analyzer == nil {
		var err error
		if c.analyzer, err = bm25.NewAnalyzer(bm25.AnalyzerConfig{Language: c.cfg.Language}); err != nil {
			return nil, fmt.Errorf("chroma: collection %s: %w", c.name, err)
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

// ListCollections implements store.Admin: the Chroma collections under
// the prefix that Quarry made.
func (b *Backend) ListCollections(ctx context.Context) ([]store.CollectionConfig, error) {
	var out []store.CollectionConfig
	const page = 100
	for offset := 0; ; offset += page {
		var infos []collectionInfo
		u := b.base + "/collections?limit=" + strconv.Itoa(page) + "&offset=" + strconv.Itoa(offset)
		if err := b.callJSON(ctx, http.MethodGet, u, nil, &infos); err != nil {
			return nil, err
		}
		for _, info := range infos {
			name, ok := b.qname(info.Name)
			if !ok {
				continue
			}
			if _, mine := info.Metadata["quarry"]; !mine {
				continue
			}
			c, err := b.remember(name, info)
			if err != nil {
				return nil, err
			}
			out = append(out, c.cfg)
		}
		if len(infos) < page {
			return out, nil
		}
	}
}

// DropCollection implements store.Admin: the collection, then its source
// states and settings.
func (b *Backend) DropCollection(ctx context.Context, name string) error {
	if _, err := b.load(ctx, name, true); err != nil {
		return err
	}
	b.forget(name)
	err := b.callJSON(ctx, http.MethodDelete, b.base+"/collections/"+url.PathEscape(b.cname(name)), nil, nil)
	if isStatus(err, http.StatusNotFound) {
		return store.ErrCollectionNotFound
	}
	if err != nil {
		return err
	}
	return b.deleteSide(ctx, stateSidecar, map[string]any{kColl: name})
}

// collErr turns a "not found" answer about a collection into
// ErrCollectionNotFound, forgetting the collection.
func (b *Backend) collErr(c *collection, err error) error {
	if isStatus(err, http.StatusNotFound) {
		b.forget(c.cfg.Name)
		return fmt.Errorf("%w: %v", store.ErrCollectionNotFound, err)
	}
	return err
}

// Sidecar collections, beside the knowledge-base collections: their names
// have "-" after the prefix, so they can never be a Quarry collection's.
const (
	stateSidecar   = "state"
	threadsSidecar = "threads"
)

// sidecar returns the id of a sidecar collection, creating it on first
// use; another process creating it first is no error. Its records carry a
// one-dimensional zero embedding, since Chroma wants one on every record.
func (b *Backend) sidecar(ctx context.Context, kind string) (string, error) {
	name := b.prefix + "-" + kind
	b.mu.Lock()
	id := b.sidecars[name]
	b.mu.Unlock()
	if id != "" {
		return id, nil
	}
	var info collectionInfo
	body := map[string]any{"name": name, "get_or_create": true, "metadata": map[string]any{"quarry_" + kind: metaVersion}}
	if err := b.callJSON(ctx, http.MethodPost, b.base+"/collections", body, &info); err != nil {
		return "", fmt.Errorf("chroma: %s collection: %w", kind, err)
	}
	b.mu.Lock()
	b.sidecars[name] = info.ID
	b.mu.Unlock()
	return info.ID, nil
}

// sideCall runs one record operation ("/get") on a sidecar; a sidecar
// dropped by hand is made again at the next call.
func (b *Backend) sideCall(ctx context.Context, kind, op string, in, out any) error {
	id, err := b.sidecar(ctx, kind)
	if err != nil {
		return err
	}
	err = b.callJSON(ctx, http.MethodPost, b.base+"/collections/"+url.PathEscape(id)+op, in, out)
	if isStatus(err, http.StatusNotFound) {
		b.mu.Lock()
		delete(b.sidecars, b.prefix+"-"+kind)
		b.mu.Unlock()
	}
	return err
}

// deleteSide deletes a sidecar's records matching where.
func (b *Backend) deleteSide(ctx context.Context, kind string, where map[string]any) error {
	return b.sideCall(ctx, kind, "/delete", map[string]any{"where": where}, nil)
}
