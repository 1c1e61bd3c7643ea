// Package chroma is Quarry's store on Chroma, through its v2 REST API.
//
// Each Quarry collection is a Chroma collection of its own (PREFIX_NAME,
// "quarry_handbook"; a name ending in "-" or "_" gets ".q" after it, since
// Chroma's names end in a letter or digit and Quarry's never hold a dot)
// whose metadata holds Quarry's configuration, indexed under cosine
// distance. A chunk is one record:
//
//   - its id is the document id, its embedding the document's;
//   - its Chroma document is Quarry's own analyzer's terms (the embedded
//     store's: stemmed, without stop words) with spaces around each, so
//     Chroma's full-text index finds a term by $contains " term " and never
//     inside another (a term of other characters than letters and digits
//     is written "_" and its hex, a code pair "a+b"); code pairs follow a
//     lone "|", since they do not count towards the length;
//   - its metadata holds the document as JSON (q_doc, so metadata comes
//     back with its integers and floats apart and content as written), the
//     embedding as it was given (q_emb, base64 float32s, since Chroma
//     gives back a cosine index's vectors as it normalised them), the
//     source (q_stype, q_sname, q_src), every filterable schema field under
//     m_NAME with its type, and q_has, the filterable fields the document
//     has, because Chroma's $ne and $nin hold for a record without the
//     field and Quarry's never do.
//
// Source states and settings live in one more collection, PREFIX-state,
// and conversation threads in PREFIX-threads, so a chunk collection holds
// chunks only and its record count is the N of BM25.
//
// Keyword search is BM25 computed by Quarry over Chroma's full-text
// index, since Chroma runs no text ranking on a single node (its sparse
// BM25 index is Chroma Cloud's): each query term's records come from one
// $contains request (their number is the term's document frequency), and
// the candidates' terms are read in rarest-term order until no record
// left unread could enter the top k (MaxScore), so the scores are BM25's
// with k1 = 1.2, b = 0.75 and the average chunk length fixed at the
// collection's creation, as in the Qdrant store. Hybrid search is fused by
// Quarry, as for every store without a fusing engine.
//
// Chroma has no transactions across requests: one upsert applies whole
// (Quarry splits a batch larger than the server's max_batch_size, and then
// each part does), and replacing a source is four requests (the state
// goes first, then the chunks, then the new chunks, the new state last),
// so a crash part way leaves a source without a state, which the next
// ingestion writes again.
//
// Importing the package registers the "chroma://" URL scheme:
// chroma://[:TOKEN@]HOST[:PORT][?tls=true&prefix=quarry&tenant=T&database=D].
// The token is the URL's password, else CHROMA_API_KEY, sent as
// x-chroma-token.
package chroma

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
	"strings"
	"sync"
	"time"

	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/store"
)

func init() { store.Register("chroma", driver{}) }

type driver struct{}

func (driver) Open(ctx context.Context, url string) (store.Backend, error) { return Open(ctx, url) }

// Dialect is the tag raw filter fragments for this store carry: a Chroma
// where object ({"m_city": {"$in": ["Oslo", "Bergen"]}}) over the
// metadata keys above.
const Dialect = "chroma"

// maxResponse bounds what one answer may hold.
const maxResponse = 256 << 20

// Metadata keys Quarry keeps for itself.
const (
	kDoc   = "q_doc"
	kSType = "q_stype"
	kSName = "q_sname"
	kSrc   = "q_src"
	kHas   = "q_has"
	kVec   = "q_vec"
	kEmb   = "q_emb"
	kColl  = "q_coll"
	kKind  = "q_kind"
	kState = "q_state"
	kKey   = "q_key"
	kValue = "q_value"
)

// Backend is the Chroma store.Backend.
type Backend struct {
	base   string // http(s)://host:port/api/v2/tenants/T/databases/D
	root   string // http(s)://host:port/api/v2
	token  string
	prefix string
	http   *http.Client

	mu       sync.Mutex
	colls    map[string]*collection // by Quarry name, as last read
	anz      map[string]*bm25.Analyzer
	sidecars map[string]string // sidecar collection name → id
	maxBatch int
	order    store.TurnOrder
}

// prefixRE is a prefix: no "_", which ends it in collection names, so one
// prefix's collections never look like another's.
var prefixRE = regexp.MustCompile(`\A[a-z0-9][a-z0-9-]{0,30}\z`)

// nameRE is a tenant or database name as Quarry accepts it in a URL.
var nameRE = regexp.MustCompile(`\A[A-Za-z0-9][A-Za-z0-9._-]{0,127}\z`)

