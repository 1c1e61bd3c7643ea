package qdrant

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/quarry-rag/quarry/store"
)

// Conversation threads live in one Qdrant collection beside the
// knowledge-base collections, PREFIX-threads: its name has no "_" after
// the prefix, so it can never be a Quarry collection's. Each turn is a
// point without vectors whose payload holds the thread, an ordering key
// and the turn as JSON.
const (
	keyThread = "thread"
	keyOrder  = "order"
	keyTurn   = "turn"
)

func (b *Backend) threadsName() string { return b.prefix + "-threads" }

func (b *Backend) threadsPath(rest string) string {
	return "/collections/" + url.PathEscape(b.threadsName()) + rest
}

// ensureThreads creates the threads collection and its payload index once
// per backend; another process creating it first is no error.
func (b *Backend) ensureThreads(ctx context.Context) error {
	b.mu.Lock()
	ready := b.threadsReady
	b.mu.Unlock()
	if ready {
		return nil
	}
	err := b.call(ctx, http.MethodPut, b.threadsPath(""), map[string]any{
		"metadata": map[string]any{"quarry": map[string]any{"threads": metaVersion}},
	}, nil, false)
	if ae, ok := err.(*apiError); ok && (ae.Status == http.StatusConflict || strings.Contains(ae.Msg, "already exists")) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("qdrant: threads collection: %w", err)
	}
	if err := b.call(ctx, http.MethodPut, b.threadsPath("/index?wait=true"),
		map[string]any{"field_name": keyThread, "field_schema": "keyword"}, nil, false); err != nil {
		return fmt.Errorf("qdrant: threads index: %w", err)
	}
	b.mu.Lock()
	b.threadsReady = true
	b.mu.Unlock()
	return nil
}

// AppendTurns implements store.ThreadStore: the turns are one upsert,
// which Qdrant applies as one operation. A turn's number is its place in
// the thread, ordered by the start of the append that wrote it, then by
// its order within it, and numbered from 1 when read.
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
	pts := make([]point, len(turns))
	for i, turn := range turns {
		body, err := store.EncodeTurn(turn)
		if err != nil {
			return fmt.Errorf("turn %d: %w", i, err)
		}
		order := fmt.Sprintf("%s-%06d", base, i)
		pts[i] = point{ID: pointID(kindTurn, thread+"\x1f"+order), Vector: map[string]any{},
			Payload: map[string]any{keyThread: thread, keyOrder: order, keyTurn: string(body)}}
	}
	return b.call(ctx, http.MethodPut, b.threadsPath("/points?wait=true"), map[string]any{"points": pts}, nil, false)
}

// turnRecord is a turn's point as a scroll returns it.
type turnRecord struct {
	Payload struct {
		Thread string `json:"thread"`
		Order  string `json:"order"`
		Turn   string `json:"turn"`
	} `json:"payload"`
}

// scrollTurns calls fn with every page of turns a filter matches; a
// missing threads collection holds none.
func (b *Backend) scrollTurns(ctx context.Context, f cond, payload []string, fn func([]turnRecord) error) error {
	var offset any
	for {
		body := map[string]any{"limit": 1000, "with_payload": payload, "with_vector": false}
		if f != nil {
			body["filter"] = f
		}
		if offset != nil {
			body["offset"] = offset
		}
		var res struct {
			Points []turnRecord `json:"points"`
			Next   any          `json:"next_page_offset"`
		}
		err := b.call(ctx, http.MethodPost, b.threadsPath("/points/scroll"), body, &res, false)
		if notFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(res.Points); err != nil {
			return err
		}
		if res.Next == nil || len(res.Points) == 0 {
			return nil
		}
		offset = res.Next
	}
}

func threadFilter(thread string) cond {
	return cond{"must": []any{cond{"key": keyThread, "match": cond{"value": thread}}}}
}

// Turns implements store.ThreadStore.
func (b *Backend) Turns(ctx context.Context, thread string, limit int) ([]store.Turn, error) {
	var recs []turnRecord
	err := b.scrollTurns(ctx, threadFilter(thread), []string{keyOrder, keyTurn}, func(rs []turnRecord) error {
		recs = append(recs, rs...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: %q", store.ErrThreadNotFound, thread)
	}
	slices.SortFunc(recs, func(x, y turnRecord) int { return strings.Compare(x.Payload.Order, y.Payload.Order) })
	skip := 0
	if limit > 0 && len(recs) > limit {
		skip = len(recs) - limit
	}
	out := make([]store.Turn, 0, len(recs)-skip)
	for i, r := range recs[skip:] {
		turn, err := store.DecodeTurn([]byte(r.Payload.Turn))
		if err != nil {
			return nil, fmt.Errorf("qdrant: thread %s: %w", thread, err)
		}
		turn.Seq = skip + i + 1
		out = append(out, turn)
	}
	return out, nil
}

// DeleteThread implements store.ThreadStore.
func (b *Backend) DeleteThread(ctx context.Context, thread string) error {
	err := b.call(ctx, http.MethodPost, b.threadsPath("/points/delete?wait=true"), map[string]any{"filter": threadFilter(thread)}, nil, false)
	if notFound(err) {
		return nil
	}
	return err
}

// ThreadIDs implements store.ThreadStore.
func (b *Backend) ThreadIDs(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	var ids []string
	err := b.scrollTurns(ctx, nil, []string{keyThread}, func(rs []turnRecord) error {
		for _, r := range rs {
			if !seen[r.Payload.Thread] {
				seen[r.Payload.Thread] = true
				ids = append(ids, r.Payload.Thread)
			}
		}
		return nil
	})
	slices.Sort(ids)
	return ids, err
}
