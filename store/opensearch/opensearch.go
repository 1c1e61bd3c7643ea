// Package opensearch is Quarry's store on OpenSearch and on
// Elasticsearch, through their REST APIs, which share the index, bulk,
// search and query DSL endpoints Quarry uses; the two differ in the vector
// field, the k-NN query and the engine's own fusion, and the URL's scheme
// says which one answers.
//
// Each Quarry collection is three indices: PREFIX_NAME holds the chunks,
// PREFIX_NAME.sources the sources' states and PREFIX_NAME.settings the
// collection's settings ("." cannot appear in a collection name, so these
// never meet another collection's index). Conversation threads live in
// PREFIX.threads. The chunk index's mapping is strict and names every
// field Quarry writes, and its _meta holds Quarry's configuration:
//
//   - "id" (keyword): the document id; the index's own _id is its SHA-1,
//     since both engines' ids are at most 512 bytes;
//   - "content" (text, the language's built-in analyzer): what BM25
//     searches, the document's title and content;
//   - "embedding": on OpenSearch a knn_vector (HNSW on the Lucene engine,
//     cosine space), on Elasticsearch a dense_vector (HNSW of float
//     vectors, cosine similarity); the knn query searches it with its
//     filter applied during the walk, so a filtered search still finds k
//     when k match;
//   - "sourceType", "sourceName" (keyword), and every filterable schema
//     field under its own name with the type of its values (keyword,
//     long, double, boolean);
//   - "stored" (not indexed): the document's content, metadata and
//     provenance as JSON, so they come back exactly as written.
//
// Keyword search is the engine's BM25; hybrid search sends both branches
// in one _msearch and fuses them as every store does, or, with
// hybrid=opensearch in the URL, is OpenSearch's hybrid query through a
// search pipeline with its score-ranker (RRF) processor, and with
// hybrid=elasticsearch Elasticsearch's rrf retriever.
//
// Neither engine has transactions. Replacing sources is three requests
// (the states go, then the chunks, then the new chunks and states are
// written), so a search in between can miss a source for that moment and
// a crash in between leaves the source without a state, so the next
// ingestion writes it again. Every write waits for a refresh, so an
// acknowledged write is searchable.
//
// Importing the package registers two URL schemes (port 9200 by default):
//
//	opensearch://[USER:PASSWORD@]HOST[:PORT][?tls=true&prefix=quarry&hybrid=opensearch]
//	elasticsearch://[USER:PASSWORD@]HOST[:PORT][?tls=true&prefix=quarry&hybrid=elasticsearch]
//
// The password may also come from OPENSEARCH_PASSWORD or
// ELASTICSEARCH_PASSWORD; an Elasticsearch URL without a user sends
// ELASTICSEARCH_API_KEY, when set, as an API key.
//
// Quarry has not run this package against a live OpenSearch or
// Elasticsearch: its tests run against opensearchtest, a fake whose every
// request and answer is validated against the engine's published OpenAPI
// document.
package opensearch

import (
	"bytes"
	"context"
	"crypto/sha1"
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

	"github.com/quarry-rag/quarry/store"
)

// The dialects: the name a raw filter fragment is tagged with to run on
// each engine, and nowhere else.
const (
	DialectOpenSearch    = "opensearch"
	DialectElasticsearch = "elasticsearch"
)

// Fields of every chunk that filters may name besides the schema's.
const (
	keySType = "sourceType"
	keySName = "sourceName"
)

// Quarry's own fields of a chunk; each is a name no schema field may take
// (document.IsReserved).
const (
	fieldID        = "id"
	fieldContent   = "content"
	fieldEmbedding = "embedding"
	fieldStored    = "metadata"
)

// maxResponse bounds an answer Quarry reads.
const maxResponse = 256 << 20

type driver struct{}

func (driver) Open(ctx context.Context, url string) (store.Backend, error) { return Open(ctx, url) }

// Both schemes open this driver; the URL's scheme picks the flavour.
func init() {
	store.Register(DialectOpenSearch, driver{})
	store.Register(DialectElasticsearch, driver{})
}

// Backend is a store on one OpenSearch or Elasticsearch cluster.
type Backend struct {
	flavor   string // DialectOpenSearch or DialectElasticsearch
	base     string // http(s)://host:port
	user, pw string
	apiKey   string // Elasticsearch's API key, sent instead of a password
	prefix   string
	native   bool // hybrid=opensearch or hybrid=elasticsearch: the engine fuses
	http     *http.Client

	mu           sync.Mutex
	colls        map[string]*collection // by Quarry name, as last read
	pipelines    map[int]bool           // RRF pipelines known to exist, by rank constant
	threadsReady bool
	order        store.TurnOrder
}

// collection is a collection as Quarry keeps it in the chunk index's
// mapping.
type collection struct {
	cfg     store.CollectionConfig
	index   string
	dialect string // the raw filter fragments it runs
}

// meta is what the chunk index's _meta.quarry holds.
type meta struct {
	Version int                    `json:"version"`
	Config  store.CollectionConfig `json:"config"`
}

// metaVersion is the layout of the indices this package writes.
const metaVersion = 1

// prefixRE is a prefix: no "_" or ".", which end it in index names.
var prefixRE = regexp.MustCompile(`\A[a-z0-9][a-z0-9-]{0,30}\z`)

