package typesense

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/store"
)

// metaVersion is the layout of a collection this package writes.
const metaVersion = 1

// meta is what the Typesense collection's metadata holds under "quarry".
type meta struct {
	Version int                    `json:"version"`
	Config  store.CollectionConfig `json:"config"`
}

// field is a field of a Typesense collection schema.
type field struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Optional bool   `json:"optional,omitempty"`
	Index    *bool  `json:"index,omitempty"`
	NumDim   int    `json:"num_dim,omitempty"`
	VecDist  string `json:"vec_dist,omitempty"`
}

var no = new(bool)

// metaField is the field a filterable schema field is kept in.
func metaField(name string) string { return "m_" + name }

// fieldType is a filterable field's Typesense type.
func fieldType(t document.FieldType) string {
	switch t {
	case document.TypeInteger:
		return "int64"
	case document.TypeFloat:
		return "float"
	case document.TypeBoolean:
		return "bool"
	case document.TypeStringList:
		return "string[]"
	}
	return "string"
}

// CreateCollection implements store.Admin.
func (b *Backend) CreateCollection(ctx context.Context, cfg store.CollectionConfig) error {
	if _, err := bm25.NewAnalyzer(bm25.AnalyzerConfig{Language: cfg.Language}); err != nil {
		return fmt.Errorf("%w: %v", store.ErrInvalidRequest, err)
	}
	fields := []field{
		{Name: fKind, Type: "string"},
		{Name: fID, Type: "string", Optional: true},
		{Name: fDoc, Type: "string", Optional: true, Index: no},
		{Name: fTerms, Type: "string", Optional: true},
		{Name: fSType, Type: "string", Optional: true},
		{Name: fSName, Type: "string", Optional: true},
		{Name: fSrc, Type: "string", Optional: true},
		{Name: fHas, Type: "string[]", Optional: true},
		{Name: fState, Type: "string", Optional: true, Index: no},
		{Name: fKey, Type: "string", Optional: true, Index: no},
		{Name: fValue, Type: "string", Optional: true, Index: no},
		{Name: fVector, Type: "float[]", Optional: true, NumDim: cfg.Model.Dimension, VecDist: "cosine"},
	}
	if cfg.Schema != nil {
		for _, f := range cfg.Schema.Fields {
			if f.Filterable {
				fields = append(fields, field{Name: metaField(f.Name), Type: fieldType(f.Type), Optional: true})
			}
		}
	}
	body := map[string]any{"name": b.tname(cfg.Name), "fields": fields,
		"metadata": map[string]any{"quarry": meta{Version: metaVersion, Config: cfg}}}
	err := b.callJSON(ctx, http.MethodPost, "/collections", nil, body, nil)
	if isStatus(err, http.StatusConflict) {
		return store.ErrCollectionExists
	}
	return err
}

// collectionInfo is the part of a collection's description Quarry reads.
type collectionInfo struct {
	Name     string                     `json:"name"`
	Metadata map[string]json.RawMessage `json:"metadata"`
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
	var info collectionInfo
	err := b.callJSON(ctx, http.MethodGet, colPath(b.tname(name), ""), nil, nil, &info)
	if isStatus(err, http.StatusNotFound) {
		b.forget(name)
		return nil, store.ErrCollectionNotFound
	}
	if err != nil {
		return nil, err
	}
	return b.remember(name, info)
}

// remember reads Quarry's configuration from a collection's description.
func (b *Backend) remember(name string, info collectionInfo) (*collection, error) {
	raw, ok := info.Metadata["quarry"]
	if !ok {
		return nil, fmt.Errorf("%w: Typesense collection %s was not made by Quarry", store.ErrCollectionNotFound, b.tname(name))
	}
	var m meta
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("typesense: collection %s: Quarry's metadata: %w", b.tname(name), err)
	}
	if m.Version != metaVersion {
		return nil, fmt.Errorf("typesense: collection %s has layout %d; this Quarry reads %d", b.tname(name), m.Version, metaVersion)
	}
	c := &collection{cfg: m.Config, name: b.tname(name)}
	b.mu.Lock()
	defer b.mu.Unlock()
	if c.analyzer = b.anz[c.cfg.Language]; c.analyzer == nil {
		var err error
		if c.analyzer, err = bm25.NewAnalyzer(bm25.AnalyzerConfig{Language: c.cfg.Language}); err != nil {
			return nil, fmt.Errorf("typesense: collection %s: %w", c.name, err)
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

// ListCollections implements store.Admin: the Typesense collections under
// the prefix that Quarry made.
func (b *Backend) ListCollections(ctx context.Context) ([]store.CollectionConfig, error) {
	var infos []collectionInfo
	if err := b.callJSON(ctx, http.MethodGet, "/collections", nil, nil, &infos); err != nil {
		return nil, err
	}
	var out []store.CollectionConfig
	for _, info := range infos {
		name, ok := strings.CutPrefix(info.Name, b.prefix+"_")
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
	return out, nil
}

// DropCollection implements store.Admin.
func (b *Backend) DropCollection(ctx context.Context, name string) error {
	if _, err := b.load(ctx, name, true); err != nil {
		return err
	}
	b.forget(name)
	err := b.callJSON(ctx, http.MethodDelete, colPath(b.tname(name), ""), nil, nil, nil)
	if isStatus(err, http.StatusNotFound) {
		return store.ErrCollectionNotFound
	}
	return err
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
