// Package pinecone is Quarry's store on Pinecone, through its REST API
// (version 2026-04: the control plane for indexes, each index's own host
// for its records).
//
// Pinecone's own advice for hybrid search is a dense index and a sparse
// index side by side, and that is the layout: every Quarry store (one
// prefix) has
//
//   - PREFIX-dense-DIM: a serverless dense index under cosine similarity,
//     one per embedding dimension; each collection of that dimension is a
//     namespace of it, named as the collection is;
//   - PREFIX-sparse: a serverless sparse index (dot product); each
//     collection is a namespace of it too, holding one record per chunk
//     whose sparse values are the chunk's BM25 term weights;
//   - PREFIX-meta: a one-dimension dense index for what is not a chunk:
//     namespace "collections" holds each collection's configuration,
//     "c-NAME" its source states and settings, "threads" the conversation
//     threads.
//
// A chunk is a record in both indexes under the same id (hex of a hash of
// its Quarry id, since Pinecone refuses ids with spaces in a fetch),
// whose metadata holds the document as JSON (q_doc), its id (q_id), its
// source (q_stype, q_sname and both in q_src) and each filterable schema
// field as m_NAME; the dense record keeps the embedding exactly as given
// in q_emb too. Each namespace is created with its metadata schema, so
// Pinecone indexes only the fields Quarry filters on and not the
// documents. Metadata is limited to 40 KB a record: a chunk whose
// metadata is larger is refused with a message, not cut.
//
// Keyword search is BM25 by Pinecone's sparse dot product: a record's
// value for a term (its 32-bit FNV-1a hash) is tf·(k1+1)/(tf+k1·(1−b+
// b·len/256)), and the query's value the term's idf, so the score is the
// BM25 sum the embedded store computes. The idf needs each term's
// document frequency, which Pinecone does not keep: Quarry counts it with
// one sparse query per distinct query term (four in flight) for up to
// 10,000 ids, so a term in more than 10,000 chunks counts as in 10,000.
// The counts are kept for a minute, and forgotten at once when this
// process writes to the collection.
// Vector search is Pinecone's query on the dense index. Hybrid runs both
// and fuses them as every store does.
//
// Writes are upserts of at most 1,000 records and 2 MB; deletes are by
// id, in parts of 1,000, after the ids are read with fetch_by_metadata,
// so Quarry never relies on delete-by-filter (pod-based indexes only,
// before 2025). Replacing a source deletes its chunks and state, upserts
// the new chunks into the sparse then the dense index, and writes the new
// state last: a crash between them leaves a source without a state, which
// the next ingestion writes again.
//
// Pinecone's serverless indexes are eventually consistent: a write
// acknowledged is durable, and can take a few seconds to show in queries
// and counts. Quarry does not wait for it.
//
// Importing the package registers the "pinecone://" URL scheme:
// pinecone://[:KEY@][HOST][?prefix=quarry&cloud=aws&region=us-east-1&tls=false].
// HOST is the control plane, api.pinecone.io by default; tls=false
// speaks plain HTTP to it and to the index hosts it names (Pinecone
// Local). The API key is the URL's password, else PINECONE_API_KEY.
//
// Quarry has not run this package against Pinecone: its tests run against
// pineconetest, a fake whose every request and answer is validated
// against Pinecone's published OpenAPI documents for the control and data
// planes (kept in pineconetest).
package pinecone

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/store"
)

func init() { store.Register("pinecone", driver{}) }

type driver struct{}

func (driver) Open(ctx context.Context, url string) (store.Backend, error) { return Open(ctx, url) }

// Dialect is the tag raw filter fragments for this store carry: a
// Pinecone metadata filter object ({"m_city": {"$in": ["Oslo",
// "Bergen"]}}) over the metadata fields above.
const Dialect = "pinecone"

// APIVersion is the version of Pinecone's API Quarry speaks.
const APIVersion = "2026-04"

// maxResponse bounds what one answer may hold.
const maxResponse = 256 << 20

