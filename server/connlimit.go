package server

import (
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// connLimiter is the listener every Quarry HTTP server accepts through. It
// holds the limits that must act before a request is read, so before any
// key is checked:
//
//   - at most perPeer connections per peer (peerKey); a peer's connection
//     past that is closed as soon as it is accepted, so a single peer
//     cannot fill the listener;
//   - a header deadline on every new connection, so one that never sends a
//     byte is closed after it too (net/http arms ReadHeaderTimeout at the
//     same moment; the deadline here keeps the rule from resting on that);
//   - at most max connections at once; when a connection arrives at the
//     cap, the oldest one not being served (StateNew: no complete request
//     header yet; StateIdle: kept alive between requests) is closed to make
//     room. Connections serving a request (StateActive, event streams
//     included) are never closed for this: with every slot active, the new
//     connection waits for one to turn idle or close, as under
//     netutil.LimitListener, which this replaces.
//
// The http.Server serving it must report states with ConnState (serveOn
// wires it), or no connection would ever look idle.
type connLimiter struct {
	net.Listener
	max, perPeer  int // perPeer <= 0: no limit per peer
	headerTimeout time.Duration
	log           *slog.Logger
	name          string

	mu     sync.Mutex
	change *sync.Cond // broadcast when a slot frees, a connection turns idle, or the listener closes
	conns  map[*limitedConn]struct{}
	peers  map[string]*peerConns
	closed bool
}

// peerConns is what the limiter knows of one peer.
type peerConns struct {
	open int
	// refused says a connection was refused since the peer last had none
	// open: the warning is logged once per flood, not once a connection.
	refused bool
}

func newConnLimiter(ln net.Listener, opt ServeOptions) *connLimiter {
	l := &connLimiter{
		Listener: ln, max: opt.MaxConns, perPeer: opt.MaxConnsPerPeer, headerTimeout: opt.HeaderTimeout,
		log: opt.Logger, name: opt.Name,
		conns: make(map[*limitedConn]struct{}), peers: make(map[string]*peerConns),
	}
	l.change = sync.NewCond(&l.mu)
	return l
}

// Accept returns the next connection within the limits, closing those
// past a peer's limit and, at the cap, the oldest idle one.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if lc := l.admit(c); lc != nil {
			return lc, nil
		}
	}
}

// admit takes a slot for c, or closes c and returns nil when its peer is at
// its limit or the listener closed while c waited for a slot.
func (l *connLimiter) admit(c net.Conn) *limitedConn {
	key := peerKey(c.RemoteAddr())
	l.mu.Lock()
	p := l.peers[key]
	if p == nil {
		p = &peerConns{}
		l.peers[key] = p
	}
	if l.perPeer > 0 && p.open >= l.perPeer {
		warn := !p.refused
		p.refused = true
		l.mu.Unlock()
		c.Close()
		if warn {
			l.log.Warn(l.name+": a peer is at its connection limit; closing its new connections until it has none open",
				"peer", key, "max_conns_per_peer", l.perPeer)
		}
		return nil
	}
	p.open++ // counted while it waits, so the peer's next connection sees it
	var reaped []*limitedConn
	for len(l.conns) >= l.max && !l.closed {
		if v := l.oldestIdle(); v != nil {
			l.forget(v)
			reaped = append(reaped, v)
			continue
		}
		l.change.Wait()
	}
	if l.closed {
		l.release(key)
		l.mu.Unlock()
		c.Close()
		return nil
	}
	// Set before c is handed on, so it cannot overwrite a deadline
	// net/http sets later (the same one first, from ReadHeaderTimeout).
	_ = c.SetReadDeadline(time.Now().Add(l.headerTimeout))
	lc := &limitedConn{Conn: c, l: l, peer: key, state: http.StateNew, since: time.Now()}
	l.conns[lc] = struct{}{}
	l.mu.Unlock()
	for _, v := range reaped {
		_ = v.Conn.Close()
		l.log.Debug(l.name+": closed an idle connection to make room", "peer", v.peer, "max_conns", l.max)
	}
	return lc
}

// oldestIdle is the connection longest in StateNew or StateIdle, or nil.
// l.mu is held.
func (l *connLimiter) oldestIdle() *limitedConn {
	var v *limitedConn
	for c := range l.conns {
		if (c.state == http.StateNew || c.state == http.StateIdle) && (v == nil || c.since.Before(v.since)) {
			v = c
		}
	}
	return v
}

// forget gives up c's slot and its peer's count; a second call does
// nothing. l.mu is held.
func (l *connLimiter) forget(c *limitedConn) {
	if _, ok := l.conns[c]; !ok {
		return
	}
	delete(l.conns, c)
	l.release(c.peer)
	l.change.Broadcast()
}

// release takes one connection off a peer's count. l.mu is held.
func (l *connLimiter) release(key string) {
	p := l.peers[key]
	if p == nil {
		return
	}
	if p.open--; p.open <= 0 {
		delete(l.peers, key)
	}
}

// connState is the http.Server's ConnState hook: it keeps each
// connection's state, and when it entered it, for the reaping at the cap.
func (l *connLimiter) connState(c net.Conn, s http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch s {
	case http.StateClosed:
		l.forget(lc)
	case http.StateNew:
		// Already so since admit; its time stays the accept time.
	default:
		lc.state, lc.since = s, time.Now()
		if s == http.StateIdle {
			l.change.Broadcast()
		}
	}
}

// Close closes the listener and wakes a connection waiting for a slot,
// which is then closed too.
func (l *connLimiter) Close() error {
	l.mu.Lock()
	l.closed = true
	l.change.Broadcast()
	l.mu.Unlock()
	return l.Listener.Close()
}

// limitedConn is a connection holding one of a connLimiter's slots until
// it closes.
type limitedConn struct {
	net.Conn
	l    *connLimiter
	peer string
	// state and since are guarded by l.mu.
	state http.ConnState
	since time.Time
}

func (c *limitedConn) Close() error {
	c.l.mu.Lock()
	c.l.forget(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// peerKey names the peer a connection counts against: its IP address, or
// for IPv6 its /64 network. A /64 is the smallest network an IPv6 link is
// given (SLAAC hands every host on it addresses of its own choosing), so
// one client can rotate through 2^64 addresses of its own; counting them
// one by one would let it open as many connections as it likes, while a
// /64 rarely holds more than one household or machine. IPv4-mapped IPv6
// addresses count as the IPv4 address. An address that is not an IP (a
// test's pipe) is its own peer.
func peerKey(a net.Addr) string {
	var ip net.IP
	switch a := a.(type) {
	case *net.TCPAddr:
		ip = a.IP
	default:
		host, _, err := net.SplitHostPort(a.String())
		if err != nil {
			return a.String()
		}
		if ip = net.ParseIP(host); ip == nil {
			return a.String()
		}
	}
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	return (&net.IPNet{IP: ip.Mask(net.CIDRMask(64, 128)), Mask: net.CIDRMask(64, 128)}).String()
}
