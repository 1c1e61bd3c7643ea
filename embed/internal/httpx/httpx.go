// Package httpx is the HTTP plumbing Quarry's API embedders share: JSON
// POSTs retried with exponential backoff and jitter on 429, 5xx and network
// errors, honouring Retry-After; error bodies surfaced in errors; batching,
// dimension checks and L2 normalisation of the returned vectors.
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

	"github.com/quarry-rag/quarry/embed"
)

// Client posts JSON with retries. Build it with New.
type Client struct {
	http         *http.Client
	maxRetries   int
	retryDelay   time.Duration
	maxRetryWait time.Duration
}

// New applies the defaults of embed.HTTPOptions.
func New(o embed.HTTPOptions) Client {
	c := Client{http: o.Client, maxRetries: o.MaxRetries, retryDelay: o.RetryDelay, maxRetryWait: o.MaxRetryWait}
	if c.http == nil {
		// A request that hangs must not stall ingestion forever when the
		// caller's context has no deadline.
		c.http = &http.Client{Timeout: 2 * time.Minute}
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
	for attempt := 0; ; attempt++ {
		retryAfter, err := c.post(ctx, url, header, sign, body, out)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || !retryable(err) || attempt >= c.maxRetries {
			if attempt > 0 {
				return fmt.Errorf("POST %s (after %d attempts): %w", redact(url), attempt+1, err)
			}
			return fmt.Errorf("POST %s: %w", redact(url), err)
		}
		if err := sleep(ctx, c.backoff(attempt, retryAfter)); err != nil {
			return fmt.Errorf("POST %s: %w", redact(url), err)
		}
	}
}

// post makes one attempt and returns the wait a Retry-After header asked
// for (-1 when none).
func (c Client) post(ctx context.Context, url string, header map[string]string, sign func(*http.Request, []byte) error, body []byte, out any) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return -1, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if sign != nil {
		if err := sign(req, body); err != nil {
			return -1, fmt.Errorf("sign request: %w", err)
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return -1, &netError{err}
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()),
			&StatusError{StatusCode: resp.StatusCode, Body: strings.TrimSpace(string(b))}
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return -1, fmt.Errorf("decode response: %w", err)
	}
	return -1, nil
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

// Batches calls fn on consecutive batches of at most size texts and joins
// the results. Every batch must return one vector per text, of length dim
// when dim > 0 and of one common length otherwise; vectors are
// L2-normalised in place.
func Batches(ctx context.Context, texts []string, size, dim int, fn func(ctx context.Context, batch []string) ([][]float32, error)) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += size {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		batch := texts[start:min(start+size, len(texts))]
		vecs, err := fn(ctx, batch)
		if err != nil {
			return nil, err
		}
		if len(vecs) != len(batch) {
			return nil, fmt.Errorf("service returned %d vectors for %d texts", len(vecs), len(batch))
		}
		if dim <= 0 && len(vecs) > 0 {
			dim = len(vecs[0])
		}
		for i, v := range vecs {
			if len(v) == 0 || len(v) != dim {
				return nil, fmt.Errorf("service returned a vector of dimension %d for text %d, want %d", len(v), start+i, dim)
			}
			Normalize(v)
		}
		out = append(out, vecs...)
	}
	return out, nil
}

// Normalize scales v to unit length; a zero vector stays zero.
func Normalize(v []float32) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return
	}
	inv := 1 / math.Sqrt(s)
	for i := range v {
		v[i] = float32(float64(v[i]) * inv)
	}
}

// Dimension returns the configured dimension, else the known one of the
// model, else the length of the vector probe returns for a short text. A
// collection records its dimension before its first write, so an embedder
// must know it at construction.
func Dimension(ctx context.Context, configured int, known map[string]int, model string, probe func(ctx context.Context, texts []string) ([][]float32, error)) (int, error) {
	if configured < 0 {
		return 0, fmt.Errorf("dimension %d is negative", configured)
	}
	if configured > 0 {
		return configured, nil
	}
	if d := known[model]; d > 0 {
		return d, nil
	}
	vecs, err := probe(ctx, []string{"dimension probe"})
	if err != nil {
		return 0, fmt.Errorf("learn the dimension of %s (a dimension in the setting, as in MODEL/768, skips this call): %w", model, err)
	}
	if len(vecs) != 1 || len(vecs[0]) == 0 {
		return 0, fmt.Errorf("learn the dimension of %s: the service returned no vector", model)
	}
	return len(vecs[0]), nil
}

// Key returns key, else the first of the environment variables set, else
// an error naming them.
func Key(key, provider string, vars ...string) (string, error) {
	if key != "" {
		return key, nil
	}
	for _, v := range vars {
		if k := strings.TrimSpace(os.Getenv(v)); k != "" {
			return k, nil
		}
	}
	return "", fmt.Errorf("%s embedder needs an API key: set %s", provider, strings.Join(vars, " or "))
}

// Defaults are a provider's defaults for the settings every API embedder
// resolves the same way.
type Defaults struct {
	Provider     string
	Model        string
	BaseURL      string
	BatchSize    int
	MaxBatchSize int // 0: the API states no limit
}

// Resolve fills an empty model, base URL and batch size with d's values,
// drops a trailing slash from the base URL, and refuses a batch size above
// the API's limit.
func Resolve(d Defaults, model, baseURL *string, batch *int) error {
	if *model == "" {
		*model = d.Model
	}
	if baseURL != nil {
		if *baseURL == "" {
			*baseURL = d.BaseURL
		}
		*baseURL = strings.TrimRight(*baseURL, "/")
	}
	if *batch <= 0 {
		*batch = d.BatchSize
	}
	if d.MaxBatchSize > 0 && *batch > d.MaxBatchSize {
		return fmt.Errorf("%s embedder: batch size %d above the API's %d", d.Provider, *batch, d.MaxBatchSize)
	}
	return nil
}

// EmbedBatches embeds texts through call in batches of size, checking each
// vector's dimension; an empty input makes no call, and errors name the
// embedder.
func EmbedBatches(ctx context.Context, info embed.ModelInfo, size int, texts []string, call func(context.Context, []string) ([][]float32, error)) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	vecs, err := Batches(ctx, texts, size, info.Dimension, call)
	if err != nil {
		return nil, fmt.Errorf("%s embedder %s: %w", info.Provider, info, err)
	}
	return vecs, nil
}
