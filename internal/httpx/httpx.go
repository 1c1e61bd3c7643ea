// Package httpx is the HTTP plumbing Quarry's API clients share (embedders,
// chat models, rerankers): JSON POSTs retried with exponential backoff and
// jitter on 429, 5xx and network errors, honouring Retry-After, with error
// bodies surfaced in errors.
package httpx

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// Options tune a Client. Zero values mean the defaults.
type Options struct {
	// Client sends the requests; when nil, a client with a two-minute
	// timeout per request (streams get two minutes for their headers, and
	// their context bounds the rest).
	Client *http.Client
	// MaxRetries is how many times a request that met a 429, a 5xx or a
	// network error is retried: 4 when 0, none when negative.
	MaxRetries int
	// RetryDelay is the first backoff, doubled on each retry with full
	// jitter: 500ms when 0.
	RetryDelay time.Duration
	// MaxRetryWait caps one wait, including one a Retry-After header asks
	// for: 60s when 0.
	MaxRetryWait time.Duration
}

// Client posts JSON with retries. Build it with New.
type Client struct {
	http         *http.Client
	stream       *http.Client
	maxRetries   int
	retryDelay   time.Duration
	maxRetryWait time.Duration
}

// New applies the defaults of Options.
func New(o Options) Client {
	c := Client{http: o.Client, stream: o.Client, maxRetries: o.MaxRetries, retryDelay: o.RetryDelay, maxRetryWait: o.MaxRetryWait}
	if c.http == nil {
		// A request that hangs must not stall a caller whose context has
		// no deadline.
		c.http = &http.Client{Timeout: 2 * time.Minute}
		// A stream may run long, but its headers must come in time.
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ResponseHeaderTimeout = 2 * time.Minute
		c.stream = &http.Client{Transport: t}
	}
	switch {
	case c.maxRetries == 0:
		c.maxRetries = 4
	case c.maxRetries < 0:
		c.maxRetries = 0
	}
	if c.retryDelay <= 0 {
		c.retryDelay = 500 * time.Millisecond
	}
	if c.maxRetryWait <= 0 {
		c.maxRetryWait = 60 * time.Second
	}
	return c
}

// Key returns key, else the first of the environment variables set, else
// an error saying that who (an "openai embedder", a "jina reranker") needs
// one and naming the variables.
func Key(key, who string, vars ...string) (string, error) {
	if key != "" {
		return key, nil
	}
	for _, v := range vars {
		if k := strings.TrimSpace(os.Getenv(v)); k != "" {
			return k, nil
		}
	}
	return "", fmt.Errorf("%s needs an API key: set %s", who, strings.Join(vars, " or "))
}

// StatusError is a response with a status other than 2xx.
type StatusError struct {
	StatusCode int
	// Body is the start of the response body, where services explain.
	Body string
}

// Error reports the status and the body.
func (e *StatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	}
	return fmt.Sprintf("HTTP %d %s: %s", e.StatusCode, http.StatusText(e.StatusCode), e.Body)
}

// maxErrorBody bounds how much of an error body goes into an error.
const maxErrorBody = 2048

// PostJSON posts in as JSON to url with the given headers and decodes a 2xx
// response into out. It retries 429, 5xx and network errors; other
// statuses fail at once with a *StatusError.
func (c Client) PostJSON(ctx context.Context, url string, header map[string]string, in, out any) error {
	return c.PostSigned(ctx, url, header, nil, in, out)
}

// PostSigned is PostJSON with sign called on every attempt's request just
// before it is sent (AWS signatures carry the time of sending).
func (c Client) PostSigned(ctx context.Context, url string, header map[string]string, sign func(*http.Request, []byte) error, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	return c.retry(ctx, http.MethodPost, url, func() (time.Duration, error) {
		resp, retryAfter, err := c.send(ctx, c.http, http.MethodPost, url, header, sign, body)
		if err != nil {
			return retryAfter, err
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return -1, fmt.Errorf("decode response: %w", err)
		}
		return -1, nil
	})
}

// GetJSON is PostJSON for a GET without a body.
func (c Client) GetJSON(ctx context.Context, url string, header map[string]string, out any) error {
	return c.retry(ctx, http.MethodGet, url, func() (time.Duration, error) {
		resp, retryAfter, err := c.send(ctx, c.http, http.MethodGet, url, header, nil, nil)
		if err != nil {
			return retryAfter, err
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return -1, fmt.Errorf("decode response: %w", err)
		}
		return -1, nil
	})
}

// Stream posts in as JSON and returns the 2xx response whose body the
// caller reads and closes: a stream of server-sent events or JSON lines.
// Failures before the response arrives are retried as PostJSON's are; a
// stream that breaks later is not.
func (c Client) Stream(ctx context.Context, url string, header map[string]string, in any) (*http.Response, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	var resp *http.Response
	err = c.retry(ctx, http.MethodPost, url, func() (time.Duration, error) {
		r, retryAfter, err := c.send(ctx, c.stream, http.MethodPost, url, header, nil, body)
		if err != nil {
			return retryAfter, err
		}
		resp = r
		return -1, nil
	})
	return resp, err
}

// retry runs attempt until it succeeds, fails for good, or the retries run
// out.
func (c Client) retry(ctx context.Context, method, url string, attempt func() (time.Duration, error)) error {
	for n := 0; ; n++ {
		retryAfter, err := attempt()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || !retryable(err) || n >= c.maxRetries {
			if n > 0 {
				return fmt.Errorf("%s %s (after %d attempts): %w", method, redact(url), n+1, err)
			}
			return fmt.Errorf("%s %s: %w", method, redact(url), err)
		}
		if err := sleep(ctx, c.backoff(n, retryAfter)); err != nil {
			return fmt.Errorf("%s %s: %w", method, redact(url), err)
		}
	}
}

// send makes one request and returns a 2xx response, or the error and the
// wait a Retry-After header asked for (-1 when none).
func (c Client) send(ctx context.Context, hc *http.Client, method, url string, header map[string]string, sign func(*http.Request, []byte) error, body []byte) (*http.Response, time.Duration, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, -1, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if sign != nil {
		if err := sign(req, body); err != nil {
			return nil, -1, fmt.Errorf("sign request: %w", err)
		}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, -1, &netError{err}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return nil, parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()),
			&StatusError{StatusCode: resp.StatusCode, Body: strings.TrimSpace(string(b))}
	}
	return resp, -1, nil
}

// netError marks a transport failure, worth a retry.
type netError struct{ err error }

func (e *netError) Error() string { return e.err.Error() }
func (e *netError) Unwrap() error { return e.err }

func retryable(err error) bool {
	var se *StatusError
	if errors.As(err, &se) {
		return se.StatusCode == http.StatusTooManyRequests || se.StatusCode >= 500
	}
	var ne *netError
	return errors.As(err, &ne)
}

// backoff is the wait before retry attempt+1: what Retry-After asked for,
// else full jitter over an exponentially growing window; capped.
func (c Client) backoff(attempt int, retryAfter time.Duration) time.Duration {
	d := retryAfter
	if d < 0 {
		window := float64(c.retryDelay) * math.Pow(2, float64(attempt))
		window = min(window, float64(c.maxRetryWait))
		d = time.Duration(window/2 + rand.Float64()*window/2)
	}
	return min(d, c.maxRetryWait)
}

// parseRetryAfter reads delay-seconds or an HTTP date; -1 when absent or
// unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return -1
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return -1
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// redact drops a query string, where some services take their key.
func redact(url string) string {
	if i := strings.IndexByte(url, '?'); i >= 0 {
		return url[:i]
	}
	return url
}
