// Package mcp serves a Quarry knowledge base to AI assistants over the Model
// Context Protocol: tools to search, ask, ingest, add, delete and inspect,
// each with a JSON schema and a description written for a model.
//
// A Server is transport-neutral: Run serves one session over stdio (or any
// sdk transport), Handler serves streamable HTTP. Ingestions run as jobs in
// goroutines the Server owns; Close cancels them and waits.
package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/llm"
	"github.com/quarry-rag/quarry/load"
	"github.com/quarry-rag/quarry/store"
)

// Config is what a Server serves. Store, Embedder and Collection are
// required; IngestOptions is required unless ReadOnly.
type Config struct {
	// Store holds the collections.
	Store *store.Store
	// Embedder embeds queries and added documents; collections built with
	// another model are refused.
	Embedder embed.Embedder
	// Collection is the collection a tool uses when the call names none.
	Collection string
	// Mode is the search mode when a call names none; ModeAuto lets the
	// store pick (hybrid with a query and an embedding).
	Mode store.Mode
	// AskMode is the retrieval mode of knowledge_ask; ModeAuto means
	// hybrid.
	AskMode store.Mode
	// TopK is the number of search results when a call names none
	// (store.DefaultTopK when 0).
	TopK int
	// IngestOptions returns the ingestion settings for a collection
	// (embedder, loader, chunking). The Server sets Collection, Jobs and
	// JobParams itself.
	IngestOptions func(*store.Collection) ingest.Options
	// Roots confine the paths knowledge_ingest accepts; relative paths
	// in a call are resolved against the first. Empty means the current
	// directory.
	Roots []string
	// ReadOnly leaves out the tools that change the knowledge base.
	ReadOnly bool
	// Scope limits what every call reaches; the zero Scope limits nothing.
	Scope Scope
	// ScopeFor, when set, gives each call its own scope (from the caller's
	// credentials, say, in req.Extra.TokenInfo) instead of Scope. An error
	// refuses the call.
	ScopeFor func(ctx context.Context, req *sdk.CallToolRequest) (Scope, error)
	// Model writes knowledge_ask answers; nil answers extractively,
	// quoting the passages.
	Model llm.ChatModel
	// Version is reported to clients.
	Version string
	// Logger receives the server's records; slog.Default() when nil.
	Logger *slog.Logger
}

// Scope is what a client may reach, with the rules of the HTTP API's keys:
// a mandatory filter merged into every search, answer, count and delete,
// which documents it adds must match.
type Scope struct {
	// Collections the client may use; empty means all.
	Collections []string
	// Filter is the mandatory filter; nil means none. Under a filter,
	// knowledge_ingest and knowledge_ingest_status are refused (files
	// carry no tenant) and knowledge_status reports no jobs.
	Filter filter.Expr
	// AllowRawFilters lets the client's filters carry raw, store-tagged
	// fragments (the store's own query language); off by default. They are
	// merged under Filter, so they only narrow.
	AllowRawFilters bool
}

func (sc Scope) allows(collection string) bool {
	return len(sc.Collections) == 0 || slices.Contains(sc.Collections, collection)
}

// scope returns the scope of a call.
func (s *Server) scope(ctx context.Context, req *sdk.CallToolRequest) (Scope, error) {
	if s.cfg.ScopeFor == nil {
		return s.cfg.Scope, nil
	}
	sc, err := s.cfg.ScopeFor(ctx, req)
	if err != nil {
		return Scope{}, fmt.Errorf("refused: %w", err)
	}
	return sc, nil
}

// Server is a Quarry MCP server. It is safe for concurrent sessions.
type Server struct {
	cfg   Config
	roots *load.Roots
	mcp   *sdk.Server
	log   *slog.Logger

	// jobCtx is cancelled by Close to stop running ingestions.
	jobCtx    context.Context
	cancelJob context.CancelFunc

	mu     sync.Mutex // guards closed and the wg.Add that must not race Close
	closed bool
	jobs   sync.WaitGroup
}

// New checks cfg and builds a Server with its tools registered.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil || cfg.Embedder == nil {
		return nil, errors.New("mcp: a store and an embedder are required")
	}
	if cfg.Collection == "" {
		return nil, errors.New("mcp: a default collection is required")
	}
	if !cfg.ReadOnly && cfg.IngestOptions == nil {
		return nil, errors.New("mcp: IngestOptions is required unless the server is read-only")
	}
	if cfg.TopK < 0 {
		return nil, fmt.Errorf("mcp: top k must be positive, got %d", cfg.TopK)
	}
	s := &Server{cfg: cfg, log: cfg.Logger}
	if s.log == nil {
		s.log = slog.Default()
	}
	roots, err := load.NewRoots(cfg.Roots)
	if err != nil {
		return nil, fmt.Errorf("mcp: %w", err)
	}
	s.roots = roots
	version := cfg.Version
	if version == "" {
		version = "dev"
	}
	s.mcp = sdk.NewServer(&sdk.Implementation{Name: "quarry", Title: "Quarry knowledge base", Version: version},
		&sdk.ServerOptions{Instructions: instructions, Logger: s.log})
	s.jobCtx, s.cancelJob = context.WithCancel(context.Background())
	if err := s.addTools(); err != nil {
		return nil, err
	}
	return s, nil
}

const instructions = `Quarry is a searchable knowledge base of documents. Use knowledge_search to find passages ` +
	`(each with its source, page, headings and lines, so you can cite them), knowledge_ask for a cited answer, ` +
	`and knowledge_status to see which collections exist.`

// MCP returns the underlying SDK server, for transports this package does
// not wrap.
func (s *Server) MCP() *sdk.Server { return s.mcp }

// Run serves one session over t (sdk.StdioTransport for `quarry mcp`)
// until the client disconnects or ctx is cancelled. It does not Close the
// Server.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	if err := s.mcp.Run(ctx, t); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("mcp: %w", err)
	}
	return nil
}

// sessionTimeout closes HTTP sessions a client abandoned without saying
// so; a client that comes back after it starts a new session.
const sessionTimeout = 30 * time.Minute

// Handler serves the tools over streamable HTTP, one session per client.
// Requests a browser sends from another site's page are refused, and the
// SDK refuses localhost requests naming another host (DNS rebinding).
func (s *Server) Handler() http.Handler {
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.mcp },
		&sdk.StreamableHTTPOptions{Logger: s.log, SessionTimeout: sessionTimeout})
	return http.NewCrossOriginProtection().Handler(h)
}

// Close cancels running ingestions and waits for them to stop. An
// interrupted ingestion leaves each source at its old or its new version
// and is recorded as failed, so running it again finishes it.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancelJob()
	s.jobs.Wait()
	return nil
}

// goJob runs fn in a goroutine the Server owns, with a context Close
// cancels; it fails once the Server is closed.
func (s *Server) goJob(fn func(ctx context.Context)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("the server is shutting down")
	}
	s.jobs.Add(1)
	go func() {
		defer s.jobs.Done()
		fn(s.jobCtx)
	}()
	return nil
}
