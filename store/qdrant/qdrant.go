// Package qdrant is Quarry's store on Qdrant, through its REST API.
//
// Each Quarry collection is a Qdrant collection of its own (PREFIX_NAME,
// "quarry_handbook"), whose metadata holds Quarry's configuration. A
// document is one point, its id a UUID made from the document id, with
// three vectors:
//
//   - "dense": the embedding under cosine distance, HNSW-indexed, which
//     vector search queries;
//   - "raw": the same embedding under dot distance and not indexed (HNSW
//     m = 0), because Qdrant stores cosine vectors normalised and Quarry
//     returns the embedding it was given, bit for bit;
//   - "text": a sparse vector of Quarry's own analyzer's terms (the embedded
//     store's: stemmed, its stop words), each weighed by BM25's term
//     frequency part, which keyword search queries with Qdrant's idf
//     modifier supplying the inverse document frequency.
//
// The payload keeps the document as JSON under "_quarry_doc" (so metadata
// comes back with its integers and floats apart), the source under
// "sourceType" and "sourceName", and every filterable schema field under
// its own name with a payload index, so portable filters compile to
// Qdrant's must/should/must_not conditions on the keys Quarry's users
// know. Keys Quarry keeps for itself start with "_quarry", which no
// metadata field may. Source states and settings are points of their own
// in the same collection (no vectors, "_quarry_kind" tells them apart), so
// replacing a source is one batch request: the source's state goes first,
// then its chunks, then the new chunks and the new state are written.
//
// Conversation threads are points of one more collection, PREFIX-threads.
//
// Hybrid search sends both branches in one batch query and fuses them as
// every store does; with hybrid=qdrant in the URL, Qdrant fuses them
// itself (a query with two prefetches and RRF). Qdrant has no
// transactions: each operation of a batch is applied in turn, so a search
// running while a source is replaced can miss that source for the moment
// between two of them, and a crash between them leaves the source without
// a state, so the next ingestion writes it again.
//
// Importing the package registers the "qdrant://" URL scheme:
// qdrant://[:KEY@]HOST[:PORT][?tls=true&prefix=quarry&hybrid=qdrant]. The
// API key is the URL's password, else QDRANT_API_KEY.
//
// Quarry has not run this package against a live Qdrant server: its tests
// run against qdranttest, a fake whose every request is validated against
// Qdrant's published OpenAPI document (kept in qdranttest).
package qdrant

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/internal/sparsebm25"
)

func init() { store.Register("qdrant", driver{}) }

type driver struct{}

func (driver) Open(ctx context.Context, url string) (store.Backend, error) { return Open(ctx, url) }

// Dialect is the tag raw filter fragments for this store carry. A fragment
// is one Qdrant filter condition as JSON ({"key": "city", "geo_radius":
// {…}} or a nested {"must": […]}), over the payload keys above.
const Dialect = "qdrant"

// maxResponse bounds what one answer may hold; a scroll page or a search
// is far smaller.
const maxResponse = 256 << 20

// Vector names.
const (
	denseVector  = "dense"
	rawVector    = "raw"
	sparseVector = "text"
)

// Payload keys Quarry keeps for itself.
const (
	keyKind   = "_quarry_kind"
	keyID     = "_quarry_id"
	keyDoc    = "_quarry_doc"
	keySource = "_quarry_source"
	keyState  = "_quarry_state"
	keyName   = "_quarry_key"
	keyValue  = "_quarry_value"
	keySType  = "sourceType"
	keySName  = "sourceName"
)

// Kinds of point.
const (
	kindChunk   = "chunk"
	kindSource  = "source"
	kindSetting = "setting"
	kindTurn    = "turn"
)

// Backend is the Qdrant store.Backend.
type Backend struct {
	base   string // http(s)://host:port
	apiKey string
	prefix string
	native bool // hybrid=qdrant: Qdrant fuses
	http   *http.Client

	mu    sync.Mutex
	colls map[string]*collection // by Quarry name, as last read
	anz   map[string]*bm25.Analyzer

	threadsReady bool // the threads collection exists
	order        store.TurnOrder
}

// collection is a collection's configuration as Quarry keeps it in the
// Qdrant collection's metadata.
type collection struct {
	cfg      store.CollectionConfig
	name     string // the Qdrant collection
	bm25     bm25Params
	analyzer *bm25.Analyzer
}

// bm25Params fix a collection's term weights at its creation.
type bm25Params = sparsebm25.Params

func defaultBM25() bm25Params { return sparsebm25.Default() }

// meta is what the Qdrant collection's metadata holds under "quarry".
type meta struct {
	Version int                    `json:"version"`
	Config  store.CollectionConfig `json:"config"`
	BM25    bm25Params             `json:"bm25"`
}

// prefixRE is a prefix: no "_", which ends it in collection names, so
// one prefix's collections never look like another's.
var prefixRE = regexp.MustCompile(`\A[a-z0-9][a-z0-9-]{0,30}\z`)

