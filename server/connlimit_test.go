package server_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/embed/hash"
	"github.com/quarry-rag/quarry/keys"
	"github.com/quarry-rag/quarry/mcp"
	"github.com/quarry-rag/quarry/server"
	"github.com/quarry-rag/quarry/store"
)

// answerBound is how long another client's request may take while a
// listener is flooded: generous, so a loaded machine under -race stays
// well inside it; unprotected, the wait is 10 s a round of 256 flood
// connections.
const answerBound = 5 * time.Second

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })

// otherPeer is a dialer from 127.0.0.2: Linux routes all of 127/8 to the
// loopback interface, so this is another peer to the listener than the
// flood's 127.0.0.1, counted apart by the real peer key. Elsewhere the
// test is skipped.
func otherPeer(t *testing.T, addr string) *net.Dialer {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: answerBound}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Skipf("cannot dial from 127.0.0.2 (only Linux routes all of 127/8 to loopback): %v", err)
	}
	c.Close()
	return d
}

// otherClient is an HTTP client of another peer, one connection a request.
func otherClient(t *testing.T, addr string) *http.Client {
	t.Helper()
	d := otherPeer(t, addr)
	return &http.Client{Timeout: answerBound, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

// flood opens n connections to addr from 127.0.0.1, each sending prefix
// (nothing: idle) and then holding; they are closed when the test ends.
func flood(t *testing.T, addr string, n int, prefix string) []net.Conn {
	t.Helper()
	needFDs(t, uint64(2*n+256))
	conns := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range n {
		c, err := net.DialTimeout("tcp", addr, answerBound)
		if err != nil {
			t.Fatalf("flood connection %d: %v", len(conns)+1, err)
		}
		conns = append(conns, c)
		if prefix != "" {
			if _, err := io.WriteString(c, prefix); err != nil {
				t.Fatalf("flood connection %d: %v", len(conns), err)
			}
		}
	}
	return conns
}

// closedWithin says whether the server closed c within d, reading past
// what it may send first (a 408 for half a header).
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// get makes a request on a kept-alive connection c and reads the answer.
func get(t *testing.T, c net.Conn, r *bufio.Reader) {
	t.Helper()
	c.SetDeadline(time.Now().Add(answerBound))
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	c.SetDeadline(time.Time{})
}

// TestFlood: one peer's 1,000 idle connections, or 400 holding half a
// request line, do not keep another client's request from an answer:
// with the default limits the peer cap closes most at once, and without
// it the listener closes the oldest idle ones to make room.
func TestFlood(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n      int
		prefix string
		opt    server.ServeOptions
	}{
		{"1000 idle", 1000, "", server.ServeOptions{}},
		{"400 half-written", 400, "GET / HT", server.ServeOptions{}},
		{"1000 idle, no peer cap", 1000, "", server.ServeOptions{MaxConnsPerPeer: -1}},
		{"400 half-written, no peer cap", 400, "GET / HT", server.ServeOptions{MaxConnsPerPeer: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := listen(t, tc.opt, okHandler)
			client := otherClient(t, addr)
			flood(t, addr, tc.n, tc.prefix)
			var worst time.Duration
			for range 3 {
				start := time.Now()
				resp, err := client.Get("http://" + addr)
				took := time.Since(start)
				if err != nil {
					t.Fatalf("another client's request, after %v: %v", took, err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("another client's request: %s", resp.Status)
				}
				worst = max(worst, took)
			}
			t.Logf("another client's request answered in at most %v", worst)
		})
	}
}

// TestPeerCap: a peer's connection past MaxConnsPerPeer is closed at once
// while another peer is served, and the peer gets a slot again once one
// of its connections closes.
func TestPeerCap(t *testing.T) {
	addr := listen(t, server.ServeOptions{MaxConnsPerPeer: 2}, okHandler)
	client := otherClient(t, addr)
	conns := flood(t, addr, 3, "")
	if !closedWithin(conns[2], answerBound) {
		t.Fatal("a third connection of a peer with a cap of two stayed open")
	}
	for i, c := range conns[:2] {
		if closedWithin(c, 100*time.Millisecond) {
			t.Fatalf("connection %d within the cap was closed", i+1)
		}
	}
	resp, err := client.Get("http://" + addr)
	if err != nil {
		t.Fatalf("another peer: %v", err)
	}
	resp.Body.Close()
	conns[0].Close()
	// The server learns of the close when its read fails: try until then.
	deadline := time.Now().Add(answerBound)
	for {
		c := flood(t, addr, 1, "")[0]
		if !closedWithin(c, 50*time.Millisecond) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the peer got no slot back after closing a connection")
		}
	}
}

// TestHeaderTimeout: a connection without a whole request header is
// closed after HeaderTimeout, whether it never sent a byte, sent half a
// request line, or was kept alive and then sent half of its next one.
func TestHeaderTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	addr := listen(t, server.ServeOptions{HeaderTimeout: timeout}, okHandler)
	for _, tc := range []struct {
		name      string
		keptAlive bool
		prefix    string
	}{
		{"never a byte", false, ""},
		{"half a request line", false, "GET / HT"},
		{"kept alive, then half a request line", true, "GET / HT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := flood(t, addr, 1, "")[0]
			if tc.keptAlive {
				get(t, c, bufio.NewReader(c))
			}
			start := time.Now()
			io.WriteString(c, tc.prefix)
			if !closedWithin(c, answerBound) {
				t.Fatalf("still open after %v", answerBound)
			}
			took := time.Since(start)
			t.Logf("closed after %v", took)
			if took < timeout/2 {
				t.Fatalf("closed after %v, before the header timeout of %v", took, timeout)
			}
		})
	}
}

