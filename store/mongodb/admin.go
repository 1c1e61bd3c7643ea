package mongodb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/store"
)

// metaVersion is the layout of a collection this package writes.
const metaVersion = 1

// meta is what a collection's configuration document holds, as JSON.
type meta struct {
	Version int                    `json:"version"`
	Config  store.CollectionConfig `json:"config"`
}

// collection is a collection as Quarry keeps it.
type collection struct {
	cfg      store.CollectionConfig
	analyzer *bm25.Analyzer
	coll     *mongo.Collection
}

// metaField is the field a filterable schema field is kept in.
func metaField(name string) string { return "m_" + name }

// searchType is the Atlas Search field type a filterable field is
// indexed as: token for strings (equals and in need it), number, boolean.
func searchType(t document.FieldType) string {
	switch t {
	case document.TypeInteger, document.TypeFloat:
		return "number"
	case document.TypeBoolean:
		return "boolean"
	}
	return "token"
}

// indexModels are the collection's two search indexes.
func indexModels(cfg store.CollectionConfig) []mongo.SearchIndexModel {
	vfields := bson.A{
		bson.D{{Key: "type", Value: "vector"}, {Key: "path", Value: fEmb}, {Key: "numDimensions", Value: cfg.Model.Dimension}, {Key: "similarity", Value: "cosine"}},
		bson.D{{Key: "type", Value: "filter"}, {Key: "path", Value: fSType}},
		bson.D{{Key: "type", Value: "filter"}, {Key: "path", Value: fSName}},
	}
	tfields := bson.D{
		{Key: fTerms, Value: bson.D{{Key: "type", Value: "string"}, {Key: "analyzer", Value: "lucene.whitespace"}, {Key: "searchAnalyzer", Value: "lucene.whitespace"}}},
		{Key: fSType, Value: bson.D{{Key: "type", Value: "token"}}},
		{Key: fSName, Value: bson.D{{Key: "type", Value: "token"}}},
	}
	if cfg.Schema != nil {
		for _, f := range cfg.Schema.Fields {
			if f.Filterable {
				vfields = append(vfields, bson.D{{Key: "type", Value: "filter"}, {Key: "path", Value: metaField(f.Name)}})
				tfields = append(tfields, bson.E{Key: metaField(f.Name), Value: bson.D{{Key: "type", Value: searchType(f.Type)}}})
			}
		}
	}
	return []mongo.SearchIndexModel{
		{Definition: bson.D{{Key: "fields", Value: vfields}}, Options: options.SearchIndexes().SetName(vectorIndex).SetType("vectorSearch")},
		{Definition: bson.D{{Key: "mappings", Value: bson.D{{Key: "dynamic", Value: false}, {Key: "fields", Value: tfields}}}},
			Options: options.SearchIndexes().SetName(textIndex).SetType("search")},
	}
}

// CreateCollection implements store.Admin: the MongoDB collection, its
// index on the source and its two search indexes (waited for until
// queryable), then the configuration document that makes it exist.
func (b *Backend) CreateCollection(ctx context.Context, cfg store.CollectionConfig) error {
	if _, err := bm25.NewAnalyzer(bm25.AnalyzerConfig{Language: cfg.Language}); err != nil {
		return fmt.Errorf("%w: %v", store.ErrInvalidRequest, err)
	}
	if cfg.Model.Dimension < 1 {
		return fmt.Errorf("%w: a MongoDB collection needs its embedding dimension", store.ErrInvalidRequest)
	}
	m, err := json.Marshal(meta{Version: metaVersion, Config: cfg})
	if err != nil {
		return fmt.Errorf("mongodb: collection %s: %w", cfg.Name, err)
	}
	n, err := b.configs().CountDocuments(ctx, bson.D{{Key: "_id", Value: cfg.Name}})
	if err != nil {
		return fmt.Errorf("mongodb: collection %s: %w", cfg.Name, err)
	}
	if n > 0 {
		return store.ErrCollectionExists
	}
	coll := b.chunks(cfg.Name)
	if err := b.db.CreateCollection(ctx, coll.Name()); err != nil && !isCode(err, 48) { // NamespaceExists: left by a creation cut short
		return fmt.Errorf("mongodb: collection %s: %w", cfg.Name, err)
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: fSrc, Value: 1}}}); err != nil {
		return fmt.Errorf("mongodb: collection %s: index: %w", cfg.Name, err)
	}
	if _, err := coll.SearchIndexes().CreateMany(ctx, indexModels(cfg)); err != nil && !isCode(err, 68) { // IndexAlreadyExists
		return fmt.Errorf("mongodb: collection %s: search indexes: %w", cfg.Name, err)
	}
	if err := waitQueryable(ctx, coll); err != nil {
		return fmt.Errorf("mongodb: collection %s: %w", cfg.Name, err)
	}
	_, err = b.configs().InsertOne(ctx, bson.D{{Key: "_id", Value: cfg.Name}, {Key: "meta", Value: string(m)}})
	if isDuplicate(err) {
		return store.ErrCollectionExists
	}
	if err != nil {
		return fmt.Errorf("mongodb: collection %s: %w", cfg.Name, err)
	}
	return nil
}

