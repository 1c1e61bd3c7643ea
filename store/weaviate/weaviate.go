// Package weaviate is Quarry's store on Weaviate, a distributed vector
// database that shards and replicates: the store for knowledge bases that
// outgrow one machine.
//
// Each collection is a Weaviate class (Quarry_<name>) holding one object per
// chunk version: the chunk id, its source, Quarry's keyword terms, the
// document as JSON, and one typed property per filterable schema field
// ("m_" + the field name), so filters compile to Weaviate where filters.
// Keyword search runs Weaviate's BM25 over terms made by Quarry's own
// analyzer (the embedded store's stemming and stop words); vector search
// is nearVector with cosine distance; hybrid search runs both branches in
// one GraphQL request and fuses them with Quarry's fusion (SEMANTICS §5).
//
// Weaviate writes object by object. Quarry's contract is stronger: a batch
// is visible whole or not at all, and a source is replaced whole. The store
// gets that by versioning (see txn.go): each write is a transaction whose
// objects carry its id; a record object is its commit point; readers
// filter by the records, so they never see part of a batch.
//
// The package speaks plain REST and GraphQL with net/http rather than the
// official Go client: the few calls it needs are small, the wire format is
// then explicit and checked against Weaviate's published OpenAPI document,
// and the module does not pull in the client's gRPC and OpenAPI runtime.
//
// URL: weaviate://[:API_KEY@]host:port[?consistency=QUORUM&replicas=N&shards=N&prefix=Quarry&hybrid=weaviate&tls=1].
// Importing the package registers the "weaviate" scheme.
package weaviate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/store"
)

func init() { store.Register("weaviate", driver{}) }

type driver struct{}

func (driver) Open(ctx context.Context, url string) (store.Backend, error) {
	return Open(ctx, url)
}

// Options configure a Backend; Open reads them from the URL.
type Options struct {
	// Consistency is the replication consistency level of reads and
	// writes: ONE, QUORUM (the default) or ALL.
	Consistency string
	// Replicas is the replication factor of new classes (1 when 0).
	Replicas int
	// Shards is the number of shards of new classes (Weaviate's default,
	// one per node, when 0).
	Shards int
	// Prefix starts every class name this store creates ("Quarry" when
	// empty), so several knowledge bases can share one Weaviate.
	Prefix string
	// NativeHybrid fuses hybrid searches with Weaviate's own hybrid
	// (rankedFusion for RRF, relativeScoreFusion for convex) in one
	// request, instead of Quarry's fusion of the two branches: scores are
	// then Weaviate's, not those of every other store.
	NativeHybrid bool
}

// Backend is the Weaviate store.Backend.
type Backend struct {
	c    *client
	opts Options

	mu       sync.Mutex
	colls    map[string]*collection // loaded collections, by name
	lastSeq  int64                  // last transaction sequence handed out
	janitors map[string]time.Time   // when each collection's records were last tidied
}

var prefixRE = regexp.MustCompile(`\A[A-Z][A-Za-z0-9]{0,30}\z`)

// Open connects to the Weaviate named by a weaviate:// URL and makes sure
// Quarry's own classes exist.
func Open(ctx context.Context, rawURL string) (*Backend, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("weaviate: %w", err)
	}
	if u.Scheme != "weaviate" || u.Host == "" {
		return nil, fmt.Errorf("weaviate: URL %q: expected weaviate://host:port", u.Redacted())
	}
	q := u.Query()
	opts := Options{Consistency: strings.ToUpper(q.Get("consistency")), Prefix: q.Get("prefix")}
	for name, dst := range map[string]*int{"replicas": &opts.Replicas, "shards": &opts.Shards} {
		if s := q.Get(name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 || n > 64 {
				return nil, fmt.Errorf("weaviate: %s=%q: want a number from 1 to 64", name, s)
			}
			*dst = n
		}
	}
	switch h := q.Get("hybrid"); h {
	case "", "quarry":
	case "weaviate":
		opts.NativeHybrid = true
	default:
		return nil, fmt.Errorf("weaviate: hybrid=%q: want quarry or weaviate", h)
	}
	scheme := "http"
	if tls := q.Get("tls"); tls == "1" || tls == "true" {
		scheme = "https"
	}
	key, _ := u.User.Password()
	return New(ctx, scheme+"://"+u.Host, key, opts)
}

