package meilisearch

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/quarry-rag/quarry/store"
)

// noVector is the _vectors of a document that is not a chunk.
var noVector = map[string]any{embedder: nil}

// Sources implements store.SourceSyncer.
func (b *Backend) Sources(ctx context.Context, coll string) ([]store.SourceState, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return nil, err
	}
	var out []store.SourceState
	err = b.fetchAll(ctx, c, kindIs(kindSource), []string{fState}, func(r record) error {
		var st store.SourceState
		if err := json.Unmarshal([]byte(r.State), &st); err != nil {
			return fmt.Errorf("meilisearch: source state %s: %w", r.ID, err)
		}
		out = append(out, st)
		return nil
	})
	slices.SortFunc(out, func(x, y store.SourceState) int {
		return cmp.Or(cmp.Compare(x.Source.Type, y.Source.Type), cmp.Compare(x.Source.Name, y.Source.Name))
	})
	return out, err
}

// ReplaceSources implements store.SourceSyncer as far as Meilisearch can:
// the sources' states and chunks are deleted (one task per 500 sources),
// then the new chunks are added in one task and last the new states. A
// crash part way leaves a source without a state, which the next
// ingestion writes again, never a state that claims chunks that are not
// there; a search in the middle can miss the source for that moment.
func (b *Backend) ReplaceSources(ctx context.Context, coll string, updates []store.SourceUpdate) error {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return err
	}
	var keys []string
	var chunks, states []map[string]any
	for _, u := range updates {
		key := sourceKey(u.Source.Type, u.Source.Name)
		keys = append(keys, key)
		for _, d := range u.Docs {
			cd, err := c.chunkDoc(d)
			if err != nil {
				return err
			}
			chunks = append(chunks, cd)
		}
		if u.Hash == "" {
			continue
		}
		st, err := json.Marshal(store.SourceState{Source: u.Source, Hash: u.Hash, Chunks: len(u.Docs), Origin: u.Origin})
		if err != nil {
			return fmt.Errorf("meilisearch: source %s: %w", u.Source.Name, err)
		}
		states = append(states, map[string]any{"id": docID(kindSource, key), fKind: kindSource, fSrc: key, fState: string(st), "_vectors": noVector})
	}
	for start := 0; start < len(keys); start += 500 {
		part := keys[start:min(start+500, len(keys))]
		kinds := "(" + kindIs(kindSource) + " OR " + kindIs(kindChunk) + ")"
		if _, err := b.deleteWhere(ctx, c, and(kinds, inList(fSrc, part))); err != nil {
			return err
		}
	}
	if err := b.addDocs(ctx, c, chunks); err != nil {
		return err
	}
	return b.addDocs(ctx, c, states)
}

// Setting implements store.SettingsKeeper.
func (b *Backend) Setting(ctx context.Context, coll, key string) (json.RawMessage, error) {
	c, err := b.load(ctx, coll, true)
	if err != nil {
		return nil, err
	}
	var r record
	err = b.call(ctx, http.MethodGet, idxPath(c.uid, "/documents/"+docID(kindSetting, key)), nil, &r)
	if isCode(err, "document_not_found") {
		return nil, nil
	}
	if err != nil {
		return nil, b.collErr(c, err)
	}
	return json.RawMessage(r.Value), nil
}

// PutSetting implements store.SettingsKeeper.
func (b *Backend) PutSetting(ctx context.Context, coll, key string, value json.RawMessage) error {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return err
	}
	id := docID(kindSetting, key)
	if value == nil {
		_, err := b.write(ctx, http.MethodDelete, idxPath(c.uid, "/documents/"+id), nil)
		return b.collErr(c, err)
	}
	return b.addDocs(ctx, c, []map[string]any{{"id": id, fKind: kindSetting, fKey: key, fValue: string(value), "_vectors": noVector}})
}

// Settings implements store.SettingsKeeper.
func (b *Backend) Settings(ctx context.Context, coll string) (map[string]json.RawMessage, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return nil, err
	}
	out := map[string]json.RawMessage{}
	err = b.fetchAll(ctx, c, kindIs(kindSetting), []string{fKey, fValue}, func(r record) error {
		out[r.Key] = json.RawMessage(r.Value)
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
