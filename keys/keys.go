// Package keys holds Quarry's API keys: each a permission, the collections
// it reaches, a mandatory filter merged by AND into everything it does, and
// a rate limit, stored by hash in a file the servers re-read as it changes.
// The HTTP server and the MCP server's HTTP transport both take them.
package keys

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/quarry-rag/quarry/filter"
)

// Permission is what a key may do. Each level includes the ones below.
type Permission string

// Permissions.
const (
	// PermRead searches, asks, follows jobs and keeps the key's own threads.
	PermRead Permission = "read"
	// PermWrite also adds, uploads and deletes documents.
	PermWrite Permission = "write"
	// PermAdmin also creates and drops collections, ingests folders on
	// the server and lists every job.
	PermAdmin Permission = "admin"
)

func (p Permission) level() int {
	switch p {
	case PermRead:
		return 1
	case PermWrite:
		return 2
	case PermAdmin:
		return 3
	}
	return 0
}

// Allows reports whether p includes q.
func (p Permission) Allows(q Permission) bool { return p.level() >= q.level() && q.level() > 0 }

// ParsePermission checks a permission name.
func ParsePermission(s string) (Permission, error) {
	p := Permission(strings.ToLower(strings.TrimSpace(s)))
	if p.level() == 0 {
		return "", fmt.Errorf("permission %q is not one of read, write, admin", s)
	}
	return p, nil
}

// Key is an API key as stored: its secret only as a SHA-256 hash. Keys are
// 32 random bytes, so a fast hash is as safe as a slow one.
type Key struct {
	// ID names the key in logs, lists and revocation; it is not secret.
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// Hash is the hex SHA-256 of the whole key.
	Hash       string     `json:"hash"`
	Permission Permission `json:"permission"`
	// Collections the key reaches; empty means all.
	Collections []string `json:"collections,omitempty"`
	// Profiles limits the key to these agent profiles: it searches and
	// asks only through one of them (quarry.Scope.Profiles); empty means
	// no limit.
	Profiles []string `json:"profiles,omitempty"`
	// Filter is the mandatory filter in canonical JSON, merged by AND into
	// every search, answer and delete; empty means none.
	Filter string `json:"filter,omitempty"`
	// RateLimit is the key's requests per second; 0 means the server's
	// default.
	RateLimit float64 `json:"rate_limit,omitempty"`
	// AllowRawFilters lets this key's filters carry raw, store-tagged
	// fragments; they are still merged under Filter, so they only narrow.
	AllowRawFilters bool      `json:"allow_raw_filters,omitempty"`
	Created         time.Time `json:"created"`
	Revoked         time.Time `json:"revoked,omitzero"`
}

// keyPrefix starts every key, so a leaked one is easy to recognise.
const keyPrefix = "qk_"

// File keeps keys in a JSON file (keys.json in the knowledge base),
// readable by its owner only. A server re-reads it when it changes, so a
// key created or revoked from the command line takes effect within a
// second. It is safe for concurrent use.
type File struct {
	path string

	mu      sync.Mutex
	keys    []Key
	modTime time.Time
	checked time.Time
}

// Open opens the key file at path; a missing file holds no keys.
func Open(path string) (*File, error) {
	kf := &File{path: path}
	kf.mu.Lock()
	defer kf.mu.Unlock()
	if err := kf.reload(true); err != nil {
		return nil, err
	}
	return kf, nil
}

