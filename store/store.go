// Package store is Quarry's storage contract. A Store holds named
// collections; a Collection stores documents and searches them by vector,
// by keywords or both, under portable filters.
//
// The design follows database/sql: *Store and *Collection are concrete types
// that own every rule of SEMANTICS §1–2 and §5 (validation before I/O, scope
// handling, top-k, ordering, hybrid fusion), and backends implement the small
// Backend interface and register themselves by URL scheme:
//
//	s, err := store.Open(ctx, "memory:")            // or "embedded:./.quarry", "postgres://…"
//	docs, err := s.EnsureCollection(ctx, store.CollectionConfig{Name: "handbook", Model: m})
//	hits, err := docs.Search(ctx, store.SearchRequest{Embedding: v, Filter: f, TopK: 8})
//
// Backends that can fuse in the engine implement HybridSearcher; for the
// others the Collection fuses two searches itself.
package store

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/filter"
)

// Errors callers branch on; they are returned wrapped with context.
var (
	ErrCollectionNotFound = errors.New("collection not found")
	ErrCollectionExists   = errors.New("collection already exists")
	ErrModelMismatch      = errors.New("embedding model does not match the collection")
	ErrSchemaMismatch     = errors.New("schema does not match the collection")
	ErrInvalidRequest     = errors.New("invalid request")
	ErrUnsupported        = errors.New("not supported by this store")
	ErrClosed             = errors.New("store is closed")
)

// DefaultTopK is the number of results a search returns when TopK is 0.
const DefaultTopK = 10

// MaxTopK bounds a search so one request cannot ask a store for everything.
const MaxTopK = 10000

// CollectionConfig describes a collection. It is fixed at creation: a
// different model or schema for the same name is an error, never silently
// accepted.
type CollectionConfig struct {
	// Name is 1–48 characters of lowercase ASCII letters, digits, "_" and "-",
	// starting with a letter or digit: safe as a table or index name in every
	// backend.
	Name string `json:"name"`
	// Schema declares metadata fields; nil declares none (only sourceType and
	// sourceName can then be filtered).
	Schema *document.Schema `json:"schema,omitempty"`
	// Model identifies the embedding model; every stored vector has its
	// dimension.
	Model embed.ModelInfo `json:"model"`
	// Language selects the keyword analyzer ("english" when empty).
	Language string `json:"language,omitempty"`
}

var collectionNameRE = regexp.MustCompile(`\A[a-z0-9][a-z0-9_-]{0,47}\z`)

// Uncollected is the reserved collection of documents without a
// collection of their own: where a program that never names one keeps
// them (as rows without a collection id are elsewhere). No other
// collection can take its name, since names start with a letter or digit;
// the empty name never stands for it; and a handle on it selects its
// documents only, never every collection's. Ids are unique per collection,
// so an uncollected "x" and a collection's "x" are two documents.
const Uncollected = "_uncollected"

// Check validates the configuration.
func (c CollectionConfig) Check() error {
	if c.Name == "" {
		return fmt.Errorf("%w: the empty collection name is reserved: name a collection, or use %q (store.Uncollected) for documents without one", ErrInvalidRequest, Uncollected)
	}
	if c.Name != Uncollected && !collectionNameRE.MatchString(c.Name) {
		return fmt.Errorf("%w: collection name %q must be 1-48 lowercase letters, digits, '_' or '-', starting with a letter or digit", ErrInvalidRequest, c.Name)
	}
	if err := c.Model.Check(); err != nil {
		return fmt.Errorf("%w: collection %q: %v", ErrInvalidRequest, c.Name, err)
	}
	if c.Schema != nil {
		if err := c.Schema.Check(); err != nil {
			return fmt.Errorf("%w: collection %q: %v", ErrInvalidRequest, c.Name, err)
		}
	}
	return nil
}

// Mode selects the retrieval branch(es) of a search.
type Mode string

// Search modes.
const (
	// ModeAuto picks vector when only an embedding is given, keyword when
	// only a query is given, hybrid when both are.
	ModeAuto    Mode = ""
	ModeVector  Mode = "vector"
	ModeKeyword Mode = "keyword"
	ModeHybrid  Mode = "hybrid"
)

// FusionMethod selects how hybrid search combines its branches.
type FusionMethod string

// Fusion methods.
const (
	// FusionRRF is weighted reciprocal rank fusion: Σ weight/(k + rank).
	FusionRRF FusionMethod = "rrf"
	// FusionConvex is a convex combination of min–max-normalised scores:
	// alpha·vector + (1−alpha)·keyword.
	FusionConvex FusionMethod = "convex"
)

// Fusion configures hybrid search. Zero values mean the defaults.
type Fusion struct {
	// Method is FusionRRF when empty.
	Method FusionMethod `json:"method,omitempty"`
	// K is the RRF constant, 60 when 0.
	K int `json:"k,omitempty"`
	// VectorWeight and KeywordWeight weight each branch in RRF, 1.0 when 0;
	// they are used as given, not normalised.
	VectorWeight  float64 `json:"vectorWeight,omitempty"`
	KeywordWeight float64 `json:"keywordWeight,omitempty"`
	// Alpha weights the vector branch in convex fusion, 0.5 when 0; use
	// ModeKeyword for a pure keyword search.
	Alpha float64 `json:"alpha,omitempty"`
}

