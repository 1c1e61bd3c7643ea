package server

import (
	"context"
	"net"
	"net/http"
)

// ServeOn serves h on ln with opt's limits, for tests of the listener.
func ServeOn(ctx context.Context, ln net.Listener, h http.Handler, opt ServeOptions) error {
	return serveOn(ctx, ln, h, opt.withDefaults())
}

// PeerKey is the peer a connection from a counts against.
var PeerKey = peerKey
