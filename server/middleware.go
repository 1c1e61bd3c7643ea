package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/keys"
)

// principal is who makes a request: a key, or everyone on a server
// without keys.
type principal struct {
	key   *keys.Key // nil without keys
	perm  keys.Permission
	scope filter.Expr // the key's mandatory filter; nil for none
}

// keyID names the principal in logs and thread ids.
func (p *principal) keyID() string {
	if p.key == nil {
		return ""
	}
	return p.key.ID
}

func (p *principal) allows(collection string) bool {
	return p.key == nil || len(p.key.Collections) == 0 || slices.Contains(p.key.Collections, collection)
}

type principalKey struct{}

func principalFrom(ctx context.Context) *principal {
	p, _ := ctx.Value(principalKey{}).(*principal)
	return p
}

// statusWriter records the status a handler wrote; it passes Flush
// through for event streams.
type statusWriter struct {
	http.ResponseWriter
	status int
	route  string // the mux pattern that served the request
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// writeError writes an Error as JSON, outside huma.
func writeError(w http.ResponseWriter, e *Error) {
	w.Header().Set("Content-Type", problemJSON)
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(e)
}

// streaming reports whether a path is an event stream, which runs without
// the request timeout.
func streaming(path string) bool {
	return strings.HasSuffix(path, "/stream") || strings.HasSuffix(path, "/events")
}

// public reports whether a path needs no key: probes, the UI's files and
// the API's description.
func public(path string) bool {
	switch {
	case path == "/healthz", path == "/readyz", path == "/", path == "/openapi.json", path == "/openapi.yaml",
		strings.HasPrefix(path, "/ui/"), strings.HasPrefix(path, "/schemas/"), path == "/openapi-3.0.json", path == "/openapi-3.0.yaml":
		return true
	}
	return false
}

// middleware wraps the routes: span, metrics and log line; CORS for the
// configured origins; cross-origin protection; the caller's key and rate
// limit; body size limits; the request timeout.
func (s *Server) middleware(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	for _, o := range s.cfg.CORSOrigins {
		_ = cop.AddTrustedOrigin(o) // checked by the command line
	}
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, apiError(http.StatusForbidden, CodeCrossOrigin, "a browser request from another site's page: add its origin to the server's CORS origins to allow it"))
	}))
	inner := cop.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !public(r.URL.Path) {
			p, e := s.authenticate(r)
			if e != nil {
				if e.Status == http.StatusUnauthorized {
					w.Header().Set("WWW-Authenticate", `Bearer realm="quarry"`)
				}
				writeError(w, e)
				return
			}
			if r.URL.Path == "/metrics" && (!p.perm.Allows(keys.PermAdmin) || p.scope != nil) {
				writeError(w, apiError(http.StatusForbidden, CodeForbidden, "metrics need an admin key without a filter"))
				return
			}
			if e := s.limit(p); e != nil {
				w.Header().Set("Retry-After", "1")
				writeError(w, e)
				return
			}
			r = r.WithContext(quarry.Observe(context.WithValue(r.Context(), principalKey{}, p), s.hooks()))
			trace.SpanFromContext(r.Context()).SetAttributes(attribute.String("quarry.key", p.keyID()))
		}
		limit := s.cfg.MaxBodyBytes
		switch {
		case strings.HasSuffix(r.URL.Path, "/uploads"):
			limit = s.cfg.MaxUploadBytes
		case strings.HasSuffix(r.URL.Path, "/import"): // an import file has its own bound
			limit = max(limit, quarry.MaxImportBytes)
		}
		if r.ContentLength > limit {
			writeError(w, apiError(http.StatusRequestEntityTooLarge, CodeTooLarge,
				"the request body is "+byteSize(r.ContentLength)+"; this server takes at most "+byteSize(limit)))
			return
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, limit)
		}
		if !streaming(r.URL.Path) {
			ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
			defer cancel()
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(w, r)
		if sw, ok := w.(*statusWriter); ok {
			sw.route = r.Pattern
		}
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ctx, span := s.tracer.Start(r.Context(), "HTTP "+r.Method, trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		r = r.WithContext(ctx)
		sw := &statusWriter{ResponseWriter: w}
		if s.cors(sw, r) {
			return
		}
		sw.Header().Set("X-Content-Type-Options", "nosniff")
		inner.ServeHTTP(sw, r)
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		route := sw.route
		if route == "" {
			route = "unmatched"
		}
		d := time.Since(start)
		s.metrics.observeRequest(route, r.Method, status, d)
		span.SetAttributes(attribute.String("http.route", route), attribute.Int("http.response.status_code", status))
		if status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
		// The log line names the route and, through the principal, the key
		// id: never a header, a query string or a body.
		var keyID string
		if p := principalFrom(r.Context()); p != nil {
			keyID = p.keyID()
		}
		s.log.Debug("server: request", "method", r.Method, "route", route, "status", status, "duration", d, "key", keyID)
	})
}

// cors answers preflight requests and marks responses for the configured
// origins; it reports whether the request is fully answered.
func (s *Server) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || !slices.Contains(s.cfg.CORSOrigins, origin) {
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE")
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
		h.Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
		return true
	}
	return false
}

// authenticate finds the request's principal.
func (s *Server) authenticate(r *http.Request) (*principal, *Error) {
	token := ""
	if a := r.Header.Get("Authorization"); a != "" {
		scheme, rest, _ := strings.Cut(a, " ")
		if strings.EqualFold(scheme, "Bearer") {
			token = strings.TrimSpace(rest)
		}
	} else {
		token = r.Header.Get("X-API-Key")
	}
	k, keyed, err := s.guard.Admit(r.RemoteAddr, token)
	switch {
	case errors.Is(err, keys.ErrNotLoopback):
		return nil, apiError(http.StatusForbidden, CodeForbidden, err.Error())
	case err != nil:
		return nil, apiError(http.StatusUnauthorized, CodeUnauthorized, err.Error())
	case !keyed:
		return &principal{perm: keys.PermAdmin}, nil
	}
	p := &principal{key: &k, perm: k.Permission}
	if k.Filter != "" {
		f, err := filter.Parse(k.Filter)
		if err != nil {
			s.log.Error("server: a key's filter does not parse", "key", k.ID, "err", err)
			return nil, apiError(http.StatusForbidden, CodeForbidden, "this key's scope is unusable; ask for a new key")
		}
		p.scope = f
	}
	return p, nil
}

// bucket is a token bucket: rate tokens a second, up to burst.
type bucket struct {
	mu     sync.Mutex
	tokens float64
	last   time.Time
}

func (b *bucket) take(rate, burst float64, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last.IsZero() {
		b.tokens = burst
	} else {
		b.tokens = min(burst, b.tokens+now.Sub(b.last).Seconds()*rate)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// limit applies the key's rate limit; requests without a key are not
// limited (the server is then on loopback).
func (s *Server) limit(p *principal) *Error {
	if p.key == nil {
		return nil
	}
	rate := p.key.RateLimit
	if rate == 0 {
		rate = s.cfg.RateLimit
	}
	if rate < 0 {
		return nil
	}
	v, _ := s.limits.LoadOrStore(p.key.ID, &bucket{})
	if !v.(*bucket).take(rate, max(1, 2*rate), time.Now()) {
		return apiError(http.StatusTooManyRequests, CodeRateLimited, "this key's rate limit is exceeded; retry after a second")
	}
	return nil
}
