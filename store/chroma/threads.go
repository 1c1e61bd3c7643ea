package chroma

import (
	"context"
	"fmt"
	"slices"

	"github.com/quarry-rag/quarry/store"
)

// Conversation threads live in the PREFIX-threads collection: each turn
// is a record holding its thread, an ordering key and the turn as JSON.
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
	var r records
	for i, turn := range turns {
		body, err := store.EncodeTurn(turn)
		if err != nil {
			return fmt.Errorf("turn %d: %w", i, err)
		}
		order := fmt.Sprintf("%s-%06d", base, i)
		r.addSide(hashID("turn", thread+"\x1f"+order), map[string]any{kThread: thread, kOrder: order, kTurn: string(body)})
	}
	return b.sideCall(ctx, threadsSidecar, "/upsert", &r, nil)
}

// Turns implements store.ThreadStore.
func (b *Backend) Turns(ctx context.Context, thread string, limit int) ([]store.Turn, error) {
	mds, err := b.sideRecords(ctx, threadsSidecar, whereDoc{kThread: thread})
	if err != nil {
		return nil, err
	}
	kept := make([]store.KeptTurn, len(mds))
	for i, md := range mds {
		order, _ := md[kOrder].(string)
		body, _ := md[kTurn].(string)
		kept[i] = store.KeptTurn{Order: order, Body: []byte(body)}
	}
	return store.LastTurns(thread, kept, limit)
}

// DeleteThread implements store.ThreadStore.
func (b *Backend) DeleteThread(ctx context.Context, thread string) error {
	return b.deleteSide(ctx, threadsSidecar, whereDoc{kThread: thread})
}

// ThreadIDs implements store.ThreadStore.
func (b *Backend) ThreadIDs(ctx context.Context) ([]string, error) {
	var res getResult
	// Every turn's metadata is read: Chroma's include cannot pick keys.
	if err := b.sideCall(ctx, threadsSidecar, "/get", map[string]any{"include": []string{"metadatas"}}, &res); err != nil {
		return nil, err
	}
	var ids []string
	for _, md := range res.Metadatas {
		if s, ok := md[kThread].(string); ok {
			ids = append(ids, s)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}
