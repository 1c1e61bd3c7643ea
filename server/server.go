// Package server is Quarry's HTTP API: collections, documents, uploads that
// become ingestion jobs, search, cited answers (JSON or server-sent
// events), threads and status, described by an OpenAPI 3.1 document at
// /openapi.json, with the web UI at / (package server/ui).
//
// Every endpoint calls the library; a handler only checks the caller's key,
// reads the request and writes the response. Keys (keys.File) carry a
// permission, the collections they reach and a mandatory filter that is
// merged by AND into every search, answer and delete, so no request can
// widen it. Without keys the server is meant for loopback only
// (ListenAddr).
//
// Operations report Prometheus metrics at /metrics, on a registry of the
// server's own, and OpenTelemetry spans per stage (embed, search,
// generate, ingest) to the configured tracer provider.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/internal/buildinfo"
	"github.com/quarry-rag/quarry/keys"
	"github.com/quarry-rag/quarry/load"
	"github.com/quarry-rag/quarry/server/ui"
	"github.com/quarry-rag/quarry/store"
)

// Defaults for the limits in Config.
const (
	DefaultMaxBodyBytes   = 1 << 20
	DefaultMaxUploadBytes = 32 << 20
	DefaultRequestTimeout = 2 * time.Minute
	DefaultRateLimit      = 50 // requests per second per key
	maxDocuments          = 256
	maxTopK               = 100
)

// Config is what a Server serves. KB is required.
type Config struct {
	// KB is the knowledge base served: its store, embedder, default
	// collection and top-k, chat model and the post-processors every
	// answer gets. Every endpoint calls its operations with the caller's
	// scope.
	KB *quarry.KB
	// IngestOptions, when set, replaces KB.IngestOptions for uploads and
	// ingestion (to observe runs, say).
	IngestOptions func(*store.Collection) ingest.Options
	// Roots are the folders the ingest endpoint may read; empty turns the
	// endpoint off (uploads still work).
	Roots []string
	// UploadDir holds uploaded files while they are ingested: by default
	// the knowledge base's cache/uploads, else a temporary folder.
	UploadDir string
	// Keys are the API keys; nil, or a file without an active key, serves
	// every request with full rights (see ListenAddr).
	Keys *keys.File
	// RateLimit is a key's requests per second when the key sets none;
	// DefaultRateLimit when 0, unlimited when negative.
	RateLimit float64
	// MaxBodyBytes bounds a JSON request; MaxUploadBytes an upload.
	MaxBodyBytes   int64
	MaxUploadBytes int64
	// RequestTimeout bounds a request that is not an event stream.
	RequestTimeout time.Duration
	// AllowRawFilters lets every caller's filters carry raw, store-tagged
	// fragments (a key can also be granted them alone). Off by default:
	// raw fragments are the store's own query language, for callers the
	// operator trusts with it inside their scope.
	AllowRawFilters bool
	// CORSOrigins are the origins whose pages may call the API from a
	// browser; none by default.
	CORSOrigins []string
	// Tracer receives spans; none when nil.
	Tracer trace.TracerProvider
	// Logger receives the server's records; slog.Default() when nil. Keys
	// appear in records by id only.
	Logger *slog.Logger
	// Version is reported in the OpenAPI document and status.
	Version string
}

// Server is a Quarry HTTP API. It is safe for concurrent use; Close stops
// running ingestions.
type Server struct {
	cfg     Config
	kb      *quarry.KB
	log     *slog.Logger
	tracer  trace.Tracer
	roots   *load.Roots // nil when ingestion from server paths is off
	api     huma.API
	handler http.Handler
	metrics *metrics
	emb     embed.Embedder // the knowledge base's embedder, traced and timed, for ingestion jobs

	limits sync.Map // key id → *bucket

	// guard admits requests by the keys' fail-closed rule (keys.Guard).
	guard *keys.Guard

	jobs     *ingest.Jobs      // uploads and ingestions running in the background
	mu       sync.Mutex        // guards jobOwner
	jobOwner map[string]string // job id → key id, for jobs keys with a filter started here
}

