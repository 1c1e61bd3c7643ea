package mongodb

import (
	"context"
	"encoding/json"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/quarry-rag/quarry/store"
)

// Kinds of document in PREFIX-sources.
const (
	kindSource  = "source"
	kindSetting = "setting"
)

// stateID and settingID are the _id of a source state and of a setting:
// the collection, the kind and the key.
func stateID(coll, src string) string   { return coll + "\x1f" + kindSource + "\x1f" + src }
func settingID(coll, key string) string { return coll + "\x1f" + kindSetting + "\x1f" + key }

// sideDoc is a document of PREFIX-sources.
type sideDoc struct {
	ID    string `bson:"_id"`
	Coll  string `bson:"coll"`
	Kind  string `bson:"kind"`
	Key   string `bson:"key"`
	Value string `bson:"value"`
}

// Sources implements store.SourceSyncer.
func (b *Backend) Sources(ctx context.Context, coll string) ([]store.SourceState, error) {
	if _, err := b.coll(ctx, coll); err != nil {
		return nil, err
	}
	docs, err := b.side(ctx, coll, kindSource)
	if err != nil {
		return nil, err
	}
	out := make([]store.SourceState, 0, len(docs))
	for _, d := range docs {
		var st store.SourceState
		if err := json.Unmarshal([]byte(d.Value), &st); err != nil {
			return nil, fmt.Errorf("mongodb: source state %s: %w", d.Key, err)
		}
		out = append(out, st)
	}
	return out, nil
}

// side reads a collection's sidecar documents of a kind, in key order
// (which for sources is type, then name).
func (b *Backend) side(ctx context.Context, coll, kind string) ([]sideDoc, error) {
	cur, err := b.sources().Find(ctx, bson.D{{Key: "coll", Value: coll}, {Key: "kind", Value: kind}},
		options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("mongodb: %ss of %s: %w", kind, coll, err)
	}
	var docs []sideDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("mongodb: %ss of %s: %w", kind, coll, err)
	}
	return docs, nil
}

// ReplaceSources implements store.SourceSyncer: one transaction deletes
// the sources' chunks and states and writes the new chunks and states.
func (b *Backend) ReplaceSources(ctx context.Context, coll string, updates []store.SourceUpdate) error {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return err
	}
	var keys, stateIDs bson.A
	var chunks []mongo.WriteModel
	var states []mongo.WriteModel
	for _, u := range updates {
		key := sourceKey(u.Source.Type, u.Source.Name)
		keys, stateIDs = append(keys, key), append(stateIDs, stateID(coll, key))
		models, err := c.replaceModels(u.Docs)
		if err != nil {
			return err
		}
		chunks = append(chunks, models...)
		if u.Hash == "" {
			continue
		}
		st, err := json.Marshal(store.SourceState{Source: u.Source, Hash: u.Hash, Chunks: len(u.Docs), Origin: u.Origin})
		if err != nil {
			return fmt.Errorf("mongodb: source %s: %w", u.Source.Name, err)
		}
		states = append(states, mongo.NewInsertOneModel().SetDocument(sideDoc{ID: stateID(coll, key), Coll: coll, Kind: kindSource, Key: key, Value: string(st)}))
	}
	return b.inTxn(ctx, func(ctx context.Context) error {
		if _, err := c.coll.DeleteMany(ctx, bson.D{{Key: fSrc, Value: bson.D{{Key: "$in", Value: keys}}}}); err != nil {
			return fmt.Errorf("mongodb: replace sources in %s: %w", coll, err)
		}
		if _, err := b.sources().DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: stateIDs}}}}); err != nil {
			return fmt.Errorf("mongodb: replace sources in %s: %w", coll, err)
		}
		if len(chunks) > 0 {
			if _, err := c.coll.BulkWrite(ctx, chunks); err != nil {
				return fmt.Errorf("mongodb: replace sources in %s: %w", coll, err)
			}
		}
		if len(states) > 0 {
			if _, err := b.sources().BulkWrite(ctx, states); err != nil {
				return fmt.Errorf("mongodb: replace sources in %s: states: %w", coll, err)
			}
		}
		return nil
	})
}

// Setting implements store.SettingsKeeper.
func (b *Backend) Setting(ctx context.Context, coll, key string) (json.RawMessage, error) {
	if _, err := b.load(ctx, coll, true); err != nil {
		return nil, err
	}
	var d sideDoc
	err := b.sources().FindOne(ctx, bson.D{{Key: "_id", Value: settingID(coll, key)}}).Decode(&d)
	if isNoDocs(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mongodb: setting %s: %w", key, err)
	}
	return json.RawMessage(d.Value), nil
}

// PutSetting implements store.SettingsKeeper.
func (b *Backend) PutSetting(ctx context.Context, coll, key string, value json.RawMessage) error {
	if _, err := b.coll(ctx, coll); err != nil {
		return err
	}
	id := settingID(coll, key)
	var err error
	if value == nil {
		_, err = b.sources().DeleteOne(ctx, bson.D{{Key: "_id", Value: id}})
	} else {
		_, err = b.sources().ReplaceOne(ctx, bson.D{{Key: "_id", Value: id}},
			sideDoc{ID: id, Coll: coll, Kind: kindSetting, Key: key, Value: string(value)}, options.Replace().SetUpsert(true))
	}
	if err != nil {
		return fmt.Errorf("mongodb: setting %s: %w", key, err)
	}
	return nil
}

// Settings implements store.SettingsKeeper.
func (b *Backend) Settings(ctx context.Context, coll string) (map[string]json.RawMessage, error) {
	if _, err := b.coll(ctx, coll); err != nil {
		return nil, err
	}
	docs, err := b.side(ctx, coll, kindSetting)
	if err != nil {
		return nil, err
	}
	out := make(map[string]json.RawMessage, len(docs))
	for _, d := range docs {
		out[d.Key] = json.RawMessage(d.Value)
	}
	return out, nil
}

var (
	_ store.Backend         = (*Backend)(nil)
	_ store.RequestSearcher = (*Backend)(nil)
	_ store.HybridSearcher  = (*Backend)(nil)
	_ store.SourceSyncer    = (*Backend)(nil)
	_ store.SettingsKeeper  = (*Backend)(nil)
	_ store.ThreadStore     = (*Backend)(nil)
	_ store.Scanner         = (*Backend)(nil)
	_ store.Describer       = (*Backend)(nil)
)
