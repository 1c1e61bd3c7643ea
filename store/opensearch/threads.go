package opensearch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/quarry-rag/quarry/store"
)

// Conversation threads live in one index beside the collections',
// PREFIX.threads ("." cannot appear in a collection name). Each turn is a
// document holding its thread, an ordering key and the turn as JSON.
func (b *Backend) threadsIndex() string { return b.prefix + ".threads" }

// ensureThreads creates the threads index once per backend; another
// process creating it first is no error.
func (b *Backend) ensureThreads(ctx context.Context) error {
	b.mu.Lock()
	ready := b.threadsReady
	b.mu.Unlock()
	if ready {
		return nil
	}
	body := map[string]any{"mappings": map[string]any{"dynamic": "strict", "properties": map[string]any{
		"thread": keywordField(), "order": keywordField(), "turn": storedField(),
	}}}
	err := b.call(ctx, http.MethodPut, "/"+esc(b.threadsIndex()), body, nil)
	if ae, ok := err.(*apiError); ok && ae.Type == "resource_already_exists_exception" {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("opensearch: threads index: %w", err)
	}
	b.mu.Lock()
	b.threadsReady = true
	b.mu.Unlock()
	return nil
}

// AppendTurns implements store.ThreadStore: the turns are one bulk
// request. A turn's number is its place in the thread, ordered by the
// start of the append that wrote it, then by its order within it, and
// numbered from 1 when read.
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
	var bk bulk
	for i, turn := range turns {
		body, err := store.EncodeTurn(turn)
		if err != nil {
			return fmt.Errorf("turn %d: %w", i, err)
		}
		order := fmt.Sprintf("%s-%06d", base, i)
		if err := bk.index(b.threadsIndex(), docID(thread+"\x1f"+order), map[string]any{"thread": thread, "order": order, "turn": string(body)}); err != nil {
			return err
		}
	}
	return b.send(ctx, &bk)
}

type turnSource struct {
	Thread string `json:"thread"`
	Turn   string `json:"turn"`
}

// turns calls fn with every turn matching q, in order; a missing threads
// index holds none.
func (b *Backend) turns(ctx context.Context, q clause, fn func(turnSource) error) error {
	err := b.sorted(ctx, b.threadsIndex(), q, "order", true, "", 0, func(h searchHit) error {
		var ts turnSource
		if err := json.Unmarshal(h.Source, &ts); err != nil {
			return fmt.Errorf("opensearch: turn %s: %w", h.ID, err)
		}
		return fn(ts)
	})
	if notFound(err) {
		return nil
	}
	return err
}

func threadQuery(thread string) clause { return clause{"term": clause{"thread": thread}} }

// Turns implements store.ThreadStore.
func (b *Backend) Turns(ctx context.Context, thread string, limit int) ([]store.Turn, error) {
	var all []store.Turn
	err := b.turns(ctx, threadQuery(thread), func(ts turnSource) error {
		turn, err := store.DecodeTurn([]byte(ts.Turn))
		if err != nil {
			return fmt.Errorf("opensearch: thread %s: %w", thread, err)
		}
		turn.Seq = len(all) + 1
		all = append(all, turn)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("%w: %q", store.ErrThreadNotFound, thread)
	}
	if limit > 0 && len(all) > limit {
		all = all[len(all)-limit:]
	}
	return all, nil
}

// DeleteThread implements store.ThreadStore.
func (b *Backend) DeleteThread(ctx context.Context, thread string) error {
	err := b.call(ctx, http.MethodPost, "/"+esc(b.threadsIndex())+"/_delete_by_query?refresh=true&conflicts=proceed",
		map[string]any{"query": threadQuery(thread)}, nil)
	if notFound(err) {
		return nil
	}
	return err
}

// ThreadIDs implements store.ThreadStore.
func (b *Backend) ThreadIDs(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	var ids []string
	err := b.turns(ctx, nil, func(ts turnSource) error {
		if !seen[ts.Thread] {
			seen[ts.Thread] = true
			ids = append(ids, ts.Thread)
		}
		return nil
	})
	slices.Sort(ids)
	return ids, err
}

var _ store.ThreadStore = (*Backend)(nil)
