package typesense

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/quarry-rag/quarry/store"
)

// Conversation threads live in one Typesense collection beside the
// knowledge-base collections, PREFIX-threads: its name has no "_" after
// the prefix, so it can never be a Quarry collection's. Each turn is a
// document holding its thread (hex-encoded, for filter_by), an ordering
// key and the turn as JSON.
const (
	fThread = "thread"
	fOrder  = "order"
	fTurn   = "turn"
)

func (b *Backend) threadsName() string { return b.prefix + "-threads" }

// ensureThreads creates the threads collection once per backend; another
// process creating it first is no error.
func (b *Backend) ensureThreads(ctx context.Context) error {
	b.mu.Lock()
	ready := b.threadsReady
	b.mu.Unlock()
	if ready {
		return nil
	}
	body := map[string]any{"name": b.threadsName(), "fields": []field{
		{Name: fThread, Type: "string"},
		{Name: fOrder, Type: "string", Index: no},
		{Name: fTurn, Type: "string", Index: no},
	}, "metadata": map[string]any{"quarry": map[string]any{"threads": metaVersion}}}
	err := b.callJSON(ctx, http.MethodPost, "/collections", nil, body, nil)
	if err != nil && !isStatus(err, http.StatusConflict) {
		return fmt.Errorf("typesense: threads collection: %w", err)
	}
	b.mu.Lock()
	b.threadsReady = true
	b.mu.Unlock()
	return nil
}

// AppendTurns implements store.ThreadStore: the turns are one import. A
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
	if err := b.ensureThreads(ctx); err != nil {
		return err
	}
	base, err := b.order.Next()
	if err != nil {
		return err
	}
	docs := make([]map[string]any, len(turns))
	for i, turn := range turns {
		body, err := store.EncodeTurn(turn)
		if err != nil {
			return fmt.Errorf("turn %d: %w", i, err)
		}
		order := fmt.Sprintf("%s-%06d", base, i)
		docs[i] = map[string]any{"id": docID("turn", thread+"\x1f"+order), fThread: hexs(thread), fOrder: order, fTurn: string(body)}
	}
	return b.importDocs(ctx, &collection{name: b.threadsName()}, docs)
}

// turnRecord is a turn as an export returns it.
type turnRecord struct {
	Thread string `json:"thread"`
	Order  string `json:"order"`
	Turn   string `json:"turn"`
}

// exportTurns calls fn with every turn filter_by matches (all when
// empty); a missing threads collection holds none.
func (b *Backend) exportTurns(ctx context.Context, fb string, fn func(turnRecord)) error {
	q := url.Values{}
	if fb != "" {
		q.Set("filter_by", fb)
	}
	var data []byte
	err := b.call(ctx, http.MethodGet, colPath(b.threadsName(), "/documents/export"), q, nil, "", &data)
	if isStatus(err, http.StatusNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return eachLine(data, "threads export", func(r turnRecord) error { fn(r); return nil })
}

// Turns implements store.ThreadStore.
func (b *Backend) Turns(ctx context.Context, thread string, limit int) ([]store.Turn, error) {
	var kept []store.KeptTurn
	err := b.exportTurns(ctx, fThread+":="+hexs(thread), func(r turnRecord) {
		kept = append(kept, store.KeptTurn{Order: r.Order, Body: []byte(r.Turn)})
	})
	if err != nil {
		return nil, err
	}
	return store.LastTurns(thread, kept, limit)
}

// DeleteThread implements store.ThreadStore.
func (b *Backend) DeleteThread(ctx context.Context, thread string) error {
	err := b.callJSON(ctx, http.MethodDelete, colPath(b.threadsName(), "/documents"),
		url.Values{"filter_by": {fThread + ":=" + hexs(thread)}}, nil, nil)
	if isStatus(err, http.StatusNotFound) {
		return nil
	}
	return err
}

// ThreadIDs implements store.ThreadStore.
func (b *Backend) ThreadIDs(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	var ids []string
	err := b.exportTurns(ctx, "", func(r turnRecord) {
		if !seen[r.Thread] {
			seen[r.Thread] = true
			if id, err := unhex(r.Thread); err == nil {
				ids = append(ids, id)
			}
		}
	})
	slices.Sort(ids)
	return ids, err
}
