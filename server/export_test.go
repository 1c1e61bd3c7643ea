package server

import (
	"context"
	"net"
	"net/http"
)

// ServeOn serves h on ln with opt's limits, for tests of the listener.
func ServeOn(ctx context.Context, ln net.Listener, h http.Handler, opt ServeOptions) error {
	if opt.MaxConns <= 0 {
		opt.MaxConns = DefaultMaxConns
	}
	if opt.BodyTimeout <= 0 {
		opt.BodyTimeout = DefaultBodyTimeout
	}
	return serveOn(ctx, ln, h, opt)
}