// Open reads a chroma:// URL and checks the server answers.
func Open(ctx context.Context, raw string) (*Backend, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("chroma: %w", err)
	}
	if u.Scheme != "chroma" || u.Host == "" {
		return nil, fmt.Errorf("chroma: URL %q: want chroma://HOST[:PORT]", u.Redacted())
	}
	q := u.Query()
	for k := range q {
		switch k {
		case "tls", "prefix", "tenant", "database":
		default:
			return nil, fmt.Errorf("chroma: URL parameter %q: want tls, prefix, tenant or database (the token goes in the password place or CHROMA_API_KEY)", k)
		}
	}
	scheme := "http"
	if q.Get("tls") == "true" {
		scheme = "https"
	}
	host := u.Host
	if u.Port() == "" {
		host += ":8000"
	}
	tenant, database := "default_tenant", "default_database"
	for _, p := range []struct {
		key string
		v   *string
	}{{"tenant", &tenant}, {"database", &database}} {
		if s := q.Get(p.key); s != "" {
			if !nameRE.MatchString(s) {
				return nil, fmt.Errorf("chroma: %s %q: want letters, digits, '.', '_' or '-'", p.key, s)
			}
			*p.v = s
		}
	}
	b := &Backend{
		root:     scheme + "://" + host + "/api/v2",
		prefix:   "quarry",
		http:     &http.Client{Timeout: 2 * time.Minute},
		colls:    map[string]*collection{},
		anz:      map[string]*bm25.Analyzer{},
		sidecars: map[string]string{},
	}
	b.base = b.root + "/tenants/" + url.PathEscape(tenant) + "/databases/" + url.PathEscape(database)
	if key, ok := u.User.Password(); ok {
		b.token = key
	} else {
		b.token = os.Getenv("CHROMA_API_KEY")
	}
	if p := q.Get("prefix"); p != "" {
		if !prefixRE.MatchString(p) {
			return nil, fmt.Errorf("chroma: prefix %q must be 1-31 lowercase letters, digits or '-'", p)
		}
		b.prefix = p
	}
	var pre struct {
		MaxBatch int `json:"max_batch_size"`
	}
	if err := b.callJSON(ctx, http.MethodGet, b.root+"/pre-flight-checks", nil, &pre); err != nil {
		return nil, err
	}
	b.maxBatch = pre.MaxBatch
	if b.maxBatch <= 0 {
		b.maxBatch = 1000
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

// Describe implements store.Describer: the server's version.
func (b *Backend) Describe(ctx context.Context) (store.Engine, error) {
	var v string
	if err := b.callJSON(ctx, http.MethodGet, b.root+"/version", nil, &v); err != nil {
		return store.Engine{}, err
	}
	return store.Engine{Name: "chroma", Version: v}, nil
}

// apiError is an error answer of the REST API.
type apiError struct {
	Status int
	Kind   string // Chroma's error name: "NotFoundError", …
	Msg    string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("chroma: HTTP %d: %s: %s", e.Status, e.Kind, e.Msg)
}

func isStatus(err error, code int) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status == code
}

// callJSON sends one request to a full URL, in JSON as out is read.
func (b *Backend) callJSON(ctx context.Context, method, u string, in, out any) error {
	var rd io.Reader
	if in != nil {
		body, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("chroma: encode %s %s: %w", method, u, err)
		}
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return fmt.Errorf("chroma: %w", err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if b.token != "" {
		req.Header.Set("x-chroma-token", b.token)
	}
	path := strings.TrimPrefix(u, b.root)
	resp, err := b.http.Do(req)
	if err != nil {
		return fmt.Errorf("chroma: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return fmt.Errorf("chroma: %s %s: read answer: %w", method, path, err)
	}
	if len(data) > maxResponse {
		return fmt.Errorf("chroma: %s %s: answer larger than %d MiB", method, path, maxResponse>>20)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error   string `json:"error"`
			Message string `json:"message"`
		}
		ae := &apiError{Status: resp.StatusCode, Msg: strings.TrimSpace(string(data))}
		if json.Unmarshal(data, &e) == nil && e.Message != "" {
			ae.Kind, ae.Msg = e.Error, e.Message
		}
		if len(ae.Msg) > 500 {
			ae.Msg = ae.Msg[:500] + "…"
		}
		return ae
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("chroma: %s %s: decode answer: %w", method, path, err)
	}
	return nil
}

func isServerError(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status/100 == 5
}

// readTries is how often a read is sent when the server fails it.
const readTries = 3

// read sends a request that changes nothing (a get or a query) and sends
// it again when the server fails it: Chroma's single-node server answers
// 500 for a moment while it first writes a collection's index to disk
// ("Error creating hnsw segment reader: Nothing found on disk").
func (b *Backend) read(ctx context.Context, u string, in, out any) error {
	var err error
	for try := range readTries {
		if try > 0 {
			select {
			case <-ctx.Done():
				return err
			case <-time.After(time.Duration(try) * 50 * time.Millisecond):
			}
		}
		if err = b.callJSON(ctx, http.MethodPost, u, in, out); !isServerError(err) {
			return err
		}
	}
	return err
}

// hashID is the record id a key is stored under in a sidecar collection.
func hashID(kind, key string) string {
	h := sha256.Sum256([]byte(kind + "\x00" + key))
	return hex.EncodeToString(h[:16])
}

// cname is the Chroma collection of a Quarry collection.
func (b *Backend) cname(name string) string {
	n := b.prefix + "_" + name
	if c := name[len(name)-1]; c == '-' || c == '_' {
		n += ".q"
	}
	return n
}

// qname is the Quarry name of a Chroma collection, false when it is not
// one of this prefix's.
func (b *Backend) qname(cname string) (string, bool) {
	n, ok := strings.CutPrefix(cname, b.prefix+"_")
	if !ok || n == "" {
		return "", false
	}
	if s, ok := strings.CutSuffix(n, ".q"); ok {
		n = s
	}
	return n, b.cname(n) == cname
}
