package pinecone

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/store"
)

// Kinds of record in a collection's sidecar namespace.
const (
	kindSource  = "source"
	kindSetting = "setting"
)

// kindIs matches the sidecar records of one kind.
func kindIs(kind string) whereDoc { return whereDoc{kKind: whereDoc{"$eq": kind}} }

// Sources implements store.SourceSyncer.
func (b *Backend) Sources(ctx context.Context, coll string) ([]store.SourceState, error) {
	if _, err := b.coll(ctx, coll); err != nil {
		return nil, err
	}
	mh, err := b.metaHost(ctx, false)
	if err != nil || mh == "" {
		return nil, err
	}
	var out []store.SourceState
	err = b.fetchWhere(ctx, mh, sideNS(coll), kindIs(kindSource), func(v vector) error {
		raw, _ := v.Metadata[kState].(string)
		var st store.SourceState
		if err := json.Unmarshal([]byte(raw), &st); err != nil {
			return fmt.Errorf("pinecone: source state %s: %w", v.ID, err)
		}
		out = append(out, st)
		return nil
	})
	slices.SortFunc(out, func(x, y store.SourceState) int {
		return cmp.Or(cmp.Compare(x.Source.Type, y.Source.Type), cmp.Compare(x.Source.Name, y.Source.Name))
	})
	return out, err
}

// dropStates deletes the states of sources (by q_src key).
func (b *Backend) dropStates(ctx context.Context, c *collection, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	mh, err := b.metaHost(ctx, false)
	if err != nil || mh == "" {
		return err
	}
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = recordID(kindSource, k)
	}
	return b.deleteIDs(ctx, mh, sideNS(c.cfg.Name), ids)
}

// maxIn is how many values one $in of a filter names.
const maxIn = 500

// ReplaceSources implements store.SourceSyncer as far as Pinecone can:
// the sources' states and chunks are deleted, then the new chunks are
// upserted and last the new states. A crash part way leaves a source
// without a state, which the next ingestion writes again, never a state
// that claims chunks that are not there; a search in the middle can miss
// the source for that moment.
func (b *Backend) ReplaceSources(ctx context.Context, coll string, updates []store.SourceUpdate) error {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return err
	}
	var keys []string
	var docs []*document.Document
	var states []vector
	for _, u := range updates {
		key := sourceKey(u.Source.Type, u.Source.Name)
		keys = append(keys, key)
		docs = append(docs, u.Docs...)
		if u.Hash == "" {
			continue
		}
		st, err := json.Marshal(store.SourceState{Source: u.Source, Hash: u.Hash, Chunks: len(u.Docs), Origin: u.Origin})
		if err != nil {
			return fmt.Errorf("pinecone: source %s: %w", u.Source.Name, err)
		}
		states = append(states, vector{ID: recordID(kindSource, key), Values: one,
			Metadata: map[string]any{kKind: kindSource, kSrc: key, kState: string(st)}})
	}
	// A batch Pinecone would refuse is refused before anything is deleted.
	dense, sp, err := c.chunksRecords(docs)
	if err != nil {
		return err
	}
	var old []string
	for start := 0; start < len(keys); start += maxIn {
		ids, _, err := b.chunkIDs(ctx, c, whereDoc{kSrc: whereDoc{"$in": keys[start:min(start+maxIn, len(keys))]}})
		if err != nil {
			return err
		}
		old = append(old, ids...)
	}
	if err := b.dropStates(ctx, c, keys); err != nil {
		return err
	}
	if err := b.deleteChunks(ctx, c, old); err != nil {
		return err
	}
	if err := b.writeChunks(ctx, c, dense, sp); err != nil {
		return err
	}
	if len(states) == 0 {
		return nil
	}
	mh, err := b.metaHost(ctx, true)
	if err != nil {
		return err
	}
	return b.upsert(ctx, mh, sideNS(coll), states)
}

// Setting implements store.SettingsKeeper.
func (b *Backend) Setting(ctx context.Context, coll, key string) (json.RawMessage, error) {
	if _, err := b.load(ctx, coll, true); err != nil {
		return nil, err
	}
	mh, err := b.metaHost(ctx, false)
	if err != nil || mh == "" {
		return nil, err
	}
	id := recordID(kindSetting, key)
	got, err := b.fetch(ctx, mh, sideNS(coll), []string{id})
	if err != nil {
		return nil, err
	}
	v, ok := got[id]
	if !ok {
		return nil, nil
	}
	raw, _ := v.Metadata[kValue].(string)
	return json.RawMessage(raw), nil
}

// PutSetting implements store.SettingsKeeper.
func (b *Backend) PutSetting(ctx context.Context, coll, key string, value json.RawMessage) error {
	if _, err := b.coll(ctx, coll); err != nil {
		return err
	}
	mh, err := b.metaHost(ctx, true)
	if err != nil {
		return err
	}
	id := recordID(kindSetting, key)
	if value == nil {
		return b.deleteIDs(ctx, mh, sideNS(coll), []string{id})
	}
	md := map[string]any{kKind: kindSetting, kKey: key, kValue: string(value)}
	if n := metadataSize(md); n > maxMetadataBytes {
		return fmt.Errorf("%w: setting %s takes %d KB; Pinecone holds at most %d KB a record", store.ErrInvalidRequest, key, (n+1023)>>10, maxMetadataBytes>>10)
	}
	return b.upsert(ctx, mh, sideNS(coll), []vector{{ID: id, Values: one, Metadata: md}})
}

// Settings implements store.SettingsKeeper.
func (b *Backend) Settings(ctx context.Context, coll string) (map[string]json.RawMessage, error) {
	if _, err := b.coll(ctx, coll); err != nil {
		return nil, err
	}
	out := map[string]json.RawMessage{}
	mh, err := b.metaHost(ctx, false)
	if err != nil || mh == "" {
		return out, err
	}
	err = b.fetchWhere(ctx, mh, sideNS(coll), kindIs(kindSetting), func(v vector) error {
		k, _ := v.Metadata[kKey].(string)
		raw, _ := v.Metadata[kValue].(string)
		out[k] = json.RawMessage(raw)
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
