package mongodb

import (
	"context"
	"fmt"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/quarry-rag/quarry/store"
)

// turnDoc is a conversation turn in PREFIX-threads: its thread, an
// ordering key and the turn as JSON.
type turnDoc struct {
	ID     string `bson:"_id"`
	Thread string `bson:"thread"`
	Order  string `bson:"order"`
	Turn   string `bson:"turn"`
}

// AppendTurns implements store.ThreadStore: the turns are one insert. A
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
	docs := make([]any, len(turns))
	for i, turn := range turns {
		body, err := store.EncodeTurn(turn)
		if err != nil {
			return fmt.Errorf("turn %d: %w", i, err)
		}
		order := fmt.Sprintf("%s-%06d", base, i)
		docs[i] = turnDoc{ID: thread + "\x1f" + order, Thread: thread, Order: order, Turn: string(body)}
	}
	if _, err := b.threads().InsertMany(ctx, docs); err != nil {
		return fmt.Errorf("mongodb: thread %s: %w", thread, err)
	}
	return nil
}

// Turns implements store.ThreadStore.
func (b *Backend) Turns(ctx context.Context, thread string, limit int) ([]store.Turn, error) {
	cur, err := b.threads().Find(ctx, bson.D{{Key: "thread", Value: thread}})
	if err != nil {
		return nil, fmt.Errorf("mongodb: thread %s: %w", thread, err)
	}
	var docs []turnDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("mongodb: thread %s: %w", thread, err)
	}
	kept := make([]store.KeptTurn, len(docs))
	for i, d := range docs {
		kept[i] = store.KeptTurn{Order: d.Order, Body: []byte(d.Turn)}
	}
	return store.LastTurns(thread, kept, limit)
}

// DeleteThread implements store.ThreadStore.
func (b *Backend) DeleteThread(ctx context.Context, thread string) error {
	if _, err := b.threads().DeleteMany(ctx, bson.D{{Key: "thread", Value: thread}}); err != nil {
		return fmt.Errorf("mongodb: thread %s: %w", thread, err)
	}
	return nil
}

// ThreadIDs implements store.ThreadStore.
func (b *Backend) ThreadIDs(ctx context.Context) ([]string, error) {
	res := b.threads().Distinct(ctx, "thread", bson.D{})
	var ids []string
	if err := res.Decode(&ids); err != nil {
		return nil, fmt.Errorf("mongodb: threads: %w", err)
	}
	slices.Sort(ids)
	return ids, nil
}
