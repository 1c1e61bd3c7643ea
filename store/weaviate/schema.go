package weaviate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/google/uuid"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/store"
)

// namespace makes object ids: UUIDv5 of a name under it, so the same
// collection, chunk and transaction always give the same object id.
var namespace = uuid.MustParse("5f0c3b1e-9a55-4c37-8a0e-6f1d2b7a9c41")

func objectID(parts ...string) string {
	n := ""
	for _, p := range parts {
		n += p + "\x00"
	}
	return uuid.NewSHA1(namespace, []byte(n)).String()
}

// The classes Quarry keeps beside the collections' own.
func (b *Backend) collectionsClass() string { return b.opts.Prefix + "Collections" }
func (b *Backend) txnsClass() string        { return b.opts.Prefix + "Txns" }
func (b *Backend) sourcesClass() string     { return b.opts.Prefix + "Sources" }

func textProp(name, tokenization string, filterable, searchable bool) map[string]any {
	p := map[string]any{"name": name, "dataType": []string{"text"}, "indexFilterable": filterable, "indexSearchable": searchable}
	if filterable || searchable {
		p["tokenization"] = tokenization
	}
	return p
}

func typedProp(name, dataType string) map[string]any {
	p := map[string]any{"name": name, "dataType": []string{dataType}, "indexFilterable": true}
	switch dataType {
	case "text", "text[]":
		p["tokenization"] = "field"
		p["indexSearchable"] = false
	case "int", "number":
		p["indexRangeFilters"] = true
	}
	return p
}

// classDef is a class definition: no vectorizer (Quarry sends vectors),
// cosine distance, BM25 with the embedded store's parameters and without
// Weaviate's stop words (Quarry's analyzer has removed them), null state
// indexed so "field is present" filters run.
func (b *Backend) classDef(name string, props []map[string]any, vectors bool) map[string]any {
	def := map[string]any{
		"class":      name,
		"vectorizer": "none",
		"invertedIndexConfig": map[string]any{
			"bm25":           map[string]any{"k1": bm25.DefaultK1, "b": bm25.DefaultB},
			"stopwords":      map[string]any{"preset": "none"},
			"indexNullState": true,
		},
		// A replica that was down catches up by itself (asynchronous
		// replication), and a delete it missed wins over its stale copy.
		"replicationConfig": map[string]any{"factor": b.opts.Replicas, "asyncEnabled": b.opts.Replicas > 1, "deletionStrategy": "TimeBasedResolution"},
		"properties":        props,
	}
	if vectors {
		def["vectorIndexType"] = "hnsw"
		def["vectorIndexConfig"] = map[string]any{"distance": "cosine"}
	} else {
		def["vectorIndexType"] = "flat"
	}
	if b.opts.Shards > 0 {
		def["shardingConfig"] = map[string]any{"desiredCount": b.opts.Shards}
	}
	return def
}

// createClass creates a class; one that already exists is left as it is
// (another process created it, or a crash left it behind).
func (b *Backend) createClass(ctx context.Context, def map[string]any) error {
	name := def["class"].(string)
	err := b.c.do(ctx, http.MethodGet, "/schema/"+url.PathEscape(name), nil, nil, nil)
	if err == nil {
		return nil
	}
	if !isStatus(err, http.StatusNotFound) {
		return err
	}
	err = b.c.do(ctx, http.MethodPost, "/schema", nil, def, nil)
	if isStatus(err, http.StatusUnprocessableEntity) {
		if b.c.do(ctx, http.MethodGet, "/schema/"+url.PathEscape(name), nil, nil, nil) == nil {
			return nil // lost a race with another creator
		}
	}
	if err != nil {
		return fmt.Errorf("weaviate: create class %s: %w", name, err)
	}
	return nil
}

func (b *Backend) ensureMetaClasses(ctx context.Context) error {
	defs := []map[string]any{
		b.classDef(b.collectionsClass(), []map[string]any{
			textProp("name", "field", true, false),
			textProp("config", "", false, false),
		}, false),
		b.classDef(b.txnsClass(), []map[string]any{
			textProp("coll", "field", true, false),
			textProp("txn", "field", true, false),
			textProp("state", "field", true, false),
			textProp("body", "", false, false),
		}, false),
		b.classDef(b.sourcesClass(), []map[string]any{
			textProp("coll", "field", true, false),
			typedProp("q_source", "text"),
			typedProp("q_txn", "text"),
			typedProp("q_seq", "int"),
			textProp("q_state", "", false, false),
		}, false),
		b.settingsClassDef(),
	}
	for _, d := range defs {
		if err := b.createClass(ctx, d); err != nil {
			return err
		}
	}
	if err := b.ensureHierClass(ctx); err != nil {
		return err
	}
	return b.ensureThreadClasses(ctx)
}

// weaviateType is the property type of a schema field.
func weaviateType(t document.FieldType) string {
	return map[document.FieldType]string{
		document.TypeString: "text", document.TypeInteger: "int", document.TypeFloat: "number", document.TypeBoolean: "boolean",
		document.TypeStringList: "text[]", document.TypeIntegerList: "int[]", document.TypeFloatList: "number[]", document.TypeBooleanList: "boolean[]",
	}[t]
}