// Metadata fields Quarry keeps for itself.
const (
	kDoc   = "q_doc"
	kID    = "q_id"
	kEmb   = "q_emb"
	kSType = "q_stype"
	kSName = "q_sname"
	kSrc   = "q_src"
	kKind  = "q_kind"
	kState = "q_state"
	kKey   = "q_key"
	kValue = "q_value"
	kMeta  = "q_meta"
)

// Backend is the Pinecone store.Backend.
type Backend struct {
	control string // http(s)://host[:port] of the control plane
	scheme  string // of the index hosts
	apiKey  string
	prefix  string
	cloud   string
	region  string
	http    *http.Client

	mu     sync.Mutex
	hosts  map[string]string      // index name → its data-plane base URL
	colls  map[string]*collection // by Quarry name, as last read
	anz    map[string]*bm25.Analyzer
	stats  map[string]*termStats // by collection: what keyword search counted
	writes map[string]int        // by collection: writes this process made
	order  store.TurnOrder
}

// prefixRE is a prefix short enough that PREFIX-dense-20000 is an index
// name (at most 45 characters).
var prefixRE = regexp.MustCompile(`\A[a-z0-9][a-z0-9-]{0,24}\z`)

// Open reads a pinecone:// URL and checks the control plane answers.
func Open(ctx context.Context, raw string) (*Backend, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("pinecone: %w", err)
	}
	if u.Scheme != "pinecone" {
		return nil, fmt.Errorf("pinecone: URL %q: want pinecone://[HOST]", u.Redacted())
	}
	q := u.Query()
	for k := range q {
		switch k {
		case "tls", "prefix", "cloud", "region":
		default:
			return nil, fmt.Errorf("pinecone: URL parameter %q: want prefix, cloud, region or tls (the API key goes in the password place or PINECONE_API_KEY)", k)
		}
	}
	b := &Backend{
		scheme: "https",
		prefix: "quarry",
		cloud:  "aws",
		region: "us-east-1",
		http:   &http.Client{Timeout: 2 * time.Minute},
		hosts:  map[string]string{},
		colls:  map[string]*collection{},
		anz:    map[string]*bm25.Analyzer{},
		stats:  map[string]*termStats{},
		writes: map[string]int{},
	}
	switch q.Get("tls") {
	case "", "true":
	case "false":
		b.scheme = "http"
	default:
		return nil, fmt.Errorf("pinecone: tls=%q: want true or false", q.Get("tls"))
	}
	host := u.Host
	if host == "" {
		host = "api.pinecone.io"
	}
	b.control = b.scheme + "://" + host
	if key, ok := u.User.Password(); ok {
		b.apiKey = key
	} else {
		b.apiKey = os.Getenv("PINECONE_API_KEY")
	}
	if p := q.Get("prefix"); p != "" {
		if !prefixRE.MatchString(p) {
			return nil, fmt.Errorf("pinecone: prefix %q must be 1-25 lowercase letters, digits or '-'", p)
		}
		b.prefix = p
	}
	if c := q.Get("cloud"); c != "" {
		switch c {
		case "aws", "gcp", "azure":
			b.cloud = c
		default:
			return nil, fmt.Errorf("pinecone: cloud=%q: want aws, gcp or azure", c)
		}
	}
	if r := q.Get("region"); r != "" {
		b.region = r
	}
	if _, err := b.listIndexes(ctx); err != nil {
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

// Describe implements store.Describer: Pinecone names no server version,
// so the engine is the API version Quarry speaks.
func (b *Backend) Describe(ctx context.Context) (store.Engine, error) {
	if _, err := b.listIndexes(ctx); err != nil {
		return store.Engine{}, err
	}
	return store.Engine{Name: "pinecone", Version: "API " + APIVersion}, nil
}

// apiError is an error answer of either plane.
type apiError struct {
	Status int
	Code   string // "NOT_FOUND", "ALREADY_EXISTS", …
	Msg    string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("pinecone: HTTP %d: %s: %s", e.Status, e.Code, e.Msg)
}

func isStatus(err error, code int) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status == code
}

