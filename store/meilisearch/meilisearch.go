// Package meilisearch is Quarry's store on Meilisearch, through its REST
// API.
//
// Each Quarry collection is a Meilisearch index of its own
// (PREFIX_NAME, "quarry_handbook"), primary key "id", whose first
// document (q_kind "meta") holds Quarry's configuration. Its settings
// make every field Quarry filters on a filterable attribute (q_kind, the
// source, q_has and a field per filterable schema field, "m_year",
// "m_tags"), q_terms the one searchable attribute, typo tolerance and
// prefix search off, and one user-provided embedder, "quarry", of the
// collection's dimension. A chunk is one document holding:
//
//   - q_doc: the document as JSON, not searched (so metadata comes back
//     with its integers and floats apart, and content as written);
//   - q_terms: Quarry's own analyzer's terms (the embedded store's:
//     stemmed, without stop words), each spelt in the letters a–p (two per
//     byte), so Meilisearch's tokenizer sees each as one word and never
//     splits or joins them;
//   - _vectors.quarry: the embedding, or null for a chunk without one;
//   - q_stype, q_sname, q_src: the source, hex-encoded, and q_has: the
//     filterable fields the document has, because Meilisearch's != holds
//     for a document without the field and Quarry's never does.
//
// String values in filters are hex-encoded too, so every value is a plain
// word in the filter language and equality is byte for byte (Meilisearch
// compares strings ignoring case). Source states and settings are
// documents of their own in the same index (q_kind tells them apart);
// conversation threads live in one more index, PREFIX-threads.
//
// Keyword search is Meilisearch's: it considers the first ten words of a
// query, requires every word, then drops words from the end until enough
// documents match (matchingStrategy "last"), and ranks by its ranking
// rules, not BM25. Quarry counts each term's documents under the filter
// first (one multi-search) and sends the ten rarest held terms, rarest
// first, so the words dropped are the common ones. Vector search asks for
// the embeddings back and scores by cosine similarity itself, since a
// document without a vector comes back last from a semantic search rather
// than not at all. Hybrid search runs both branches in one multi-search
// and fuses them as every store does; with hybrid=meilisearch in the URL,
// Meilisearch merges them itself (semanticRatio 0.5).
//
// Every write is a task Meilisearch applies in the background; Quarry
// waits for it to succeed before it returns. One document addition is
// applied whole or not at all; replacing a source is three tasks (the
// source's state and chunks deleted, the new chunks added, the new state
// added), so a crash between them leaves a source without a state, which
// the next ingestion writes again.
//
// Importing the package registers the "meilisearch://" URL scheme:
// meilisearch://[:KEY@]HOST[:PORT][?tls=true&prefix=quarry&hybrid=meilisearch].
// The API key is the URL's password, else MEILISEARCH_API_KEY.
//
// Quarry has not run this package against a live Meilisearch server: its
// tests run against meilisearchtest, a fake whose every request and
// answer is validated against Meilisearch's published OpenAPI document
// (kept in meilisearchtest).
package meilisearch

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

func init() { store.Register("meilisearch", driver{}) }

type driver struct{}

func (driver) Open(ctx context.Context, url string) (store.Backend, error) { return Open(ctx, url) }

// Dialect is the tag raw filter fragments for this store carry: a JSON
// string holding a Meilisearch filter expression over the fields above.
const Dialect = "meilisearch"

// maxResponse bounds what one answer may hold.
const maxResponse = 256 << 20

// Field names Quarry keeps for itself.
const (
	fKind  = "q_kind"
	fID    = "q_id"
	fDoc   = "q_doc"
	fTerms = "q_terms"
	fSType = "q_stype"
	fSName = "q_sname"
	fSrc   = "q_src"
	fHas   = "q_has"
	fState = "q_state"
	fKey   = "q_key"
	fValue = "q_value"
	fMeta  = "q_meta"
)

// embedder is the name of the collection's user-provided embedder.
const embedder = "quarry"

// Kinds of document.
const (
	kindChunk   = "chunk"
	kindSource  = "source"
	kindSetting = "setting"
	kindMeta    = "meta"
)

// Backend is the Meilisearch store.Backend.
type Backend struct {
	base   string // http(s)://host:port
	apiKey string
	prefix string
	native bool // hybrid=meilisearch: Meilisearch merges
	http   *http.Client

	mu           sync.Mutex
	colls        map[string]*collection // by Quarry name, as last read
	anz          map[string]*bm25.Analyzer
	threadsReady bool
	order        store.TurnOrder
}

// prefixRE is a prefix: no "_", which ends it in index names, so one
// prefix's indexes never look like another's.
var prefixRE = regexp.MustCompile(`\A[a-z0-9][a-z0-9-]{0,30}\z`)

