package weaviate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// maxResponseBytes bounds what one response may hold: a page of documents
// with their vectors is a few megabytes, so this only stops a runaway or
// hostile server from exhausting memory.
const maxResponseBytes = 256 << 20

// client speaks Weaviate's REST and GraphQL API over HTTP.
type client struct {
	base string // scheme://host:port, no trailing slash
	key  string // API key sent as a bearer token; "" for anonymous access
	http *http.Client
}

// statusError is a non-2xx answer, with Weaviate's own messages.
type statusError struct {
	method, path string
	code         int
	msg          string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("weaviate: %s %s: %d %s", e.method, e.path, e.code, e.msg)
}

func isStatus(err error, code int) bool {
	var se *statusError
	return errors.As(err, &se) && se.code == code
}

// do sends in (JSON) and decodes the answer into out; both may be nil.
func (c *client) do(ctx context.Context, method, path string, q url.Values, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("weaviate: encode %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	u := c.base + "/v1" + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return fmt.Errorf("weaviate: %s %s: %w", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("weaviate: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return fmt.Errorf("weaviate: %s %s: read answer: %w", method, path, err)
	}
	if len(data) > maxResponseBytes {
		return fmt.Errorf("weaviate: %s %s: answer larger than %d MiB", method, path, maxResponseBytes>>20)
	}
	if resp.StatusCode/100 != 2 {
		return &statusError{method: method, path: path, code: resp.StatusCode, msg: errorMessage(data)}
	}
	if out == nil || len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("weaviate: %s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// errorMessage pulls the messages out of Weaviate's error body
// ({"error":[{"message":…}]}), falling back to the body itself.
func errorMessage(data []byte) string {
	var e struct {
		Error []struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &e) == nil && len(e.Error) > 0 {
		msgs := make([]string, len(e.Error))
		for i, m := range e.Error {
			msgs[i] = m.Message
		}
		return strings.Join(msgs, "; ")
	}
	s := strings.TrimSpace(string(data))
	if len(s) > 500 {
		s = s[:500] + "…"
	}
	return s
}

// graphql runs one query; data receives the "data" member. GraphQL errors
// come back with status 200 and are returned as errors here.
func (c *client) graphql(ctx context.Context, query string, data any) error {
	var resp struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	if err := c.do(ctx, http.MethodPost, "/graphql", nil, map[string]string{"query": query}, &resp); err != nil {
		return err
	}
	if len(resp.Errors) > 0 {
		msgs := make([]string, len(resp.Errors))
		for i, e := range resp.Errors {
			msgs[i] = e.Message
		}
		return fmt.Errorf("weaviate: graphql: %s", strings.Join(msgs, "; "))
	}
	if data == nil {
		return nil
	}
	if err := json.Unmarshal(resp.Data, data); err != nil {
		return fmt.Errorf("weaviate: graphql: decode data: %w", err)
	}
	return nil
}
