package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/server"
)

func listen(t *testing.T, opt server.ServeOptions, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	opt.Logger = slog.New(slog.DiscardHandler)
	go func() { done <- server.ServeOn(ctx, ln, h, opt) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return ln.Addr().String()
}

// TestSlowBodyIsCut: a client that sends its body a byte at a time loses
// the connection when the body timeout passes.
func TestSlowBodyIsCut(t *testing.T) {
	addr := listen(t, server.ServeOptions{BodyTimeout: 300 * time.Millisecond}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, "body: "+err.Error(), http.StatusRequestTimeout)
			return
		}
		fmt.Fprintln(w, "read it all")
	}))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nab")
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == http.StatusOK {
			t.Fatalf("a stalled body was read: %s", b)
		}
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the stalled connection was still open after 10 s")
	}
	// A body sent at once is read, and a stream after it is not cut by the
	// deadline.
	resp, err = http.Post("http://"+addr, "text/plain", strings.NewReader("whole"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a whole body: %d %s", resp.StatusCode, b)
	}
}

// TestStreamOutlivesBodyTimeout: an answer streamed after the body was
// read is not cancelled by the body's deadline.
func TestStreamOutlivesBodyTimeout(t *testing.T) {
	addr := listen(t, server.ServeOptions{BodyTimeout: 200 * time.Millisecond}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		select {
		case <-r.Context().Done():
			return
		case <-time.After(600 * time.Millisecond):
		}
		fmt.Fprintln(w, "late answer")
	}))
	resp, err := http.Post("http://"+addr, "application/json", strings.NewReader(`{"q":1}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "late answer") {
		t.Fatalf("the stream was cut: %q", b)
	}
}

// TestConnectionCap: past MaxConns with every connection serving a
// request, a new connection waits until one is done: a connection is
// never closed mid-request to make room.
func TestConnectionCap(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	addr := listen(t, server.ServeOptions{MaxConns: 1}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			close(started)
			<-release
		}
		fmt.Fprintln(w, "ok")
	}))
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	busy := make(chan error, 1)
	go func() {
		resp, err := http.Get("http://" + addr + "/block")
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		busy <- err
	}()
	select {
	case <-started:
	case err := <-busy:
		t.Fatalf("the request to hold the slot: %v", err)
	}
	client := &http.Client{Timeout: 300 * time.Millisecond, Transport: &http.Transport{DisableKeepAlives: true}}
	if resp, err := client.Get("http://" + addr); err == nil {
		resp.Body.Close()
		t.Fatal("a second connection was served past a cap of one busy connection")
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("a second connection at the cap should wait, not fail: %v", err)
	}
	once.Do(func() { close(release) })
	if err := <-busy; err != nil {
		t.Fatalf("the request holding the slot: %v", err)
	}
	client.Timeout = 5 * time.Second
	resp, err := client.Get("http://" + addr)
	if err != nil {
		t.Fatalf("after the busy request finished: %v", err)
	}
	resp.Body.Close()
}