// Open reads a meilisearch:// URL and checks the server answers.
func Open(ctx context.Context, raw string) (*Backend, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("meilisearch: %w", err)
	}
	if u.Scheme != "meilisearch" || u.Host == "" {
		return nil, fmt.Errorf("meilisearch: URL %q: want meilisearch://HOST[:PORT]", u.Redacted())
	}
	q := u.Query()
	for k := range q {
		switch k {
		case "tls", "prefix", "hybrid":
		default:
			return nil, fmt.Errorf("meilisearch: URL parameter %q: want tls, prefix or hybrid (the API key goes in the password place or MEILISEARCH_API_KEY)", k)
		}
	}
	scheme := "http"
	if q.Get("tls") == "true" {
		scheme = "https"
	}
	host := u.Host
	if u.Port() == "" {
		host += ":7700"
	}
	b := &Backend{
		base:   scheme + "://" + host,
		prefix: "quarry",
		native: q.Get("hybrid") == "meilisearch",
		http:   &http.Client{Timeout: 2 * time.Minute},
		colls:  map[string]*collection{},
		anz:    map[string]*bm25.Analyzer{},
	}
	if key, ok := u.User.Password(); ok {
		b.apiKey = key
	} else {
		b.apiKey = os.Getenv("MEILISEARCH_API_KEY")
	}
	if p := q.Get("prefix"); p != "" {
		if !prefixRE.MatchString(p) {
			return nil, fmt.Errorf("meilisearch: prefix %q must be 1-31 lowercase letters, digits or '-'", p)
		}
		b.prefix = p
	}
	switch h := q.Get("hybrid"); h {
	case "", "quarry", "meilisearch":
	default:
		return nil, fmt.Errorf("meilisearch: hybrid=%q: want quarry (the default) or meilisearch", h)
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

// Describe implements store.Describer: the server's version.
func (b *Backend) Describe(ctx context.Context) (store.Engine, error) {
	var v struct {
		Version string `json:"pkgVersion"`
	}
	if err := b.call(ctx, http.MethodGet, "/version", nil, &v); err != nil {
		return store.Engine{}, err
	}
	return store.Engine{Name: "meilisearch", Version: v.Version}, nil
}

// apiError is an error answer of the REST API, or a failed task.
type apiError struct {
	Status int
	Code   string // Meilisearch's error code: "index_not_found", …
	Msg    string
}

func (e *apiError) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("meilisearch: task failed: %s: %s", e.Code, e.Msg)
	}
	return fmt.Sprintf("meilisearch: HTTP %d: %s: %s", e.Status, e.Code, e.Msg)
}

func isCode(err error, code string) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Code == code
}

// call sends one request with a JSON body (when in is not nil) and
// decodes a JSON answer into out.
func (b *Backend) call(ctx context.Context, method, path string, in, out any) error {
	var rd io.Reader
	if in != nil {
		body, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("meilisearch: encode %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, b.base+path, rd)
	if err != nil {
		return fmt.Errorf("meilisearch: %w", err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if b.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+b.apiKey)
	}
	resp, err := b.http.Do(req)
	if err != nil {
		return fmt.Errorf("meilisearch: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return fmt.Errorf("meilisearch: %s %s: read answer: %w", method, path, err)
	}
	if len(data) > maxResponse {
		return fmt.Errorf("meilisearch: %s %s: answer larger than %d MiB", method, path, maxResponse>>20)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Message string `json:"message"`
			Code    string `json:"code"`
		}
		ae := &apiError{Status: resp.StatusCode, Msg: strings.TrimSpace(string(data))}
		if json.Unmarshal(data, &e) == nil && e.Message != "" {
			ae.Code, ae.Msg = e.Code, e.Message
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
		return fmt.Errorf("meilisearch: %s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// task is a task as Meilisearch reports it.
type task struct {
	UID     int             `json:"uid"`
	Status  string          `json:"status"`
	Details json.RawMessage `json:"details"`
	Error   *struct {
		Message string `json:"message"`
		Code    string `json:"code"`
	} `json:"error"`
}

// write sends a request that enqueues a task and waits for the task to
// end; a failed task is an *apiError with Status 0.
func (b *Backend) write(ctx context.Context, method, path string, in any) (task, error) {
	var enq struct {
		TaskUID int `json:"taskUid"`
	}
	if err := b.call(ctx, method, path, in, &enq); err != nil {
		return task{}, err
	}
	return b.wait(ctx, enq.TaskUID)
}

// wait polls a task until it ends, from every 5 ms up to every 200 ms.
func (b *Backend) wait(ctx context.Context, uid int) (task, error) {
	delay := 5 * time.Millisecond
	for {
		var t task
		if err := b.call(ctx, http.MethodGet, "/tasks/"+strconv.Itoa(uid), nil, &t); err != nil {
			return t, err
		}
		switch t.Status {
		case "succeeded":
			return t, nil
		case "failed", "canceled":
			ae := &apiError{Code: t.Status, Msg: "task " + strconv.Itoa(uid) + " " + t.Status}
			if t.Error != nil {
				ae.Code, ae.Msg = t.Error.Code, t.Error.Message
			}
			return t, ae
		}
		select {
		case <-ctx.Done():
			return t, fmt.Errorf("meilisearch: waiting for task %d: %w", uid, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}

// docID is the Meilisearch id a key (a document id, or a source or setting
// key with its kind) is stored under: hex of its SHA-256, since ids are
// letters, digits, '-' and '_'.
func docID(kind, key string) string {
	h := sha256.Sum256([]byte(kind + "\x00" + key))
	return hex.EncodeToString(h[:16])
}

// hexs is a string as it is stored in a filterable field.
func hexs(s string) string { return hex.EncodeToString([]byte(s)) }

// unhex reads a string hexs wrote.
func unhex(s string) (string, error) {
	b, err := hex.DecodeString(s)
	return string(b), err
}

// uid is the index of a Quarry collection.
func (b *Backend) uid(name string) string { return b.prefix + "_" + name }

func idxPath(uid, rest string) string { return "/indexes/" + url.PathEscape(uid) + rest }
