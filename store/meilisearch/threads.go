package meilisearch

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/quarry-rag/quarry/store"
)

// Conversation threads live in one index beside the knowledge-base
// indexes, PREFIX-threads: its name has no "_" after the prefix, so it can
// never be a Quarry collection's. Each turn is a document holding its
// thread (hex-encoded, a filterable attribute), an ordering key and the
// turn as JSON.
const (
	fThread = "thread"
	fOrder  = "order"
	fTurn   = "turn"
)

func (b *Backend) threads() *collection { return &collection{uid: b.prefix + "-threads"} }

// ensureThreads creates the threads index once per backend; another
// process creating it first is no error.
func (b *Backend) ensureThreads(ctx context.Context) error {
	b.mu.Lock()
	ready := b.threadsReady
	b.mu.Unlock()
	if ready {
		return nil
	}
	uid := b.threads().uid
	_, err := b.write(ctx, http.MethodPost, "/indexes", map[string]any{"uid": uid, "primaryKey": "id"})
	if err != nil && !isCode(err, "index_already_exists") {
		return fmt.Errorf("meilisearch: threads index: %w", err)
	}
	if _, err := b.write(ctx, http.MethodPatch, idxPath(uid, "/settings"), map[string]any{
		"filterableAttributes": []string{fThread}, "searchableAttributes": []string{fThread}}); err != nil {
		return fmt.Errorf("meilisearch: threads index: %w", err)
	}
	b.mu.Lock()
	b.threadsReady = true
	b.mu.Unlock()
	return nil
}

// AppendTurns implements store.ThreadStore: the turns are one document
// addition. A turn's number is its place in the thread, ordered by the
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
	docs := make([]map[string]any, len(turns))
	for i, turn := range turns {
		body, err := store.EncodeTurn(turn)
		if err != nil {
			return fmt.Errorf("turn %d: %w", i, err)
		}
		order := fmt.Sprintf("%s-%06d", base, i)
		docs[i] = map[string]any{"id": docID("turn", thread+"\x1f"+order), fThread: hexs(thread), fOrder: order, fTurn: string(body)}
	}
	return b.addDocs(ctx, b.threads(), docs)
}

// turnRecord is a turn as a fetch returns it.
type turnRecord struct {
	Thread string `json:"thread"`
	Order  string `json:"order"`
	Turn   string `json:"turn"`
}

// fetchTurns calls fn with every turn a filter matches (all when empty);
// a missing threads index holds none.
func (b *Backend) fetchTurns(ctx context.Context, fb string, fn func(turnRecord)) error {
	c := b.threads()
	for offset := 0; ; offset += fetchPage {
		var res struct {
			Results []turnRecord `json:"results"`
			Total   int          `json:"total"`
		}
		body := map[string]any{"offset": offset, "limit": fetchPage}
		if fb != "" {
			body["filter"] = fb
		}
		err := b.call(ctx, http.MethodPost, idxPath(c.uid, "/documents/fetch"), body, &res)
		if isCode(err, "index_not_found") {
			return nil
		}
		if err != nil {
			return err
		}
		for _, r := range res.Results {
			fn(r)
		}
		if len(res.Results) < fetchPage || offset+fetchPage >= res.Total {
			return nil
		}
	}
}

// Turns implements store.ThreadStore.
func (b *Backend) Turns(ctx context.Context, thread string, limit int) ([]store.Turn, error) {
	var kept []store.KeptTurn
	err := b.fetchTurns(ctx, fThread+" = "+literal(thread), func(r turnRecord) {
		kept = append(kept, store.KeptTurn{Order: r.Order, Body: []byte(r.Turn)})
	})
	if err != nil {
		return nil, err
	}
	return store.LastTurns(thread, kept, limit)
}

// DeleteThread implements store.ThreadStore.
func (b *Backend) DeleteThread(ctx context.Context, thread string) error {
	_, err := b.write(ctx, http.MethodPost, idxPath(b.threads().uid, "/documents/delete"), map[string]any{"filter": fThread + " = " + literal(thread)})
	if isCode(err, "index_not_found") {
		return nil
	}
	return err
}

// ThreadIDs implements store.ThreadStore.
func (b *Backend) ThreadIDs(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	var ids []string
	err := b.fetchTurns(ctx, "", func(r turnRecord) {
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