// SearchRequest is one search over a collection.
type SearchRequest struct {
	// Embedding is the query vector (vector and hybrid modes).
	Embedding []float32
	// Query is the query text (keyword and hybrid modes).
	Query string
	// Mode chooses the branches; ModeAuto infers it from what is given.
	Mode Mode
	// Filter restricts candidates before ranking; nil means none.
	Filter filter.Expr
	// TopK is the number of results, DefaultTopK when 0; negative is an error.
	TopK int
	// Fusion configures hybrid search.
	Fusion Fusion
	// Explain asks for each result's per-branch rank and score.
	Explain bool
	// Vectors asks for each hit's embedding. Without it a store may leave
	// Doc.Embedding nil: the embedded store then never reads the vector
	// blobs, which is most of what a search through it would read.
	Vectors bool
}

// PlainRRF reports whether a hybrid request is unweighted RRF without
// explanations: what an engine's own rank fusion can compute with Quarry's
// scores, so a store may hand the fusion to the engine.
func (r SearchRequest) PlainRRF() bool {
	return r.Fusion.Method == FusionRRF && !r.Explain && r.Fusion.VectorWeight == 1 && r.Fusion.KeywordWeight == 1
}

// Hit is one search result. Doc.Score holds the result's score: cosine
// similarity (vector), BM25 (keyword) or the fused score (hybrid).
type Hit struct {
	Doc     *document.Document
	Explain *Explanation
}

// Explanation tells how a hybrid score was made. A branch that did not
// return the document is nil.
type Explanation struct {
	Vector  *BranchScore `json:"vector,omitempty"`
	Keyword *BranchScore `json:"keyword,omitempty"`
	Fusion  FusionMethod `json:"fusion,omitempty"`
}

// BranchScore is a document's 1-based rank and raw score in one branch.
type BranchScore struct {
	Rank  int     `json:"rank"`
	Score float64 `json:"score"`
}

// Backend is what a storage engine implements: the collections it holds
// (Admin), the writes (Writer) and the reads (Searcher). *Store and
// *Collection validate every argument before calling it: a backend
// receives documents that passed schema validation, filters that passed
// Validate, vectors of the collection's dimension and a positive k.
// Backends return results with Score set, ordered by score descending then
// id ascending.
type Backend interface {
	Admin
	Writer
	Searcher
	// Dialect names the raw filter fragments the backend runs ("postgres",
	// "qdrant", …); "" for backends that evaluate filters in process and
	// accept none.
	Dialect() string
	Close() error
}

// Admin manages a backend's collections.
type Admin interface {
	CreateCollection(ctx context.Context, cfg CollectionConfig) error
	// LoadCollection returns ErrCollectionNotFound for an unknown name.
	LoadCollection(ctx context.Context, name string) (CollectionConfig, error)
	ListCollections(ctx context.Context) ([]CollectionConfig, error)
	DropCollection(ctx context.Context, name string) error
}

// Writer changes a collection's documents.
type Writer interface {
	// Upsert writes all documents or none.
	Upsert(ctx context.Context, coll string, docs []*document.Document) error
	// Delete removes the documents matching f and returns how many.
	Delete(ctx context.Context, coll string, f filter.Expr) (int, error)
}

// Searcher reads a collection's documents.
type Searcher interface {
	// Get returns the stored documents with these ids, in the order of ids,
	// skipping ids that are not stored.
	Get(ctx context.Context, coll string, ids []string) ([]*document.Document, error)
	// Count counts the documents matching f (all when nil).
	Count(ctx context.Context, coll string, f filter.Expr) (int, error)
	SearchVector(ctx context.Context, coll string, vec []float32, f filter.Expr, k int) ([]*document.Document, error)
	// SearchKeyword scores documents by BM25; ErrUnsupported when the
	// backend has no keyword index.
	SearchKeyword(ctx context.Context, coll string, query string, f filter.Expr, k int) ([]*document.Document, error)
}

// RequestSearcher is implemented by backends whose vector and keyword
// searches take the whole request (SearchRequest.Vectors among it); the
// request is validated and has TopK filled.
type RequestSearcher interface {
	SearchRequest(ctx context.Context, coll string, req SearchRequest) ([]*document.Document, error)
}

// HybridSearcher is implemented by backends that run hybrid search in the
// engine. The request is validated and has TopK and Fusion defaults filled.
type HybridSearcher interface {
	SearchHybrid(ctx context.Context, coll string, req SearchRequest) ([]Hit, error)
}

// IngestLocker is implemented by backends that serialise ingestions of one
// collection across processes: the second of two runs over the same folder
// waits for the first, then finds what it wrote unchanged instead of doing
// the work again. unlock releases the lock; a process that dies releases it
// too.
type IngestLocker interface {
	LockIngest(ctx context.Context, collection string) (unlock func(), err error)
}

