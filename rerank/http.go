package rerank

import (
	"net/http"
	"time"
)

// HTTPOptions tune how a reranking service is called. Zero values mean the
// defaults: a client with a two-minute timeout, 2 retries on 429, 5xx and
// network errors, honouring Retry-After, a first backoff of 500ms.
type HTTPOptions struct {
	Client     *http.Client
	MaxRetries int
	RetryDelay time.Duration
}