// Retries: Pinecone answers 429 when a project passes its rate limits
// and 5xx for a moment under load; every request Quarry sends can be sent
// again (upserts and deletes name their ids; creations that find their
// index or namespace made are no error).
const (
	maxTries   = 5
	firstDelay = 100 * time.Millisecond
	maxDelay   = 10 * time.Second
)

func retryable(err error) bool {
	var ae *apiError
	if !errors.As(err, &ae) {
		return false
	}
	return ae.Status == http.StatusTooManyRequests || ae.Status == http.StatusBadGateway ||
		ae.Status == http.StatusServiceUnavailable || ae.Status == http.StatusGatewayTimeout
}

// call sends one request to a full URL with a JSON body (when in is not
// nil) and decodes a JSON answer into out, sending it again after a rate
// limit or a passing server error, up to five times, waiting as the answer
// asks (Retry-After) or twice as long each time.
func (b *Backend) call(ctx context.Context, method, u string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("pinecone: encode %s %s: %w", method, u, err)
		}
	}
	delay := firstDelay
	for try := 1; ; try++ {
		wait, err := b.send(ctx, method, u, body, in != nil, out)
		if err == nil || !retryable(err) || try == maxTries {
			return err
		}
		if wait < 0 {
			wait = delay
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (then %w)", err, ctx.Err())
		case <-time.After(min(wait, maxDelay)):
		}
		delay *= 2
	}
}

// send sends a request once; wait is the answer's Retry-After, −1 when
// it has none.
func (b *Backend) send(ctx context.Context, method, u string, body []byte, hasBody bool, out any) (wait time.Duration, err error) {
	var rd io.Reader
	if hasBody {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, fmt.Errorf("pinecone: %w", err)
	}
	if hasBody {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Pinecone-Api-Version", APIVersion)
	if b.apiKey != "" {
		req.Header.Set("Api-Key", b.apiKey)
	}
	what := method + " " + req.URL.Path
	resp, err := b.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("pinecone: %s: %w", what, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return 0, fmt.Errorf("pinecone: %s: read answer: %w", what, err)
	}
	if len(data) > maxResponse {
		return 0, fmt.Errorf("pinecone: %s: answer larger than %d MiB", what, maxResponse>>20)
	}
	if resp.StatusCode/100 != 2 {
		ae := &apiError{Status: resp.StatusCode, Msg: strings.TrimSpace(string(data))}
		var e struct { // the control plane's ErrorResponse or the data plane's rpcStatus
			Error *struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
			Code    any    `json:"code"`
			Message string `json:"message"`
		}
		if json.Unmarshal(data, &e) == nil {
			switch {
			case e.Error != nil:
				ae.Code, ae.Msg = e.Error.Code, e.Error.Message
			case e.Message != "":
				ae.Code, ae.Msg = fmt.Sprint(e.Code), e.Message
			}
		}
		if len(ae.Msg) > 500 {
			ae.Msg = ae.Msg[:500] + "…"
		}
		wait = -1
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs >= 0 {
			wait = time.Duration(secs) * time.Second
		}
		return wait, ae
	}
	if out == nil || len(data) == 0 {
		return 0, nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return 0, fmt.Errorf("pinecone: %s: decode answer: %w", what, err)
	}
	return 0, nil
}

// recordID is the record id a key is stored under: hex of its SHA-256,
// short and free of the spaces a fetch refuses.
func recordID(kind, key string) string {
	h := sha256.Sum256([]byte(kind + "\x00" + key))
	return hex.EncodeToString(h[:16])
}

// Index names of a store.
func (b *Backend) metaIndex() string   { return b.prefix + "-meta" }
func (b *Backend) sparseIndex() string { return b.prefix + "-sparse" }
func (b *Backend) denseIndex(dim int) string {
	return fmt.Sprintf("%s-dense-%d", b.prefix, dim)
}

// Namespaces of the meta index.
const (
	nsCollections = "collections"
	nsThreads     = "threads"
)

// sideNS is the meta index's namespace for a collection's states and
// settings; "c-" keeps it apart from the two above.
func sideNS(coll string) string { return "c-" + coll }
