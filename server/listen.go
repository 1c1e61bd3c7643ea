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

	"golang.org/x/net/netutil"
)

// Defaults for ServeOptions.
const (
	// DefaultMaxConns bounds the connections a listener holds open at once.
	DefaultMaxConns = 256
	// DefaultBodyTimeout bounds reading one request's body, so a client
	// that sends it a byte at a time cannot hold a connection for long.
	DefaultBodyTimeout = time.Minute
)

// ServeOptions are how ListenAndServe listens.
type ServeOptions struct {
	// Addr is host:port. Without keys it is moved to loopback (ListenAddr).
	Addr string
	// Keyed says the handler requires keys; only then may Addr be any
	// address.
	Keyed bool
	// MaxConns and BodyTimeout default to DefaultMaxConns and
	// DefaultBodyTimeout when 0.
	MaxConns    int
	BodyTimeout time.Duration
	// Name starts log lines ("serve", "mcp").
	Name   string
	Logger *slog.Logger
}

// ListenAndServe serves h until ctx is cancelled, then drains requests for
// up to five seconds. Every Quarry HTTP listener (quarry serve, quarry mcp
// --http) goes through it, so they share one set of limits: the
// loopback-unless-keys rule, a header timeout, a body read timeout, a
// connection cap and a header size cap.
func ListenAndServe(ctx context.Context, h http.Handler, opt ServeOptions) error {
	if opt.MaxConns <= 0 {
		opt.MaxConns = DefaultMaxConns
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
	hs := &http.Server{Handler: bodyDeadline(h, opt.BodyTimeout), ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	opt.Logger.Info(opt.Name+": listening", "url", "http://"+ln.Addr().String(), "max_conns", opt.MaxConns)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(netutil.LimitListener(ln, opt.MaxConns)) }()
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