// Open reads an opensearch:// or elasticsearch:// URL and checks the
// cluster answers.
func Open(ctx context.Context, raw string) (*Backend, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("opensearch: %w", err)
	}
	if (u.Scheme != DialectOpenSearch && u.Scheme != DialectElasticsearch) || u.Host == "" {
		return nil, fmt.Errorf("opensearch: URL %q: want opensearch://HOST[:PORT] or elasticsearch://HOST[:PORT]", u.Redacted())
	}
	flavor := u.Scheme
	q := u.Query()
	for k := range q {
		switch k {
		case "tls", "prefix", "hybrid":
		default:
			return nil, fmt.Errorf("%s: URL parameter %q: want tls, prefix or hybrid", flavor, k)
		}
	}
	scheme := "http"
	if q.Get("tls") == "true" {
		scheme = "https"
	}
	host := u.Host
	if u.Port() == "" {
		host += ":9200"
	}
	b := &Backend{
		flavor:    flavor,
		base:      scheme + "://" + host,
		prefix:    "quarry",
		native:    q.Get("hybrid") == flavor,
		http:      &http.Client{Timeout: 2 * time.Minute},
		colls:     map[string]*collection{},
		pipelines: map[int]bool{},
	}
	env := "OPENSEARCH_PASSWORD"
	if flavor == DialectElasticsearch {
		env = "ELASTICSEARCH_PASSWORD"
	}
	if u.User != nil {
		b.user = u.User.Username()
		if pw, ok := u.User.Password(); ok {
			b.pw = pw
		} else {
			b.pw = os.Getenv(env)
		}
	} else if flavor == DialectElasticsearch {
		b.apiKey = os.Getenv("ELASTICSEARCH_API_KEY")
	}
	if p := q.Get("prefix"); p != "" {
		if !prefixRE.MatchString(p) {
			return nil, fmt.Errorf("%s: prefix %q must be 1-31 lowercase letters, digits or '-'", flavor, p)
		}
		b.prefix = p
	}
	switch h := q.Get("hybrid"); h {
	case "", "quarry", flavor:
	default:
		return nil, fmt.Errorf("%s: hybrid=%q: want quarry (the default) or %s", flavor, h, flavor)
	}
	if _, err := b.Describe(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// elastic reports whether the cluster is Elasticsearch.
func (b *Backend) elastic() bool { return b.flavor == DialectElasticsearch }

// Dialect implements store.Backend.
func (b *Backend) Dialect() string { return b.flavor }

// Close implements store.Backend.
func (b *Backend) Close() error {
	b.http.CloseIdleConnections()
	return nil
}

// Describe implements store.Describer: the cluster's distribution and
// version, from its root endpoint.
func (b *Backend) Describe(ctx context.Context) (store.Engine, error) {
	var v struct {
		Version struct {
			Distribution string `json:"distribution"`
			Number       string `json:"number"`
		} `json:"version"`
	}
	if err := b.call(ctx, http.MethodGet, "/", nil, &v); err != nil {
		return store.Engine{}, err
	}
	name := v.Version.Distribution
	if name == "" {
		name = DialectElasticsearch // Elasticsearch does not name its distribution
	}
	if name != b.flavor {
		// The two engines' vector mappings and queries differ, so the
		// URL's scheme must name the engine that answers.
		return store.Engine{}, fmt.Errorf("opensearch: %s answers as %s %s; use %s://", b.base, name, v.Version.Number, name)
	}
	return store.Engine{Name: name, Version: v.Version.Number}, nil
}

// apiError is an error answer of the REST API.
type apiError struct {
	Engine string
	Status int
	Type   string
	Msg    string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s: HTTP %d: %s: %s", e.Engine, e.Status, e.Type, e.Msg)
}

func notFound(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound
}

// call sends one request with a JSON body (or NDJSON, when body is a
// *bytes.Buffer) and decodes the answer into out.
func (b *Backend) call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	ct := "application/json"
	switch x := body.(type) {
	case nil:
	case *bytes.Buffer:
		rd, ct = x, "application/x-ndjson"
	default:
		j, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("opensearch: encode %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, b.base+path, rd)
	if err != nil {
		return fmt.Errorf("opensearch: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", ct)
	}
	switch {
	case b.user != "":
		req.SetBasicAuth(b.user, b.pw)
	case b.apiKey != "":
		req.Header.Set("Authorization", "ApiKey "+b.apiKey)
	}
	resp, err := b.http.Do(req)
	if err != nil {
		return fmt.Errorf("opensearch: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return fmt.Errorf("opensearch: %s %s: read answer: %w", method, path, err)
	}
	if len(data) > maxResponse {
		return fmt.Errorf("opensearch: %s %s: answer larger than %d MiB", method, path, maxResponse>>20)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error struct {
				Type   string `json:"type"`
				Reason string `json:"reason"`
			} `json:"error"`
		}
		ae := &apiError{Engine: b.flavor, Status: resp.StatusCode, Msg: strings.TrimSpace(string(data))}
		if json.Unmarshal(data, &e) == nil && e.Error.Type != "" {
			ae.Type, ae.Msg = e.Error.Type, e.Error.Reason
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
		return fmt.Errorf("opensearch: %s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// docID is the _id a key is stored under: its SHA-1, since OpenSearch
// ids are at most 512 bytes and Quarry's may be longer.
func docID(key string) string {
	h := sha1.Sum([]byte(key))
	return hex.EncodeToString(h[:])
}

// index is the chunk index of a Quarry collection.
func (b *Backend) index(name string) string { return b.prefix + "_" + name }

func sourcesIndex(chunks string) string  { return chunks + ".sources" }
func settingsIndex(chunks string) string { return chunks + ".settings" }

func esc(s string) string { return url.PathEscape(s) }