// Open reads a qdrant:// URL and checks the server answers.
func Open(ctx context.Context, raw string) (*Backend, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("qdrant: %w", err)
	}
	if u.Scheme != "qdrant" || u.Host == "" {
		return nil, fmt.Errorf("qdrant: URL %q: want qdrant://HOST[:PORT]", u.Redacted())
	}
	q := u.Query()
	for k := range q {
		switch k {
		case "tls", "prefix", "hybrid":
		default:
			return nil, fmt.Errorf("qdrant: URL parameter %q: want tls, prefix or hybrid (the API key goes in the password place or QDRANT_API_KEY)", k)
		}
	}
	scheme := "http"
	if q.Get("tls") == "true" {
		scheme = "https"
	}
	host := u.Host
	if u.Port() == "" {
		host += ":6333"
	}
	b := &Backend{
		base:   scheme + "://" + host,
		prefix: "quarry",
		native: q.Get("hybrid") == "qdrant",
		http:   &http.Client{Timeout: 2 * time.Minute},
		colls:  map[string]*collection{},
		anz:    map[string]*bm25.Analyzer{},
	}
	if key, ok := u.User.Password(); ok {
		b.apiKey = key
	} else {
		b.apiKey = os.Getenv("QDRANT_API_KEY")
	}
	if p := q.Get("prefix"); p != "" {
		if !prefixRE.MatchString(p) {
			return nil, fmt.Errorf("qdrant: prefix %q must be 1-31 lowercase letters, digits or '-'", p)
		}
		b.prefix = p
	}
	switch h := q.Get("hybrid"); h {
	case "", "quarry", "qdrant":
	default:
		return nil, fmt.Errorf("qdrant: hybrid=%q: want quarry (the default) or qdrant", h)
	}
	if _, err := b.Describe(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// Dialect implements store.Backend.
func (b *Backend) Dialect() string { return Dialect }

// Close implements store.Backend.
func (b *Backend) Close() error {
	b.http.CloseIdleConnections()
	return nil
}

// Describe implements store.Describer: the server's version, from its
// root endpoint.
func (b *Backend) Describe(ctx context.Context) (store.Engine, error) {
	var v struct {
		Title   string `json:"title"`
		Version string `json:"version"`
	}
	if err := b.call(ctx, http.MethodGet, "/", nil, &v, true); err != nil {
		return store.Engine{}, err
	}
	return store.Engine{Name: "qdrant", Version: v.Version}, nil
}

// apiError is an error answer of the REST API.
type apiError struct {
	Status int
	Msg    string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("qdrant: HTTP %d: %s", e.Status, e.Msg)
}

func notFound(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound
}

// call sends one request. body is JSON-encoded; the answer's "result" is
// decoded into out (the whole answer when bare, as the root endpoint's).
func (b *Backend) call(ctx context.Context, method, path string, body, out any, bare bool) error {
	var rd io.Reader
	if body != nil {
		j, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("qdrant: encode %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, b.base+path, rd)
	if err != nil {
		return fmt.Errorf("qdrant: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if b.apiKey != "" {
		req.Header.Set("api-key", b.apiKey)
	}
	resp, err := b.http.Do(req)
	if err != nil {
		return fmt.Errorf("qdrant: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return fmt.Errorf("qdrant: %s %s: read answer: %w", method, path, err)
	}
	if len(data) > maxResponse {
		return fmt.Errorf("qdrant: %s %s: answer larger than %d MiB", method, path, maxResponse>>20)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Status struct {
				Error string `json:"error"`
			} `json:"status"`
		}
		msg := strings.TrimSpace(string(data))
		if json.Unmarshal(data, &e) == nil && e.Status.Error != "" {
			msg = e.Status.Error
		}
		if len(msg) > 500 {
			msg = msg[:500] + "…"
		}
		return &apiError{Status: resp.StatusCode, Msg: msg}
	}
	if out == nil {
		return nil
	}
	if bare {
		err = json.Unmarshal(data, out)
	} else {
		var env struct {
			Result json.RawMessage `json:"result"`
		}
		if err = json.Unmarshal(data, &env); err == nil {
			err = json.Unmarshal(env.Result, out)
		}
	}
	if err != nil {
		return fmt.Errorf("qdrant: %s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// pointID is the point a key (a document id, or a source or setting key
// with its kind) is stored under: a UUID made from its SHA-1, since
// Qdrant's ids are integers or UUIDs.
func pointID(kind, key string) string {
	h := sha1.Sum([]byte(kind + "\x00" + key))
	h[6] = h[6]&0x0f | 0x50 // version 5
	h[8] = h[8]&0x3f | 0x80 // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// qname is the Qdrant collection of a Quarry collection.
func (b *Backend) qname(name string) string { return b.prefix + "_" + name }

func (b *Backend) colPath(c *collection, rest string) string {
	return "/collections/" + url.PathEscape(c.name) + rest
}
