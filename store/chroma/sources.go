package chroma

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/quarry-rag/quarry/store"
)

// Kinds of record in the state collection.
const (
	kindSource  = "source"
	kindSetting = "setting"
)

// sideEmbedding is the embedding of every sidecar record.
var sideEmbedding = []float32{0}

// sideRecords reads a sidecar's records matching w, with metadata.
func (b *Backend) sideRecords(ctx context.Context, kind string, w any) ([]map[string]any, error) {
	var res getResult
	if err := b.sideCall(ctx, kind, "/get", map[string]any{"where": w, "include": []string{"metadatas"}}, &res); err != nil {
		return nil, err
	}
	if len(res.Metadatas) != len(res.IDs) {
		return nil, fmt.Errorf("chroma: %s collection: get answered %d ids and %d metadatas", kind, len(res.IDs), len(res.Metadatas))
	}
	return res.Metadatas, nil
}

// Sources implements store.SourceSyncer.
func (b *Backend) Sources(ctx context.Context, coll string) ([]store.SourceState, error) {
	if _, err := b.coll(ctx, coll); err != nil {
		return nil, err
	}
	mds, err := b.sideRecords(ctx, stateSidecar, whereDoc{"$and": []any{whereDoc{kColl: coll}, whereDoc{kKind: kindSource}}})
	if err != nil {
		return nil, err
	}
	out := make([]store.SourceState, 0, len(mds))
	for _, md := range mds {
		raw, _ := md[kState].(string)
		var st store.SourceState
		if err := json.Unmarshal([]byte(raw), &st); err != nil {
			return nil, fmt.Errorf("chroma: source state in %s: %w", coll, err)
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(x, y store.SourceState) int {
		return cmp.Or(cmp.Compare(x.Source.Type, y.Source.Type), cmp.Compare(x.Source.Name, y.Source.Name))
	})
	return out, nil
}

// deleteStates deletes the states of these sources of a collection.
func (b *Backend) deleteStates(ctx context.Context, coll string, keys []any) error {
	for start := 0; start < len(keys); start += 500 {
		part := keys[start:min(start+500, len(keys))]
		w := whereDoc{"$and": []any{whereDoc{kColl: coll}, whereDoc{kKind: kindSource}, whereDoc{kSrc: whereDoc{"$in": part}}}}
		if err := b.deleteSide(ctx, stateSidecar, w); err != nil {
			return err
		}
	}
	return nil
}

// ReplaceSources implements store.SourceSyncer as far as Chroma can: the
// sources' states are deleted first, then their chunks, then the new
// chunks and last the new states are written. A crash part way leaves a
// source without a state, which the next ingestion writes again, never a
// state that claims chunks that are not there; a search in the middle can
// miss the source for that moment.
func (b *Backend) ReplaceSources(ctx context.Context, coll string, updates []store.SourceUpdate) error {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return err
	}
	var keys []any
	var chunks, states records
	for _, u := range updates {
		key := sourceKey(u.Source.Type, u.Source.Name)
		keys = append(keys, key)
		for _, d := range u.Docs {
			if err := c.addChunk(&chunks, d); err != nil {
				return err
			}
		}
		if u.Hash == "" {
			continue
		}
		st, err := json.Marshal(store.SourceState{Source: u.Source, Hash: u.Hash, Chunks: len(u.Docs), Origin: u.Origin})
		if err != nil {
			return fmt.Errorf("chroma: source %s: %w", u.Source.Name, err)
		}
		states.addSide(hashID(kindSource, coll+"\x1f"+key), map[string]any{kColl: coll, kKind: kindSource, kSrc: key, kState: string(st)})
	}
	if err := b.deleteStates(ctx, coll, keys); err != nil {
		return err
	}
	for start := 0; start < len(keys); start += 500 {
		part := keys[start:min(start+500, len(keys))]
		if err := b.callJSON(ctx, "POST", b.path(c, "/delete"), map[string]any{"where": whereDoc{kSrc: whereDoc{"$in": part}}}, nil); err != nil {
			return b.collErr(c, err)
		}
	}
	if len(chunks.IDs) > 0 {
		if err := b.upsert(ctx, b.path(c, "/upsert"), &chunks); err != nil {
			return b.collErr(c, err)
		}
	}
	if len(states.IDs) == 0 {
		return nil
	}
	id, err := b.sidecar(ctx, stateSidecar)
	if err != nil {
		return err
	}
	return b.upsert(ctx, b.base+"/collections/"+id+"/upsert", &states)
}

// Setting implements store.SettingsKeeper.
func (b *Backend) Setting(ctx context.Context, coll, key string) (json.RawMessage, error) {
	if _, err := b.load(ctx, coll, true); err != nil {
		return nil, err
	}
	var res getResult
	err := b.sideCall(ctx, stateSidecar, "/get", map[string]any{"ids": []string{hashID(kindSetting, coll+"\x1f"+key)}, "include": []string{"metadatas"}}, &res)
	if err != nil || len(res.Metadatas) == 0 {
		return nil, err
	}
	v, _ := res.Metadatas[0][kValue].(string)
	return json.RawMessage(v), nil
}

// PutSetting implements store.SettingsKeeper.
func (b *Backend) PutSetting(ctx context.Context, coll, key string, value json.RawMessage) error {
	if _, err := b.coll(ctx, coll); err != nil {
		return err
	}
	id := hashID(kindSetting, coll+"\x1f"+key)
	if value == nil {
		return b.sideCall(ctx, stateSidecar, "/delete", map[string]any{"ids": []string{id}}, nil)
	}
	var r records
	r.addSide(id, map[string]any{kColl: coll, kKind: kindSetting, kKey: key, kValue: string(value)})
	return b.sideCall(ctx, stateSidecar, "/upsert", &r, nil)
}

// Settings implements store.SettingsKeeper.
func (b *Backend) Settings(ctx context.Context, coll string) (map[string]json.RawMessage, error) {
	if _, err := b.coll(ctx, coll); err != nil {
		return nil, err
	}
	mds, err := b.sideRecords(ctx, stateSidecar, whereDoc{"$and": []any{whereDoc{kColl: coll}, whereDoc{kKind: kindSetting}}})
	if err != nil {
		return nil, err
	}
	out := map[string]json.RawMessage{}
	for _, md := range mds {
		k, _ := md[kKey].(string)
		v, _ := md[kValue].(string)
		out[k] = json.RawMessage(v)
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
