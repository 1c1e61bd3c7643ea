package embed

import (
	"context"
	"net/http"
	"time"
)

// HTTPOptions tune how an API embedder talks to its service. Zero values
// mean the defaults.
//
// Every API embedder (packages openai, ollama, gemini, voyage, cohere,
// mistral, bedrock) follows the same contract: its dimension is known when
// its constructor returns — from the configuration, from the provider's
// table of models, or by embedding one probe text — because a collection
// records its dimension before the first write; its vectors are
// L2-normalised on arrival, so Normalized is true whatever the service
// returns; requests are batched within the service's limit and retried on
// 429, 5xx and network errors.
type HTTPOptions struct {
	// Client sends the requests; when nil, a client with a two-minute
	// timeout per request.
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

// QueryEmbedder is an Embedder whose service embeds search queries
// differently from documents (Gemini's task types, Voyage's and Cohere's
// input types). Embed embeds documents; EmbedQuery embeds queries. The two
// share one ModelInfo: their vectors live in the same space.
type QueryEmbedder interface {
	Embedder
	// EmbedQuery returns one vector per query, in order.
	EmbedQuery(ctx context.Context, queries []string) ([][]float32, error)
}

// EmbedQuery embeds search queries with e's query input type when it has
// one, and with Embed otherwise. Wrappers such as Batched and Cached hide
// the capability: call it on the provider's embedder.
func EmbedQuery(ctx context.Context, e Embedder, queries []string) ([][]float32, error) {
	if q, ok := e.(QueryEmbedder); ok {
		return q.EmbedQuery(ctx, queries)
	}
	return e.Embed(ctx, queries)
}
