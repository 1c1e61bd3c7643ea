package quarry

import (
	"context"
	"sync"
)

// callerSlots bounds the store work each caller (Scope.Owner, an API
// key's id) runs at once, search.caller_concurrency each: a caller's
// further requests wait for one of its own to end, so no caller can hold
// every connection a server store has while the others wait.
type callerSlots struct {
	mu sync.Mutex
	// slots holds each caller's semaphore; callers are the operator's
	// keys, so it stays as small as the key file. Guarded by mu.
	slots map[string]chan struct{}
}

// hold takes one of the caller's slots, waiting while ctx allows; trusted
// callers (no Owner) are not bounded. release gives it back.
func (kb *KB) hold(ctx context.Context, sc Scope) (release func(), err error) {
	if sc.Owner == "" {
		return func() {}, nil
	}
	cs := &kb.callers
	cs.mu.Lock()
	if cs.slots == nil {
		cs.slots = map[string]chan struct{}{}
	}
	ch, ok := cs.slots[sc.Owner]
	if !ok {
		ch = make(chan struct{}, max(1, kb.cfg.Search.CallerConcurrency))
		cs.slots[sc.Owner] = ch
	}
	cs.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
