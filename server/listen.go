package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// Defaults for ServeOptions.
const (
	// DefaultMaxConns bounds the connections a listener holds open at once.
	// At the cap the oldest idle connection is closed to make room (see
	// ServeOptions.MaxConns).
	DefaultMaxConns = 256
	// DefaultMaxConnsPerPeer bounds the connections one peer (an IPv4
	// address, an IPv6 /64) holds open at once: a quarter of
	// DefaultMaxConns, so one peer cannot fill a listener, and far above
	// the six a browser opens or a client's usual pool.
	DefaultMaxConnsPerPeer = 64
	// DefaultHeaderTimeout bounds the wait for a request's header: from
	// the connection's start for its first request, from the first bytes
	// of the next for a kept-alive one. A header is one packet for any
	// real client, so a few seconds is generous; a connection holding
	// half a request line loses its slot quickly.
	DefaultHeaderTimeout = 5 * time.Second
	// DefaultBodyTimeout bounds reading one request's body, so a client
	// that sends it a byte at a time cannot hold a connection for long.
	DefaultBodyTimeout = time.Minute
)

// idleTimeout closes a kept-alive connection that sends no next request.
// At the connection cap idle ones go first anyway.
const idleTimeout = 2 * time.Minute

// ServeOptions are how ListenAndServe listens. Zero values take the
// defaults above.
type ServeOptions struct {
	// Addr is host:port. Without keys it is moved to loopback (ListenAddr).
	Addr string
	// Keyed says the handler requires keys; only then may Addr be any
	// address.
	Keyed bool
	// MaxConns caps the connections open at once (DefaultMaxConns when
	// 0). A connection arriving at the cap closes the oldest one that is
	// not serving a request (no complete header yet, or kept alive
	// between requests); with every one serving, it waits for a slot.
	MaxConns int
	// MaxConnsPerPeer caps the connections one peer has open at once
	// (DefaultMaxConnsPerPeer when 0; negative: no cap, e.g. behind a
	// reverse proxy, where every connection comes from the proxy). A
	// connection past it is closed as soon as it is accepted.
	MaxConnsPerPeer int
	// HeaderTimeout bounds the wait for a request header
	// (DefaultHeaderTimeout when 0).
	HeaderTimeout time.Duration
	// BodyTimeout bounds reading a request body (DefaultBodyTimeout when
	// 0).
	BodyTimeout time.Duration
	// Name starts log lines ("serve", "mcp").
	Name   string
	Logger *slog.Logger
}

// withDefaults is opt with every unset limit, the logger and the name
// given their defaults.
func (opt ServeOptions) withDefaults() ServeOptions {
	if opt.MaxConns <= 0 {
		opt.MaxConns = DefaultMaxConns
	}
	if opt.MaxConnsPerPeer == 0 {
		opt.MaxConnsPerPeer = DefaultMaxConnsPerPeer
	}
	if opt.HeaderTimeout <= 0 {
		opt.HeaderTimeout = DefaultHeaderTimeout
	}
	if opt.BodyTimeout <= 0 {
		opt.BodyTimeout = DefaultBodyTimeout
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.Name == "" {
		opt.Name = "serve"
	}
	return opt
}

// ListenAndServe serves h until ctx is cancelled, then drains requests for
// up to five seconds. Every Quarry HTTP listener (quarry serve, quarry mcp
// --http) goes through it, so they share one set of limits, all acting
// before a request is read and so before any key is checked: the
// loopback-unless-keys rule, a connection cap that closes idle connections
// first, a cap per peer, a header timeout, a body read timeout and a
// header size cap.
func ListenAndServe(ctx context.Context, h http.Handler, opt ServeOptions) error {
	opt = opt.withDefaults()
	addr, note := ListenAddr(opt.Addr, opt.Keyed)
	if note != "" {
		opt.Logger.Warn(opt.Name + ": " + note)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s: listen on %s: %w", opt.Name, addr, err)
	}
	return serveOn(ctx, ln, h, opt)
}

// serveOn is ListenAndServe on a listener, its options already defaulted.
func serveOn(ctx context.Context, ln net.Listener, h http.Handler, opt ServeOptions) error {
	cl := newConnLimiter(ln, opt)
	hs := &http.Server{Handler: bodyDeadline(h, opt.BodyTimeout), ReadHeaderTimeout: opt.HeaderTimeout,
		IdleTimeout: idleTimeout, MaxHeaderBytes: 64 << 10, ConnState: cl.connState}
	opt.Logger.Info(opt.Name+": listening", "url", "http://"+ln.Addr().String(), "max_conns", opt.MaxConns,
		"max_conns_per_peer", opt.MaxConnsPerPeer, "header_timeout", opt.HeaderTimeout)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(cl) }()
	select {
	case err := <-errc:
		return fmt.Errorf("%s: %w", opt.Name, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close() // event streams stay open until closed
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("%s: %w", opt.Name, err)
	}
	return nil
}

// bodyDeadline gives a request with a body d to send all of it. The
// deadline is lifted once the whole body is read, so an event stream
// answering the request is not cut off by it: net/http cancels a request
// whose connection hits a read deadline.
func bodyDeadline(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			if rc.SetReadDeadline(time.Now().Add(d)) == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, lift: func() { _ = rc.SetReadDeadline(time.Time{}) }}
			}
		}
		h.ServeHTTP(w, r)
	})
}

type deadlineBody struct {
	io.ReadCloser
	once sync.Once
	lift func()
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		// Only a whole body lifts it: after a timeout the deadline must
		// stay, or net/http's drain of the rest would wait for ever.
		b.once.Do(b.lift)
	}
	return n, err
}