// reload re-reads the file when its modification time changed; at most
// once a second unless force.
func (kf *File) reload(force bool) error {
	now := time.Now()
	if !force && now.Sub(kf.checked) < time.Second {
		return nil
	}
	kf.checked = now
	st, err := os.Stat(kf.path)
	if errors.Is(err, os.ErrNotExist) {
		kf.keys, kf.modTime = nil, time.Time{}
		return nil
	}
	if err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	if !force && st.ModTime().Equal(kf.modTime) {
		return nil
	}
	b, err := os.ReadFile(kf.path)
	if err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	var doc struct {
		Keys []Key `json:"keys"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("keys: %s: %w", kf.path, err)
	}
	kf.keys, kf.modTime = doc.Keys, st.ModTime()
	return nil
}

func (kf *File) save() error {
	b, err := json.MarshalIndent(struct {
		Keys []Key `json:"keys"`
	}{kf.keys}, "", "  ")
	if err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(kf.path), 0o755); err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(kf.path), ".keys-*.json")
	if err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("keys: %w", err)
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("keys: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	if err := os.Rename(tmp.Name(), kf.path); err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	kf.checked = time.Time{}
	return kf.reload(true)
}

// Spec is what a new key may do.
type Spec struct {
	Name        string
	Permission  Permission
	Collections []string
	// Profiles limits the key to these agent profiles (Key.Profiles).
	Profiles []string
	// Filter is the mandatory filter in any syntax; "" for none.
	Filter    string
	RateLimit float64
	// AllowRawFilters grants the key raw filter fragments (Key.AllowRawFilters).
	AllowRawFilters bool
}

// Create makes a key and returns its record and the secret, which is shown
// once and never stored.
func (kf *File) Create(spec Spec) (Key, string, error) {
	if spec.Permission.level() == 0 {
		return Key{}, "", fmt.Errorf("keys: permission %q is not one of read, write, admin", spec.Permission)
	}
	if spec.RateLimit < 0 {
		return Key{}, "", fmt.Errorf("keys: the rate limit must be positive, got %g", spec.RateLimit)
	}
	var canon string
	if strings.TrimSpace(spec.Filter) != "" {
		f, err := filter.Parse(spec.Filter)
		if err != nil {
			return Key{}, "", fmt.Errorf("keys: the key's filter: %w", err)
		}
		if canon, err = filter.Format(f); err != nil {
			return Key{}, "", fmt.Errorf("keys: the key's filter: %w", err)
		}
	}
	var idb [6]byte
	var secret [32]byte
	if _, err := rand.Read(idb[:]); err != nil {
		return Key{}, "", fmt.Errorf("keys: %w", err)
	}
	if _, err := rand.Read(secret[:]); err != nil {
		return Key{}, "", fmt.Errorf("keys: %w", err)
	}
	id := hex.EncodeToString(idb[:])
	token := keyPrefix + id + "_" + base64.RawURLEncoding.EncodeToString(secret[:])
	k := Key{ID: id, Name: spec.Name, Hash: hashKey(token), Permission: spec.Permission,
		Collections: slices.Clone(spec.Collections), Profiles: slices.Clone(spec.Profiles), Filter: canon, RateLimit: spec.RateLimit,
		AllowRawFilters: spec.AllowRawFilters, Created: time.Now().UTC()}
	kf.mu.Lock()
	defer kf.mu.Unlock()
	if err := kf.reload(true); err != nil {
		return Key{}, "", err
	}
	kf.keys = append(kf.keys, k)
	if err := kf.save(); err != nil {
		return Key{}, "", err
	}
	return k, token, nil
}

// List returns the keys, revoked ones included.
func (kf *File) List() ([]Key, error) {
	kf.mu.Lock()
	defer kf.mu.Unlock()
	if err := kf.reload(true); err != nil {
		return nil, err
	}
	return slices.Clone(kf.keys), nil
}

// Revoke marks a key revoked; an unknown id is an error.
func (kf *File) Revoke(id string) error {
	kf.mu.Lock()
	defer kf.mu.Unlock()
	if err := kf.reload(true); err != nil {
		return err
	}
	for i := range kf.keys {
		if kf.keys[i].ID == id {
			if kf.keys[i].Revoked.IsZero() {
				kf.keys[i].Revoked = time.Now().UTC()
			}
			return kf.save()
		}
	}
	return fmt.Errorf("keys: no key has id %q", id)
}

// Path is the key file's path.
func (kf *File) Path() string { return kf.path }

// Active reports whether any key is unrevoked.
func (kf *File) Active() bool {
	kf.mu.Lock()
	defer kf.mu.Unlock()
	_ = kf.reload(false)
	for _, k := range kf.keys {
		if k.Revoked.IsZero() {
			return true
		}
	}
	return false
}

// Lookup finds the unrevoked key a token is; false for anything else.
func (kf *File) Lookup(token string) (Key, bool) {
	id, ok := ID(token)
	if !ok {
		return Key{}, false
	}
	h := hashKey(token)
	kf.mu.Lock()
	defer kf.mu.Unlock()
	_ = kf.reload(false) // on a read error, the keys last read stay in force
	for _, k := range kf.keys {
		if k.ID == id && subtle.ConstantTimeCompare([]byte(k.Hash), []byte(h)) == 1 {
			return k, k.Revoked.IsZero()
		}
	}
	return Key{}, false
}

// ID is the id part of a token, which is safe to log.
func ID(token string) (string, bool) {
	rest, ok := strings.CutPrefix(token, keyPrefix)
	if !ok {
		return "", false
	}
	id, _, ok := strings.Cut(rest, "_")
	return id, ok && len(id) == 12
}

func hashKey(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// MayWrite reports whether the key may add, upload and delete documents.
func (k Key) MayWrite() bool { return k.Permission.Allows(PermWrite) }

// MayReachAll reports whether the key may do what reaches every document
// of the knowledge base — drop a collection, list every job, ingest the
// server's folders, read the hierarchy and metrics: an admin key without a
// filter or profiles, since they hold even an admin key to its part.
func (k Key) MayReachAll() bool {
	return k.Permission.Allows(PermAdmin) && k.Filter == "" && len(k.Profiles) == 0
}

// Scope parses the key's mandatory filter; nil when it has none.
func (k Key) Scope() (filter.Expr, error) {
	if k.Filter == "" {
		return nil, nil
	}
	f, err := filter.Parse(k.Filter)
	if err != nil {
		return nil, fmt.Errorf("keys: key %s's filter: %w", k.ID, err)
	}
	return f, nil
}

// LoopbackPeer reports whether a request's remote address is on the
// loopback interface: the only callers a server without keys answers.
func LoopbackPeer(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
