package qdrant

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/quarry-rag/quarry/store"
)

// Sources implements store.SourceSyncer.
func (b *Backend) Sources(ctx context.Context, coll string) ([]store.SourceState, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return nil, err
	}
	var out []store.SourceState
	err = b.scroll(ctx, c, kindFilter(kindSource), []string{keyState}, func(rs []record) error {
		for _, r := range rs {
			var st store.SourceState
			if err := json.Unmarshal([]byte(r.Payload.State), &st); err != nil {
				return fmt.Errorf("qdrant: source state %s: %w", r.ID, err)
			}
			out = append(out, st)
		}
		return nil
	})
	// Qdrant returns points in id order, which is a hash here.
	slices.SortFunc(out, func(x, y store.SourceState) int {
		return cmp.Or(cmp.Compare(x.Source.Type, y.Source.Type), cmp.Compare(x.Source.Name, y.Source.Name))
	})
	return out, err
}

// ReplaceSources implements store.SourceSyncer in one batch request whose
// operations Qdrant applies in order: the sources' states are deleted
// first, then their chunks, then the new chunks and the new states are
// written. A crash part way leaves a source without a state, which the
// next ingestion writes again; never a state that claims chunks that are
// not there.
func (b *Backend) ReplaceSources(ctx context.Context, coll string, updates []store.SourceUpdate) error {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return err
	}
	keys := make([]any, len(updates))
	var chunks, states []point
	for i, u := range updates {
		key := sourceKey(u.Source.Type, u.Source.Name)
		keys[i] = key
		pts, err := c.chunkPoints(u.Docs)
		if err != nil {
			return err
		}
		chunks = append(chunks, pts...)
		if u.Hash == "" {
			continue
		}
		st, err := json.Marshal(store.SourceState{Source: u.Source, Hash: u.Hash, Chunks: len(u.Docs), Origin: u.Origin})
		if err != nil {
			return fmt.Errorf("qdrant: source %s: %w", u.Source.Name, err)
		}
		states = append(states, point{ID: pointID(kindSource, key), Vector: map[string]any{},
			Payload: map[string]any{keyKind: kindSource, keySource: key, keyState: string(st)}})
	}
	of := func(kind string) map[string]any {
		return deleteOp(cond{"must": []any{
			cond{"key": keyKind, "match": cond{"value": kind}},
			cond{"key": keySource, "match": cond{"any": keys}},
		}})
	}
	ops := []any{of(kindSource), of(kindChunk)}
	if len(chunks) > 0 {
		ops = append(ops, map[string]any{"upsert": map[string]any{"points": chunks}})
	}
	if len(states) > 0 {
		ops = append(ops, map[string]any{"upsert": map[string]any{"points": states}})
	}
	return b.request(ctx, c, http.MethodPost, "/points/batch?wait=true", map[string]any{"operations": ops}, nil)
}

// Setting implements store.SettingsKeeper.
func (b *Backend) Setting(ctx context.Context, coll, key string) (json.RawMessage, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return nil, err
	}
	var recs []record
	err = b.request(ctx, c, http.MethodPost, "/points", map[string]any{
		"ids": []string{pointID(kindSetting, key)}, "with_payload": []string{keyKind, keyValue}, "with_vector": false}, &recs)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if r.Payload.Kind == kindSetting {
			return json.RawMessage(r.Payload.Value), nil
		}
	}
	return nil, nil
}

// PutSetting implements store.SettingsKeeper.
func (b *Backend) PutSetting(ctx context.Context, coll, key string, value json.RawMessage) error {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return err
	}
	id := pointID(kindSetting, key)
	if value == nil {
		return b.request(ctx, c, http.MethodPost, "/points/delete?wait=true", map[string]any{"points": []string{id}}, nil)
	}
	p := point{ID: id, Vector: map[string]any{}, Payload: map[string]any{keyKind: kindSetting, keyName: key, keyValue: string(value)}}
	return b.request(ctx, c, http.MethodPut, "/points?wait=true", map[string]any{"points": []point{p}}, nil)
}

// Settings implements store.SettingsKeeper.
func (b *Backend) Settings(ctx context.Context, coll string) (map[string]json.RawMessage, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return nil, err
	}
	out := map[string]json.RawMessage{}
	err = b.scroll(ctx, c, kindFilter(kindSetting), []string{keyName, keyValue}, func(rs []record) error {
		for _, r := range rs {
			out[r.Payload.Key] = json.RawMessage(r.Payload.Value)
		}
		return nil
	})
	return out, err
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