func isCode(err error, code int32) bool {
	var ce mongo.CommandError
	return errors.As(err, &ce) && ce.Code == code
}

// waitQueryable polls the collection's search indexes until both can
// answer queries, from every 20 ms up to every 2 s.
func waitQueryable(ctx context.Context, coll *mongo.Collection) error {
	for delay := 20 * time.Millisecond; ; delay = min(2*delay, 2*time.Second) {
		cur, err := coll.SearchIndexes().List(ctx, nil)
		if err != nil {
			return fmt.Errorf("search indexes: %w", err)
		}
		var idx []struct {
			Name      string `bson:"name"`
			Queryable bool   `bson:"queryable"`
			Status    string `bson:"status"`
		}
		if err := cur.All(ctx, &idx); err != nil {
			return fmt.Errorf("search indexes: %w", err)
		}
		ready := 0
		for _, ix := range idx {
			if ix.Status == "FAILED" {
				return fmt.Errorf("search index %s failed to build", ix.Name)
			}
			if (ix.Name == vectorIndex || ix.Name == textIndex) && ix.Queryable {
				ready++
			}
		}
		if ready == 2 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for search indexes: %w", ctx.Err())
		case <-time.After(delay):
		}
	}
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

// configDoc is a collection's configuration document.
type configDoc struct {
	Name string `bson:"_id"`
	Meta string `bson:"meta"`
}

func (b *Backend) load(ctx context.Context, name string, fresh bool) (*collection, error) {
	b.mu.Lock()
	c := b.colls[name]
	b.mu.Unlock()
	if c != nil && !fresh {
		return c, nil
	}
	var d configDoc
	err := b.configs().FindOne(ctx, bson.D{{Key: "_id", Value: name}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		b.forget(name)
		return nil, store.ErrCollectionNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("mongodb: collection %s: %w", name, err)
	}
	return b.remember(d)
}

// remember reads a configuration document and caches its collection.
func (b *Backend) remember(d configDoc) (*collection, error) {
	var m meta
	if err := json.Unmarshal([]byte(d.Meta), &m); err != nil {
		return nil, fmt.Errorf("mongodb: collection %s: Quarry's metadata: %w", d.Name, err)
	}
	if m.Version != metaVersion {
		return nil, fmt.Errorf("mongodb: collection %s has layout %d; this Quarry reads %d", d.Name, m.Version, metaVersion)
	}
	c := &collection{cfg: m.Config, coll: b.chunks(d.Name)}
	b.mu.Lock()
	defer b.mu.Unlock()
	var err error
	if c.analyzer = b.anz[c.cfg.Language]; c.analyzer == nil {
		if c.analyzer, err = bm25.NewAnalyzer(bm25.AnalyzerConfig{Language: c.cfg.Language}); err != nil {
			return nil, fmt.Errorf("mongodb: collection %s: %w", d.Name, err)
		}
		b.anz[c.cfg.Language] = c.analyzer
	}
	b.colls[d.Name] = c
	return c, nil
}

func (b *Backend) forget(name string) {
	b.mu.Lock()
	delete(b.colls, name)
	b.mu.Unlock()
}

// ListCollections implements store.Admin, in name order.
func (b *Backend) ListCollections(ctx context.Context) ([]store.CollectionConfig, error) {
	cur, err := b.configs().Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("mongodb: list collections: %w", err)
	}
	var docs []configDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("mongodb: list collections: %w", err)
	}
	out := make([]store.CollectionConfig, 0, len(docs))
	for _, d := range docs {
		c, err := b.remember(d)
		if err != nil {
			return nil, err
		}
		out = append(out, c.cfg)
	}
	return out, nil
}

// DropCollection implements store.Admin: its configuration first, so a
// drop cut short leaves no collection, then its chunks (the search
// indexes go with them) and its sources and settings.
func (b *Backend) DropCollection(ctx context.Context, name string) error {
	res, err := b.configs().DeleteOne(ctx, bson.D{{Key: "_id", Value: name}})
	if err != nil {
		return fmt.Errorf("mongodb: drop %s: %w", name, err)
	}
	b.forget(name)
	if res.DeletedCount == 0 {
		return store.ErrCollectionNotFound
	}
	if err := b.chunks(name).Drop(ctx); err != nil {
		return fmt.Errorf("mongodb: drop %s: %w", name, err)
	}
	if _, err := b.sources().DeleteMany(ctx, bson.D{{Key: "coll", Value: name}}); err != nil {
		return fmt.Errorf("mongodb: drop %s: %w", name, err)
	}
	return nil
}