// New checks cfg and builds the server's routes.
func New(cfg Config) (*Server, error) {
	if cfg.KB == nil {
		return nil, errors.New("server: a knowledge base is required")
	}
	if err := cfg.KB.CheckAnswers(); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if cfg.UploadDir == "" && cfg.KB.CacheDir() != "" {
		cfg.UploadDir = filepath.Join(cfg.KB.CacheDir(), "uploads")
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxUploadBytes <= 0 {
		cfg.MaxUploadBytes = DefaultMaxUploadBytes
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.RateLimit == 0 {
		cfg.RateLimit = DefaultRateLimit
	}
	if cfg.Tracer == nil {
		cfg.Tracer = noop.NewTracerProvider()
	}
	s := &Server{cfg: cfg, kb: cfg.KB, log: cfg.Logger, tracer: cfg.Tracer.Tracer("github.com/quarry-rag/quarry/server"),
		jobOwner: map[string]string{}}
	if s.log == nil {
		s.log = slog.Default()
	}
	if len(cfg.Roots) > 0 {
		r, err := load.NewRoots(cfg.Roots)
		if err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
		s.roots = r
	}
	s.guard = keys.NewGuard(cfg.Keys, s.log)
	s.metrics = newMetrics(cfg.KB.Store())
	s.emb = &tracedEmbedder{Embedder: cfg.KB.Embedder(), s: s}
	base := cfg.IngestOptions
	if base == nil {
		base = cfg.KB.IngestOptions
	}
	// Jobs embed through the traced embedder, so their spans and timings
	// show beside the requests'.
	s.cfg.IngestOptions = func(c *store.Collection) ingest.Options {
		opt := base(c)
		opt.Embedder = s.emb
		return opt
	}
	s.jobs = ingest.NewJobs()

	mux := http.NewServeMux()
	version := cfg.Version
	if version == "" {
		version = buildinfo.Version()
	}
	hc := huma.DefaultConfig("Quarry", version)
	hc.Info.Description = "Search and ask a Quarry knowledge base: collections, documents, uploads as ingestion jobs, hybrid search under filters, cited answers."
	hc.OpenAPIPath = "/openapi"
	hc.DocsPath = ""
	hc.SchemasPath = "/schemas"
	hc.Transformers = append(hc.Transformers, errorTransformer)
	hc.Components.SecuritySchemes = map[string]*huma.SecurityScheme{
		"apiKey": {Type: "http", Scheme: "bearer", Description: "An API key from `quarry keys create`; not needed when the server has no keys (loopback only)."},
	}
	s.api = humago.New(mux, hc)
	s.register()
	useErrorSchema(s.api)

	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", s.ready)
	mux.Handle("GET /metrics", s.metrics.handler())
	mux.Handle("GET /", ui.Handler())
	for _, m := range routeMethods {
		mux.Handle(m+" /v1/", noRoute(mux))
	}
	s.handler = s.middleware(mux)
	return s, nil
}

// Handler is the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// API is the huma API, for its OpenAPI document.
func (s *Server) API() huma.API { return s.api }

// Close cancels running ingestions and waits for them. An interrupted
// ingestion leaves each source at its old or new version.
func (s *Server) Close() error { return s.jobs.Close() }

func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	if _, err := s.kb.Store().Collections(ctx); err != nil {
		s.log.Warn("server: not ready", "err", err)
		http.Error(w, "store unavailable\n", http.StatusServiceUnavailable)
		return
	}
	w.Write([]byte("ready\n"))
}

// Keyed reports whether the server requires keys (keys.Guard.Keyed), for
// choosing the address to listen on (ListenAddr).
func (s *Server) Keyed() bool { return s.guard.Keyed() }

// ListenAddr is the address to listen on: addr itself when keys protect
// the server, else addr's port on the loopback interface, with a note
// saying so (empty when addr was loopback already).
func ListenAddr(addr string, haveKeys bool) (string, string) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		host, port = addr, "8080"
	}
	if haveKeys {
		return net.JoinHostPort(host, port), ""
	}
	if host == "localhost" {
		return net.JoinHostPort(host, port), ""
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return net.JoinHostPort(host, port), ""
	}
	loop := net.JoinHostPort("127.0.0.1", port)
	note := fmt.Sprintf("no API keys: serving on %s (loopback) only, with full rights for every request; create a key with `quarry keys create` to serve %s", loop, addr)
	if host == "" {
		note = fmt.Sprintf("no API keys: serving on %s (loopback) only, with full rights for every request; create a key with `quarry keys create` to serve other hosts", loop)
	}
	return loop, note
}
