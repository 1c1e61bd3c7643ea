package memory

import (
	"context"
	"slices"

	"github.com/quarry-rag/quarry/store"
)

// AppendTurns implements store.ThreadStore.
func (b *Backend) AppendTurns(_ context.Context, thread string, turns []store.Turn) error {
	if err := store.CheckThreadID(thread); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return store.ErrClosed
	}
	if b.threads == nil {
		b.threads = map[string][]store.Turn{}
	}
	have := b.threads[thread]
	for _, t := range turns {
		t.Seq = len(have) + 1
		t.Data = slices.Clone(t.Data)
		have = append(have, t)
	}
	b.threads[thread] = have
	return nil
}

// Turns implements store.ThreadStore.
func (b *Backend) Turns(_ context.Context, thread string, limit int) ([]store.Turn, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	have := b.threads[thread]
	if len(have) == 0 {
		return nil, store.ErrThreadNotFound
	}
	if limit > 0 && len(have) > limit {
		have = have[len(have)-limit:]
	}
	out := make([]store.Turn, len(have))
	for i, t := range have {
		t.Data = slices.Clone(t.Data)
		out[i] = t
	}
	return out, nil
}

// ThreadIDs implements store.ThreadStore.
func (b *Backend) ThreadIDs(context.Context) ([]string, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]string, 0, len(b.threads))
	for id, turns := range b.threads {
		if len(turns) > 0 {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out, nil
}

// DeleteThread implements store.ThreadStore.
func (b *Backend) DeleteThread(_ context.Context, thread string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return store.ErrClosed
	}
	delete(b.threads, thread)
	return nil
}

var _ store.ThreadStore = (*Backend)(nil)
