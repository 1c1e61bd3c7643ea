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
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/internal/buildinfo"
	"github.com/quarry-rag/quarry/keys"
	"github.com/quarry-rag/quarry/load"
	"github.com/quarry-rag/quarry/store"
)

// Config is what a Server serves. KB is required.
type Config struct {
	// KB is the knowledge base served: its store, embedder, default
	// collection and top-k, chat model and the post-processors every
	// answer gets. Every tool calls its operations with the call's scope.
	KB *quarry.KB
	// IngestOptions, when set, replaces KB.IngestOptions for
	// knowledge_ingest (to observe runs, say).
	IngestOptions func(*store.Collection) ingest.Options
	// Roots confine the paths knowledge_ingest accepts; relative paths
	// in a call are resolved against the first. Empty means the current
	// directory.
	Roots []string
	// ReadOnly leaves out the tools that change the knowledge base.
	ReadOnly bool
	// Scope limits what every call reaches; the zero Scope limits nothing
	// (raw filter fragments excepted, which need AllowRawFilters). Under a
	// filter, knowledge_ingest and knowledge_ingest_status are refused
	// (files carry no tenant) and knowledge_status reports no jobs.
	Scope Scope
	// ScopeFor, when set, gives each call its own scope (from the caller's
	// credentials, say, in req.Extra.TokenInfo) instead of Scope. An error
	// refuses the call.
	ScopeFor func(ctx context.Context, req *sdk.CallToolRequest) (Scope, error)
	// Version is reported to clients.
	Version string
	// Logger receives the server's records; slog.Default() when nil.
	Logger *slog.Logger
}

// Scope is what a client may reach, with the rules of the HTTP API's keys
// (quarry.Scope): a mandatory filter merged into every search, answer,
// count and delete, which documents it adds must match.
type Scope = quarry.Scope

// writes wraps the handler of a tool that changes the knowledge base: a
// client whose scope is read-only is refused before the call runs.
func writes[In, Out any](s *Server, h sdk.ToolHandlerFor[In, Out]) sdk.ToolHandlerFor[In, Out] {
	return func(ctx context.Context, req *sdk.CallToolRequest, in In) (*sdk.CallToolResult, Out, error) {
		sc, err := s.scope(ctx, req)
		if err == nil && sc.ReadOnly {
			err = fmt.Errorf("%w: refused: this client may only read (its key has read permission)", quarry.ErrForbidden)
		}
		if err != nil {
			var zero Out
			return nil, zero, err
		}
		return h(ctx, req, in)
	}
}

// scope returns the scope of a call.
func (s *Server) scope(ctx context.Context, req *sdk.CallToolRequest) (Scope, error) {
	if req != nil && req.Extra != nil && req.Extra.TokenInfo != nil {
		if k, ok := req.Extra.TokenInfo.Extra[tokenKey].(keys.Key); ok {
			sc, err := quarry.KeyScope(s.cfg.Scope, k)
			if err != nil {
				return Scope{}, fmt.Errorf("%w: refused: %w", quarry.ErrForbidden, err)
			}
			return sc, nil
		}
	}
	if s.cfg.ScopeFor == nil {
		return s.cfg.Scope, nil
	}
	sc, err := s.cfg.ScopeFor(ctx, req)
	if err != nil {
		return Scope{}, fmt.Errorf("%w: refused: %w", quarry.ErrForbidden, err)
	}
	return sc, nil
}

// Server is a Quarry MCP server. It is safe for concurrent sessions.
type Server struct {
	cfg   Config
	kb    *quarry.KB
	roots *load.Roots
	mcp   *sdk.Server
	log   *slog.Logger

	// jobs runs knowledge_ingest's ingestions; Close stops them.
	jobs *ingest.Jobs
}

// New checks cfg and builds a Server with its tools registered.
func New(cfg Config) (*Server, error) {
	if cfg.KB == nil {
		return nil, errors.New("mcp: a knowledge base is required")
	}
	if cfg.IngestOptions == nil {
		cfg.IngestOptions = cfg.KB.IngestOptions
	}
	if err := cfg.KB.CheckAnswers(); err != nil {
		return nil, fmt.Errorf("mcp: %w", err)
	}
	s := &Server{cfg: cfg, kb: cfg.KB, log: cfg.Logger}
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
		version = buildinfo.Version()
	}
	s.mcp = sdk.NewServer(&sdk.Implementation{Name: "quarry", Title: "Quarry knowledge base", Version: version},
		&sdk.ServerOptions{Instructions: instructions, Logger: s.log})
	s.jobs = ingest.NewJobs()
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

// tokenKey is where a verified key travels in a call's TokenInfo.
const tokenKey = "quarry.key"

// HTTPHandler is Handler under Quarry's API keys, admitted by the same
// keys.Guard as the HTTP API: once kf holds an active key (at start or
// since), every request needs one as a bearer token and each call is held
// to that key's scope (its collections, filter and permission, on top of
// Config.Scope); a key file that empties later refuses everyone. Without
// keys only loopback clients are answered. The session a key opened stays
// bound to it.
func (s *Server) HTTPHandler(kf *keys.File) http.Handler {
	guard := keys.NewGuard(kf, s.log)
	plain := s.Handler()
	verify := func(_ context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
		k, _, err := guard.Admit(r.RemoteAddr, token)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", auth.ErrInvalidToken, err)
		}
		// Keys do not expire; the file is re-read as it changes, so a
		// revoked key is refused at its next request.
		return &auth.TokenInfo{UserID: k.ID, Expiration: time.Now().Add(time.Hour), Extra: map[string]any{tokenKey: k}}, nil
	}
	authed := auth.RequireBearerToken(verify, nil)(plain)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if guard.Keyed() {
			authed.ServeHTTP(w, r)
			return
		}
		if _, _, err := guard.Admit(r.RemoteAddr, ""); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		plain.ServeHTTP(w, r)
	})
}

// Close cancels running ingestions and waits for them to stop. An
// interrupted ingestion leaves each source at its old or its new version
// and is recorded as failed, so running it again finishes it.
func (s *Server) Close() error { return s.jobs.Close() }

// addTool registers a tool whose errors reach the client as quarry.Fail
// makes them: Quarry's message where the client can change something, an
// error id (logged here beside the real error) for anything else, never a
// store's, driver's or provider's text.
func addTool[In, Out any](s *Server, t *sdk.Tool, h sdk.ToolHandlerFor[In, Out]) {
	sdk.AddTool(s.mcp, t, func(ctx context.Context, req *sdk.CallToolRequest, in In) (*sdk.CallToolResult, Out, error) {
		res, out, err := h(ctx, req, in)
		if err != nil {
			var zero Out
			f := quarry.Fail(ctx, s.log, err)
			return nil, zero, fmt.Errorf("%s (%s)", f.Message, f.Code)
		}
		return res, out, nil
	})
}