// CreateCollection implements store.Admin.
func (b *Backend) CreateCollection(ctx context.Context, cfg store.CollectionConfig) error {
	if _, err := b.LoadCollection(ctx, cfg.Name); err == nil {
		return fmt.Errorf("%w: %q", store.ErrCollectionExists, cfg.Name)
	} else if !errors.Is(err, store.ErrCollectionNotFound) {
		return err
	}
	props := []map[string]any{
		typedProp("q_chunk", "text"),
		typedProp("q_txn", "text"),
		typedProp("q_seq", "int"),
		typedProp("q_source", "text"),
		typedProp("q_stype", "text"),
		typedProp("q_sname", "text"),
		textProp("q_terms", "whitespace", false, true),
		textProp("q_doc", "", false, false),
	}
	if cfg.Schema != nil {
		for _, f := range cfg.Schema.Fields {
			if f.Filterable {
				props = append(props, typedProp(fieldProp(f.Name), weaviateType(f.Type)))
			}
		}
	}
	if err := b.createClass(ctx, b.classDef(b.className(cfg.Name), props, true)); err != nil {
		return err
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("weaviate: encode collection %q: %w", cfg.Name, err)
	}
	// The record comes last: a collection exists once its class does.
	rec := object{Class: b.collectionsClass(), ID: objectID(b.opts.Prefix, "collection", cfg.Name),
		Properties: map[string]any{"name": cfg.Name, "config": string(raw)}}
	if err := b.putObjects(ctx, []object{rec}); err != nil {
		return err
	}
	_, err = b.remember(cfg)
	return err
}

// LoadCollection implements store.Admin.
func (b *Backend) LoadCollection(ctx context.Context, name string) (store.CollectionConfig, error) {
	var obj struct {
		Properties struct {
			Config string `json:"config"`
		} `json:"properties"`
	}
	path := "/objects/" + url.PathEscape(b.collectionsClass()) + "/" + objectID(b.opts.Prefix, "collection", name)
	err := b.c.do(ctx, http.MethodGet, path, b.consistency(), nil, &obj)
	if isStatus(err, http.StatusNotFound) {
		return store.CollectionConfig{}, notFound(name)
	}
	if err != nil {
		return store.CollectionConfig{}, err
	}
	return decodeConfig(name, obj.Properties.Config)
}

func decodeConfig(name, raw string) (store.CollectionConfig, error) {
	var cfg store.CollectionConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		return cfg, fmt.Errorf("weaviate: collection %q: stored configuration: %w", name, err)
	}
	return cfg, nil
}

// ListCollections implements store.Admin.
func (b *Backend) ListCollections(ctx context.Context) ([]store.CollectionConfig, error) {
	var data struct {
		Get map[string][]struct {
			Name   string `json:"name"`
			Config string `json:"config"`
		} `json:"Get"`
	}
	q := fmt.Sprintf(`{Get{%s(limit:10000%s){name config}}}`, b.collectionsClass(), b.gqlConsistency())
	if err := b.c.graphql(ctx, q, &data); err != nil {
		return nil, fmt.Errorf("weaviate: list collections: %w", err)
	}
	var out []store.CollectionConfig
	for _, o := range data.Get[b.collectionsClass()] {
		cfg, err := decodeConfig(o.Name, o.Config)
		if err != nil {
			return nil, err
		}
		out = append(out, cfg)
	}
	return out, nil
}

// DropCollection implements store.Admin: the record goes first, so the
// collection is gone for readers at once, then its class and its
// transaction and source records.
func (b *Backend) DropCollection(ctx context.Context, name string) error {
	if _, err := b.LoadCollection(ctx, name); err != nil {
		return err
	}
	b.forget(name)
	path := "/objects/" + url.PathEscape(b.collectionsClass()) + "/" + objectID(b.opts.Prefix, "collection", name)
	if err := b.c.do(ctx, http.MethodDelete, path, b.consistency(), nil, nil); err != nil && !isStatus(err, http.StatusNotFound) {
		return err
	}
	if err := b.c.do(ctx, http.MethodDelete, "/schema/"+url.PathEscape(b.className(name)), nil, nil, nil); err != nil && !isStatus(err, http.StatusNotFound) {
		return err
	}
	for _, d := range []struct{ class, coll string }{
		{b.txnsClass(), name}, {b.sourcesClass(), name}, {b.hierClass(), name}, {b.txnsClass(), hierColl(name)},
		{b.settingsClass(), name},
	} {
		if _, err := b.deleteWhere(ctx, d.class, where{"path": []any{"coll"}, "operator": "Equal", "valueText": d.coll}); err != nil {
			return err
		}
	}
	return nil
}

// gqlConsistency is the consistency argument of a GraphQL Get; Weaviate
// offers it only on replicated classes.
func (b *Backend) gqlConsistency() string {
	if b.opts.Replicas < 2 {
		return ""
	}
	return ",consistencyLevel:" + b.opts.Consistency
}
