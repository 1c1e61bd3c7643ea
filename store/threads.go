package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode"
)

// ErrThreadNotFound is returned for a thread that has no turns.
var ErrThreadNotFound = errors.New("thread not found")

// MaxThreadIDLength bounds a thread id, in bytes.
const MaxThreadIDLength = 128

// Turn is one message of a conversation thread, as the store keeps it.
type Turn struct {
	// Seq numbers a thread's turns from 1; the store assigns it on append
	// and ignores the value given.
	Seq int `json:"seq"`
	// Role is who spoke: "user" or "assistant".
	Role    string `json:"role"`
	Content string `json:"content"`
	// Data is JSON the caller keeps beside the turn (an answer's citations),
	// returned byte for byte; nil when there is none.
	Data    json.RawMessage `json:"data,omitempty"`
	Created time.Time       `json:"created"`
}

// ThreadStore is implemented by backends that keep conversation threads.
// A thread exists once it has a turn.
type ThreadStore interface {
	// AppendTurns adds turns to the end of a thread, all or none, creating
	// the thread when it is new.
	AppendTurns(ctx context.Context, thread string, turns []Turn) error
	// Turns returns a thread's last limit turns (all when limit ≤ 0), oldest
	// first; ErrThreadNotFound for a thread without turns.
	Turns(ctx context.Context, thread string, limit int) ([]Turn, error)
	// DeleteThread removes a thread's turns; an unknown thread is no error.
	DeleteThread(ctx context.Context, thread string) error
	// ThreadIDs lists the threads that have turns, sorted (a copy walks
	// them).
	ThreadIDs(ctx context.Context) ([]string, error)
}

// Threads returns the store's conversation threads, or ErrUnsupported.
func (s *Store) Threads() (ThreadStore, error) {
	ts, ok := s.b.(ThreadStore)
	if !ok {
		return nil, fmt.Errorf("%w: this store does not keep conversation threads", ErrUnsupported)
	}
	return ts, nil
}

// CheckThreadID reports whether id can name a thread: 1 to
// MaxThreadIDLength bytes of printable characters without spaces, so it
// is safe in a URL path, a log line and as a source name.
func CheckThreadID(id string) error {
	if id == "" || len(id) > MaxThreadIDLength {
		return fmt.Errorf("%w: a thread id is 1-%d bytes, got %d", ErrInvalidRequest, MaxThreadIDLength, len(id))
	}
	for _, r := range id {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) || r == '/' || r == '\\' || r == unicode.ReplacementChar {
			return fmt.Errorf("%w: thread id %q may hold no spaces, slashes or control characters", ErrInvalidRequest, id)
		}
	}
	return nil
}
