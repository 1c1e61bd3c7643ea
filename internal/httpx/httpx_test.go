package httpx

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":                              -1,
		"soon":                          -1,
		"2":                             2 * time.Second,
		"0.5":                           500 * time.Millisecond,
		"Fri, 02 Jan 2026 03:04:15 GMT": 10 * time.Second,
		"Fri, 02 Jan 2026 03:04:00 GMT": 0,
	} {
		if got := parseRetryAfter(v, now); got != want {
			t.Errorf("Retry-After %q: %v, want %v", v, got, want)
		}
	}
}

func TestBackoff(t *testing.T) {
	c := New(Options{RetryDelay: 100 * time.Millisecond, MaxRetryWait: 10 * time.Second})
	if d := c.backoff(0, 3*time.Second); d != 3*time.Second {
		t.Errorf("Retry-After 3s gave %v", d)
	}
	if d := c.backoff(0, time.Minute); d != 10*time.Second {
		t.Errorf("Retry-After beyond the cap gave %v", d)
	}
	for attempt, window := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
		for range 20 {
			if d := c.backoff(attempt, -1); d < window/2 || d > window {
				t.Errorf("attempt %d: %v outside [%v, %v]", attempt, d, window/2, window)
			}
		}
	}
	if d := c.backoff(30, -1); d > 10*time.Second {
		t.Errorf("backoff %v beyond the cap", d)
	}
}

func TestRetryAfterWaitsAndCancellationStopsIt(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":"slow down"}`)
	}))
	defer srv.Close()
	c := New(Options{RetryDelay: time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	var out map[string]any
	err := c.PostJSON(ctx, srv.URL, nil, map[string]int{"a": 1}, &out)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want the deadline", err)
	}
	if calls.Load() != 1 {
		t.Errorf("%d calls: Retry-After 30 was not waited for", calls.Load())
	}
	if time.Since(start) > 5*time.Second {
		t.Error("cancellation did not cut the wait short")
	}
}

func TestStreamRetriesThenHandsOverTheBody(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "data: one\n\n")
	}))
	defer srv.Close()
	c := New(Options{RetryDelay: time.Millisecond})
	resp, err := c.Stream(context.Background(), srv.URL, nil, map[string]int{"a": 1})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "data: one\n\n" || calls.Load() != 2 {
		t.Errorf("body %q after %d calls", b, calls.Load())
	}
	_, err = New(Options{MaxRetries: -1}).Stream(context.Background(), srv.URL+"/x", nil, 1)
	if err != nil {
		t.Errorf("a 2xx stream failed: %v", err)
	}
}

func TestStatusErrorNotRetried(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"message":"bad model"}`)
	}))
	defer srv.Close()
	var out any
	err := New(Options{RetryDelay: time.Millisecond}).GetJSON(context.Background(), srv.URL+"?key=secret", nil, &out)
	var se *StatusError
	if !errors.As(err, &se) || se.StatusCode != 400 || se.Body != `{"message":"bad model"}` || calls.Load() != 1 {
		t.Errorf("err %v after %d calls", err, calls.Load())
	}
	if err != nil && strings.Contains(err.Error(), "secret") {
		t.Errorf("the key leaked into %v", err)
	}
}