// New connects to the Weaviate at base (http://host:port) with an optional
// API key.
func New(ctx context.Context, base, key string, opts Options) (*Backend, error) {
	switch opts.Consistency {
	case "":
		opts.Consistency = "QUORUM"
	case "ONE", "QUORUM", "ALL":
	default:
		return nil, fmt.Errorf("weaviate: consistency %q: want ONE, QUORUM or ALL", opts.Consistency)
	}
	if opts.Prefix == "" {
		opts.Prefix = "Quarry"
	}
	if !prefixRE.MatchString(opts.Prefix) {
		return nil, fmt.Errorf("weaviate: prefix %q: want a capital letter and up to 30 letters or digits", opts.Prefix)
	}
	if opts.Replicas == 0 {
		opts.Replicas = 1
	}
	b := &Backend{
		c:        &client{base: strings.TrimRight(base, "/"), key: key, http: &http.Client{Timeout: 5 * time.Minute}},
		opts:     opts,
		colls:    map[string]*collection{},
		janitors: map[string]time.Time{},
	}
	if err := b.ensureMetaClasses(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// Dialect implements store.Backend.
func (b *Backend) Dialect() string { return Dialect }

// Close implements store.Backend.
func (b *Backend) Close() error {
	b.c.http.CloseIdleConnections()
	return nil
}

// Describe implements store.Describer: Weaviate's version and how many
// nodes the cluster has.
func (b *Backend) Describe(ctx context.Context) (store.Engine, error) {
	var meta struct {
		Version string `json:"version"`
	}
	if err := b.c.do(ctx, http.MethodGet, "/meta", nil, nil, &meta); err != nil {
		return store.Engine{}, fmt.Errorf("weaviate: describe: %w", err)
	}
	e := store.Engine{Name: "weaviate", Version: meta.Version}
	var nodes struct {
		Nodes []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
		} `json:"nodes"`
	}
	if err := b.c.do(ctx, http.MethodGet, "/nodes", nil, nil, &nodes); err == nil {
		healthy := 0
		for _, n := range nodes.Nodes {
			if n.Status == "HEALTHY" {
				healthy++
			}
		}
		e.Extensions = map[string]string{"nodes": strconv.Itoa(len(nodes.Nodes)), "healthy": strconv.Itoa(healthy)}
	}
	return e, nil
}

// consistency returns the query parameters that set the consistency level.
func (b *Backend) consistency() url.Values {
	return url.Values{"consistency_level": {b.opts.Consistency}}
}

// collection is a loaded collection: its configuration and what queries
// over it need.
type collection struct {
	cfg      store.CollectionConfig
	class    string
	analyzer *bm25.Analyzer
}

func (b *Backend) get(ctx context.Context, name string) (*collection, error) {
	b.mu.Lock()
	c, ok := b.colls[name]
	b.mu.Unlock()
	if ok {
		return c, nil
	}
	cfg, err := b.LoadCollection(ctx, name)
	if err != nil {
		return nil, err
	}
	return b.remember(cfg)
}

func (b *Backend) remember(cfg store.CollectionConfig) (*collection, error) {
	a, err := bm25.NewAnalyzer(bm25.AnalyzerConfig{Language: cfg.Language})
	if err != nil {
		return nil, fmt.Errorf("weaviate: collection %q: %w", cfg.Name, err)
	}
	c := &collection{cfg: cfg, class: b.className(cfg.Name), analyzer: a}
	b.mu.Lock()
	b.colls[cfg.Name] = c
	b.mu.Unlock()
	return c, nil
}

func (b *Backend) forget(name string) {
	b.mu.Lock()
	delete(b.colls, name)
	b.mu.Unlock()
}

// className maps a collection name to its class (see classSafe).
func (b *Backend) className(name string) string {
	return b.opts.Prefix + "_" + classSafe(name)
}

// classSafe writes a name in class-name characters, keeping distinct
// names distinct: "_" becomes "_0", "-" "_1", and the "#" and ":" of the
// internal transaction namespaces "_2" and "_3". Collection names hold only
// lowercase letters, digits, "_" and "-".
func classSafe(name string) string {
	return strings.NewReplacer("_", "_0", "-", "_1", "#", "_2", ":", "_3").Replace(name)
}

// notFound is what a missing collection is reported as.
func notFound(name string) error {
	return fmt.Errorf("%w: %q", store.ErrCollectionNotFound, name)
}

var errConflict = errors.New("weaviate: the store changed during the read too often; try again")