// Driver opens a backend from the part of the URL after the scheme.
type Driver interface {
	Open(ctx context.Context, url string) (Backend, error)
}

// registry holds the drivers registered by scheme. Registration happens in
// backends' init functions, as with database/sql; nothing else mutates it.
var registry = struct {
	sync.RWMutex
	drivers map[string]Driver
}{drivers: map[string]Driver{}}

// Register makes a driver available under a URL scheme ("memory",
// "embedded", "postgres"). It panics if the scheme is taken or d is nil.
func Register(scheme string, d Driver) {
	registry.Lock()
	defer registry.Unlock()
	if d == nil {
		panic("store: Register driver is nil")
	}
	if _, dup := registry.drivers[scheme]; dup {
		panic("store: Register called twice for scheme " + scheme)
	}
	registry.drivers[scheme] = d
}

// Drivers returns the registered schemes, sorted.
func Drivers() []string {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]string, 0, len(registry.drivers))
	for s := range registry.drivers {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Open opens a store by URL: "scheme:rest" (memory:, embedded:DIR) or
// "scheme://…" (postgres://…). The backend's package must be imported for
// its driver to be registered.
func Open(ctx context.Context, url string) (*Store, error) {
	scheme, _, ok := strings.Cut(url, ":")
	if !ok || scheme == "" {
		return nil, fmt.Errorf("open store %q: expected scheme:location (one of %s)", url, strings.Join(Drivers(), ", "))
	}
	if scheme == "postgresql" {
		scheme = "postgres"
	}
	registry.RLock()
	d, found := registry.drivers[scheme]
	registry.RUnlock()
	if !found {
		return nil, fmt.Errorf("open store %q: unknown store %q (known: %s)", url, scheme, strings.Join(Drivers(), ", "))
	}
	b, err := d.Open(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", scheme, err)
	}
	return New(b), nil
}

// New wraps a backend. Most callers use Open.
func New(b Backend) *Store { return &Store{b: b} }

// Store is a set of collections on one backend. It is safe for concurrent
// use.
type Store struct {
	b Backend

	mu     sync.Mutex // guards closed
	closed bool
}

// Backend returns the underlying backend, for its optional capabilities.
func (s *Store) Backend() Backend { return s.b }

// CreateCollection creates a collection; ErrCollectionExists if the name is
// taken.
func (s *Store) CreateCollection(ctx context.Context, cfg CollectionConfig) (*Collection, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if err := s.b.CreateCollection(ctx, cfg); err != nil {
		return nil, fmt.Errorf("create collection %q: %w", cfg.Name, err)
	}
	return s.Collection(ctx, cfg.Name)
}

// Collection opens an existing collection; ErrCollectionNotFound if absent.
func (s *Store) Collection(ctx context.Context, name string) (*Collection, error) {
	cfg, err := s.b.LoadCollection(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("collection %q: %w", name, err)
	}
	return &Collection{s: s, cfg: cfg}, nil
}

// EnsureCollection opens the named collection, creating it when absent. An
// existing collection must have the same embedding model
// (ErrModelMismatch) and the same schema (ErrSchemaMismatch).
func (s *Store) EnsureCollection(ctx context.Context, cfg CollectionConfig) (*Collection, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	c, err := s.Collection(ctx, cfg.Name)
	if errors.Is(err, ErrCollectionNotFound) {
		c, err = s.CreateCollection(ctx, cfg)
		if errors.Is(err, ErrCollectionExists) { // lost a race with another creator
			c, err = s.Collection(ctx, cfg.Name)
		}
	}
	if err != nil {
		return nil, err
	}
	if c.cfg.Model != cfg.Model {
		return nil, fmt.Errorf("%w: collection %q was built with %s; you asked for %s: re-ingest into a new collection or use the collection's embedder",
			ErrModelMismatch, cfg.Name, c.cfg.Model, cfg.Model)
	}
	if !sameSchema(c.cfg.Schema, cfg.Schema) {
		return nil, fmt.Errorf("%w: collection %q has a different schema; create a new collection to change it", ErrSchemaMismatch, cfg.Name)
	}
	return c, nil
}

func sameSchema(a, b *document.Schema) bool {
	var fa, fb []document.Field
	if a != nil {
		fa = a.Fields
	}
	if b != nil {
		fb = b.Fields
	}
	if len(fa) != len(fb) {
		return false
	}
	for i := range fa {
		if fa[i] != fb[i] {
			return false
		}
	}
	return true
}

// Collections lists the collections, sorted by name.
func (s *Store) Collections(ctx context.Context) ([]CollectionConfig, error) {
	cs, err := s.b.ListCollections(ctx)
	if err != nil {
		return nil, fmt.Errorf("list collections: %w", err)
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
	return cs, nil
}

// DropCollection deletes a collection and all its documents.
func (s *Store) DropCollection(ctx context.Context, name string) error {
	if err := s.b.DropCollection(ctx, name); err != nil {
		return fmt.Errorf("drop collection %q: %w", name, err)
	}
	return nil
}

// Close closes the backend; later calls return nil.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.b.Close()
}
