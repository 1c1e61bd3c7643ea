package keys

import (
	"errors"
	"log/slog"
	"sync/atomic"

	"github.com/quarry-rag/quarry/filter"
)

// Why a Guard refuses a request.
var (
	// ErrNotLoopback: the server has no keys and the caller is not on the
	// loopback interface.
	ErrNotLoopback = errors.New("this server has no API keys and answers loopback clients only")
	// ErrNoKey: the server needs a key and the request sent none.
	ErrNoKey = errors.New("this server needs an API key: send it as Authorization: Bearer KEY")
	// ErrNoActiveKey: the server needs a key and its key file holds none
	// (revoked, emptied or removed since).
	ErrNoActiveKey = errors.New("this server needs an API key, and none is active: an operator must create one")
	// ErrUnknownKey: the key is not in the file, or revoked.
	ErrUnknownKey = errors.New("the API key is unknown or revoked")
)

// Guard is the one rule every Quarry HTTP surface (quarry serve, quarry
// mcp --http) admits requests by. Keys fail closed: once the file has
// held an active key — when the guard was made or at any request since —
// every request needs one, for the rest of the guard's life; a file that
// empties or disappears then refuses everyone (and says so once in the
// log) instead of falling back to keyless full rights. Without keys only
// loopback callers are admitted. It is safe for concurrent use.
type Guard struct {
	kf    *File
	log   *slog.Logger
	keyed atomic.Bool
	lost  atomic.Bool // the file was seen without an active key; logged once per loss
}

// NewGuard guards with kf (nil: never keyed, loopback only).
func NewGuard(kf *File, log *slog.Logger) *Guard {
	if log == nil {
		log = slog.Default()
	}
	g := &Guard{kf: kf, log: log}
	g.keyed.Store(kf != nil && kf.Active())
	return g
}

// Keyed reports whether requests need a key; once true it stays true.
func (g *Guard) Keyed() bool {
	if g.keyed.Load() {
		return true
	}
	if g.kf != nil && g.kf.Active() && g.keyed.CompareAndSwap(false, true) {
		g.log.Info("keys: a key was created; every request now needs a key")
	}
	return g.keyed.Load()
}

// Admit decides a request from its remote address and the token it sent
// ("" for none): the key, with keyed true, or keyed false for a keyless
// loopback caller; an error above otherwise.
func (g *Guard) Admit(remote, token string) (k Key, keyed bool, err error) {
	if !g.Keyed() {
		if !LoopbackPeer(remote) {
			return Key{}, false, ErrNotLoopback
		}
		return Key{}, false, nil
	}
	if !g.kf.Active() {
		if g.lost.CompareAndSwap(false, true) {
			g.log.Error("keys: the key file holds no active key (revoked, emptied or removed); every request is refused until a key is created", "file", g.kf.Path())
		}
		return Key{}, true, ErrNoActiveKey
	}
	g.lost.Store(false)
	if token == "" {
		return Key{}, true, ErrNoKey
	}
	k, ok := g.kf.Lookup(token)
	if !ok {
		id, _ := ID(token)
		g.log.Info("keys: refused a key", "key", id)
		return Key{}, true, ErrUnknownKey
	}
	return k, true, nil
}

// FilterPolicy is what the filters of a request made with k may hold:
// raw fragments when the surface allows them for everyone or the key was
// granted them.
func (k Key) FilterPolicy(surfaceAllowsRaw bool) filter.RequestPolicy {
	return filter.RequestPolicy{AllowRaw: surfaceAllowsRaw || k.AllowRawFilters}
}
