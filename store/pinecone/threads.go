package pinecone

import (
	"context"
	"fmt"
	"slices"

	"github.com/quarry-rag/quarry/store"
)

// Conversation threads live in the meta index's "threads" namespace. Each
// turn is a record holding its thread, an ordering key and the turn as
// JSON.
const (
	kThread = "thread"
	kOrder  = "order"
	kTurn   = "turn"
)

// AppendTurns implements store.ThreadStore: the turns are one upsert. A
// turn's number is its place in the thread, ordered by the start of the
// append that wrote it, then by its order within it, and numbered from 1
// when read.
func (b *Backend) AppendTurns(ctx context.Context, thread string, turns []store.Turn) error {
	if err := store.CheckThreadID(thread); err != nil {
		return err
	}
	if len(turns) == 0 {
		return nil
	}
	base, err := b.order.Next()
	if err != nil {
		return err
	}
	vs := make([]vector, len(turns))
	for i, turn := range turns {
		body, err := store.EncodeTurn(turn)
		if err != nil {
			return fmt.Errorf("turn %d: %w", i, err)
		}
		order := fmt.Sprintf("%s-%06d", base, i)
		md := map[string]any{kThread: thread, kOrder: order, kTurn: string(body)}
		if n := metadataSize(md); n > maxMetadataBytes {
			return fmt.Errorf("%w: turn %d takes %d KB; Pinecone holds at most %d KB a record", store.ErrInvalidRequest, i, (n+1023)>>10, maxMetadataBytes>>10)
		}
		vs[i] = vector{ID: recordID("turn", thread+"\x1f"+order), Values: one, Metadata: md}
	}
	mh, err := b.metaHost(ctx, true)
	if err != nil {
		return err
	}
	return b.upsert(ctx, mh, nsThreads, vs)
}

// eachTurn calls fn with every turn a filter matches (all when nil).
func (b *Backend) eachTurn(ctx context.Context, f any, fn func(vector)) error {
	mh, err := b.metaHost(ctx, false)
	if err != nil || mh == "" {
		return err
	}
	return b.fetchWhere(ctx, mh, nsThreads, f, func(v vector) error {
		fn(v)
		return nil
	})
}

// Turns implements store.ThreadStore.
func (b *Backend) Turns(ctx context.Context, thread string, limit int) ([]store.Turn, error) {
	var kept []store.KeptTurn
	err := b.eachTurn(ctx, whereDoc{kThread: whereDoc{"$eq": thread}}, func(v vector) {
		order, _ := v.Metadata[kOrder].(string)
		body, _ := v.Metadata[kTurn].(string)
		kept = append(kept, store.KeptTurn{Order: order, Body: []byte(body)})
	})
	if err != nil {
		return nil, err
	}
	return store.LastTurns(thread, kept, limit)
}

// DeleteThread implements store.ThreadStore.
func (b *Backend) DeleteThread(ctx context.Context, thread string) error {
	var ids []string
	if err := b.eachTurn(ctx, whereDoc{kThread: whereDoc{"$eq": thread}}, func(v vector) { ids = append(ids, v.ID) }); err != nil || len(ids) == 0 {
		return err
	}
	mh, err := b.metaHost(ctx, false)
	if err != nil || mh == "" {
		return err
	}
	return b.deleteIDs(ctx, mh, nsThreads, ids)
}

// ThreadIDs implements store.ThreadStore.
func (b *Backend) ThreadIDs(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	var ids []string
	err := b.eachTurn(ctx, nil, func(v vector) {
		if t, _ := v.Metadata[kThread].(string); t != "" && !seen[t] {
			seen[t] = true
			ids = append(ids, t)
		}
	})
	slices.Sort(ids)
	return ids, err
}