// TestIdleReapedAtCap: at MaxConns, a new connection closes the oldest
// one not serving a request, kept alive or never sent a byte, and is
// served; the newer idle one stays.
func TestIdleReapedAtCap(t *testing.T) {
	for _, tc := range []struct {
		name      string
		keptAlive bool
	}{
		{"kept alive", true},
		{"never a byte", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := listen(t, server.ServeOptions{MaxConns: 2}, okHandler)
			client := otherClient(t, addr)
			held := flood(t, addr, 2, "")
			readers := []*bufio.Reader{bufio.NewReader(held[0]), bufio.NewReader(held[1])}
			if tc.keptAlive {
				for i, c := range held {
					get(t, c, readers[i])
				}
			}
			start := time.Now()
			resp, err := client.Get("http://" + addr)
			if err != nil {
				t.Fatalf("a new client at the cap: %v", err)
			}
			resp.Body.Close()
			t.Logf("a new client at the cap answered in %v", time.Since(start))
			if !closedWithin(held[0], answerBound) {
				t.Fatal("the oldest idle connection stayed open")
			}
			get(t, held[1], readers[1]) // the newer one still serves
		})
	}
}

// TestMCPFlood: quarry mcp --http serves through the same ListenAndServe
// as quarry serve, with the same ServeOptions from the same flags; here
// its handler answers another client's MCP session while one peer holds
// 1,000 idle connections.
func TestMCPFlood(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	emb, err := hash.New(hash.Config{})
	if err != nil {
		t.Fatal(err)
	}
	kb, err := quarry.New(ctx, st, quarry.WithEmbedder(emb), quarry.WithMode("keyword"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kb.Close() })
	srv, err := mcp.New(mcp.Config{KB: kb, Roots: []string{t.TempDir()}, ReadOnly: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	kf, err := keys.Open(filepath.Join(t.TempDir(), "keys.json"))
	if err != nil {
		t.Fatal(err)
	}
	addr := listen(t, server.ServeOptions{Name: "mcp"}, srv.HTTPHandler(kf))
	d := otherPeer(t, addr)
	flood(t, addr, 1000, "")

	tr := &http.Transport{DialContext: d.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	cctx, cancel := context.WithTimeout(ctx, answerBound)
	defer cancel()
	start := time.Now()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(cctx,
		&sdk.StreamableClientTransport{Endpoint: "http://" + addr, HTTPClient: &http.Client{Transport: tr}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("another client's MCP session, after %v: %v", time.Since(start), err)
	}
	t.Cleanup(func() { cs.Close() })
	tools, err := cs.ListTools(cctx, nil)
	if err != nil {
		t.Fatalf("tools/list, after %v: %v", time.Since(start), err)
	}
	if len(tools.Tools) == 0 {
		t.Fatal("tools/list listed nothing")
	}
	t.Logf("another client's MCP session and tools/list answered in %v", time.Since(start))
}

// TestPeerKey: IPv4 addresses count one by one, IPv6 ones by /64, and an
// IPv4-mapped IPv6 address as its IPv4 address.
func TestPeerKey(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 1}, "192.0.2.7"},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.7"), Port: 2}, "192.0.2.7"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:aaaa::1"), Port: 3}, "2001:db8:1:2::/64"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:ffff:ffff:ffff:ffff"), Port: 4}, "2001:db8:1:2::/64"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:3::1"), Port: 5}, "2001:db8:1:3::/64"},
		{&net.UDPAddr{IP: net.ParseIP("::1"), Port: 6}, "::/64"},
		{&net.UnixAddr{Name: "/run/q.sock", Net: "unix"}, "/run/q.sock"},
	} {
		if got := server.PeerKey(tc.addr); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.addr, got, tc.want)
		}
	}
}
