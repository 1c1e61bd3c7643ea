// Package typesense is Quarry's store on Typesense, through its REST API.
//
// Each Quarry collection is a Typesense collection of its own
// (PREFIX_NAME, "quarry_handbook") whose metadata holds Quarry's
// configuration, with a typed field for every filterable schema field
// ("m_year" an int64, "m_tags" a string[]) so portable filters compile to
// filter_by. A document is one Typesense document, its id a hash of the
// document id, holding:
//
//   - q_doc: the document as JSON, not indexed (so metadata comes back
//     with its integers and floats apart, and content as written);
//   - q_terms: Quarry's own analyzer's terms (the embedded store's:
//     stemmed, without stop words), hex-encoded so Typesense's tokenizer
//     sees each as one token, which keyword search queries;
//   - embedding: the vector, under cosine distance;
//   - q_stype, q_sname, q_src: the source, hex-encoded, and q_has: the
//     filterable fields the document has, because Typesense's != holds for
//     a document without the field and Quarry's never does.
//
// String values in filters are hex-encoded too: filter_by has no escape
// for every character a value may hold, and hex matches byte for byte.
// Source states and settings are documents of their own in the same
// collection (q_kind tells them apart); conversation threads live in one
// more collection, PREFIX-threads.
//
// Keyword search is Typesense's own: it requires every query term, then,
// when fewer results than it was asked for match, drops terms from the
// right until enough do (drop_tokens_threshold); its text_match score is
// not BM25. Quarry sends the terms rarest first (counted under the filter
// in one request before the search), so the common ones are dropped
// first, and leaves out terms no document holds. Hybrid search runs both branches in one multi_search request and
// fuses them as every store does; with hybrid=typesense in the URL,
// Typesense fuses them itself (one search with q and vector_query, its
// rank fusion weighted by alpha).
//
// Typesense has no transactions: an import applies document by document,
// so a batch that fails part way may leave part of itself written (Quarry
// checks every document before the request, so only the server failing
// can), and replacing a source is a delete then an import.
//
// Importing the package registers the "typesense://" URL scheme:
// typesense://[:KEY@]HOST[:PORT][?tls=true&prefix=quarry&hybrid=typesense].
// The API key is the URL's password, else TYPESENSE_API_KEY.
//
// Quarry has not run this package against a live Typesense server: its
// tests run against typesensetest, a fake whose every request and answer
// is validated against Typesense's published OpenAPI document (kept in
// typesensetest).
package typesense

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

func init() { store.Register("typesense", driver{}) }

type driver struct{}

func (driver) Open(ctx context.Context, url string) (store.Backend, error) { return Open(ctx, url) }

// Dialect is the tag raw filter fragments for this store carry: a JSON
// string holding a filter_by expression over the fields above.
const Dialect = "typesense"

// maxResponse bounds what one answer may hold.
const maxResponse = 256 << 20

// Field names Quarry keeps for itself.
const (
	fKind   = "q_kind"
	fID     = "q_id"
	fDoc    = "q_doc"
	fTerms  = "q_terms"
	fSType  = "q_stype"
	fSName  = "q_sname"
	fSrc    = "q_src"
	fHas    = "q_has"
	fState  = "q_state"
	fKey    = "q_key"
	fValue  = "q_value"
	fVector = "embedding"
)

// Kinds of document.
const (
	kindChunk   = "chunk"
	kindSource  = "source"
	kindSetting = "setting"
)

// Backend is the Typesense store.Backend.
type Backend struct {
	base   string // http(s)://host:port
	apiKey string
	prefix string
	native bool // hybrid=typesense: Typesense fuses
	http   *http.Client

	mu    sync.Mutex
	colls map[string]*collection // by Quarry name, as last read
	anz   map[string]*bm25.Analyzer

	threadsReady bool // the threads collection exists
	order        store.TurnOrder
}

// collection is a collection's configuration as Quarry keeps it in the
// Typesense collection's metadata.
type collection struct {
	cfg      store.CollectionConfig
	name     string // the Typesense collection
	analyzer *bm25.Analyzer
}

// prefixRE is a prefix: no "_", which ends it in collection names, so one
// prefix's collections never look like another's.
var prefixRE = regexp.MustCompile(`\A[a-z0-9][a-z0-9-]{0,30}\z`)

