package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
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

// storedTurn is a turn as EncodeTurn writes it; Data is kept as text so it
// comes back byte for byte.
type storedTurn struct {
	Role    string    `json:"role"`
	Content string    `json:"content"`
	Data    *string   `json:"data,omitempty"`
	Created time.Time `json:"created"`
}

// EncodeTurn is a turn as JSON, for stores that keep a turn as one text
// value; its Seq is not kept (a store numbers turns when they are read).
func EncodeTurn(t Turn) ([]byte, error) {
	st := storedTurn{Role: t.Role, Content: t.Content, Created: t.Created}
	if t.Data != nil {
		d := string(t.Data)
		st.Data = &d
	}
	b, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("%w: turn: %v", ErrInvalidRequest, err)
	}
	return b, nil
}

// DecodeTurn reads what EncodeTurn wrote; Seq is 0.
func DecodeTurn(b []byte) (Turn, error) {
	var st storedTurn
	if err := json.Unmarshal(b, &st); err != nil {
		return Turn{}, fmt.Errorf("stored turn: %w", err)
	}
	t := Turn{Role: st.Role, Content: st.Content, Created: st.Created}
	if st.Data != nil {
		t.Data = json.RawMessage(*st.Data)
	}
	return t, nil
}

// TurnOrder makes keys that sort in the order appends started, for stores
// that order a thread's turns by a key: the start in nanoseconds (forced
// to grow within a process), then random bytes, so that appends from two
// processes never collide. The zero value is ready to use.
type TurnOrder struct {
	mu   sync.Mutex
	last int64
}

// Next is the key of an append starting now.
func (o *TurnOrder) Next() (string, error) {
	now := time.Now().UnixNano()
	o.mu.Lock()
	if now <= o.last {
		now = o.last + 1
	}
	o.last = now
	o.mu.Unlock()
	var r [8]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", fmt.Errorf("turn order key: %w", err)
	}
	return fmt.Sprintf("%020d-%s", now, hex.EncodeToString(r[:])), nil
}

// KeptTurn is a turn as a store without ordered reads keeps it: the order
// key TurnOrder gave its append (with its place in the append after it)
// and its body as EncodeTurn wrote it.
type KeptTurn struct {
	Order string
	Body  []byte
}

// LastTurns is Turns for such a store: the thread's turns in order-key
// order, the newest limit of them (all when limit ≤ 0), decoded and
// numbered from 1 by their place in the whole thread; ErrThreadNotFound
// when there are none.
func LastTurns(thread string, kept []KeptTurn, limit int) ([]Turn, error) {
	if len(kept) == 0 {
		return nil, fmt.Errorf("%w: %q", ErrThreadNotFound, thread)
	}
	slices.SortFunc(kept, func(x, y KeptTurn) int { return strings.Compare(x.Order, y.Order) })
	skip := 0
	if limit > 0 && len(kept) > limit {
		skip = len(kept) - limit
	}
	out := make([]Turn, 0, len(kept)-skip)
	for i, k := range kept[skip:] {
		turn, err := DecodeTurn(k.Body)
		if err != nil {
			return nil, fmt.Errorf("thread %s: %w", thread, err)
		}
		turn.Seq = skip + i + 1
		out = append(out, turn)
	}
	return out, nil
}