// Open reads a typesense:// URL and checks the server answers.
func Open(ctx context.Context, raw string) (*Backend, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("typesense: %w", err)
	}
	if u.Scheme != "typesense" || u.Host == "" {
		return nil, fmt.Errorf("typesense: URL %q: want typesense://HOST[:PORT]", u.Redacted())
	}
	q := u.Query()
	for k := range q {
		switch k {
		case "tls", "prefix", "hybrid":
		default:
			return nil, fmt.Errorf("typesense: URL parameter %q: want tls, prefix or hybrid (the API key goes in the password place or TYPESENSE_API_KEY)", k)
		}
	}
	scheme := "http"
	if q.Get("tls") == "true" {
		scheme = "https"
	}
	host := u.Host
	if u.Port() == "" {
		host += ":8108"
	}
	b := &Backend{
		base:   scheme + "://" + host,
		prefix: "quarry",
		native: q.Get("hybrid") == "typesense",
		http:   &http.Client{Timeout: 2 * time.Minute},
		colls:  map[string]*collection{},
		anz:    map[string]*bm25.Analyzer{},
	}
	if key, ok := u.User.Password(); ok {
		b.apiKey = key
	} else {
		b.apiKey = os.Getenv("TYPESENSE_API_KEY")
	}
	if p := q.Get("prefix"); p != "" {
		if !prefixRE.MatchString(p) {
			return nil, fmt.Errorf("typesense: prefix %q must be 1-31 lowercase letters, digits or '-'", p)
		}
		b.prefix = p
	}
	switch h := q.Get("hybrid"); h {
	case "", "quarry", "typesense":
	default:
		return nil, fmt.Errorf("typesense: hybrid=%q: want quarry (the default) or typesense", h)
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
// debug endpoint.
func (b *Backend) Describe(ctx context.Context) (store.Engine, error) {
	var v struct {
		Version string `json:"version"`
	}
	if err := b.call(ctx, http.MethodGet, "/debug", nil, nil, "", &v); err != nil {
		return store.Engine{}, err
	}
	return store.Engine{Name: "typesense", Version: v.Version}, nil
}

// apiError is an error answer of the REST API.
type apiError struct {
	Status int
	Msg    string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("typesense: HTTP %d: %s", e.Status, e.Msg)
}

func isStatus(err error, code int) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status == code
}

// call sends one request: body is sent as is with its content type (JSON
// when ctype is empty and body is not nil), and a JSON answer is decoded
// into out, or copied when out is a *[]byte.
func (b *Backend) call(ctx context.Context, method, path string, q url.Values, body []byte, ctype string, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	u := b.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return fmt.Errorf("typesense: %w", err)
	}
	if body != nil {
		if ctype == "" {
			ctype = "application/json"
		}
		req.Header.Set("Content-Type", ctype)
	}
	if b.apiKey != "" {
		req.Header.Set("X-TYPESENSE-API-KEY", b.apiKey)
	}
	resp, err := b.http.Do(req)
	if err != nil {
		return fmt.Errorf("typesense: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return fmt.Errorf("typesense: %s %s: read answer: %w", method, path, err)
	}
	if len(data) > maxResponse {
		return fmt.Errorf("typesense: %s %s: answer larger than %d MiB", method, path, maxResponse>>20)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Message string `json:"message"`
		}
		msg := strings.TrimSpace(string(data))
		if json.Unmarshal(data, &e) == nil && e.Message != "" {
			msg = e.Message
		}
		if len(msg) > 500 {
			msg = msg[:500] + "…"
		}
		return &apiError{Status: resp.StatusCode, Msg: msg}
	}
	switch o := out.(type) {
	case nil:
		return nil
	case *[]byte:
		*o = data
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("typesense: %s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// callJSON is call with a JSON body.
func (b *Backend) callJSON(ctx context.Context, method, path string, q url.Values, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("typesense: encode %s %s: %w", method, path, err)
		}
	}
	return b.call(ctx, method, path, q, body, "", out)
}

// docID is the Typesense id a key (a document id, or a source or setting
// key with its kind) is stored under: hex of its SHA-256, since Typesense
// ids go into URLs and filters.
func docID(kind, key string) string {
	h := sha256.Sum256([]byte(kind + "\x00" + key))
	return hex.EncodeToString(h[:16])
}

// hexs is a string as it is stored in a filterable field.
func hexs(s string) string { return hex.EncodeToString([]byte(s)) }

// tname is the Typesense collection of a Quarry collection.
func (b *Backend) tname(name string) string { return b.prefix + "_" + name }

func colPath(name, rest string) string { return "/collections/" + url.PathEscape(name) + rest }

// unhex reads a string hexs wrote.
func unhex(s string) (string, error) {
	b, err := hex.DecodeString(s)
	return string(b), err
}
