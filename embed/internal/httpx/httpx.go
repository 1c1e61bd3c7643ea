// Package httpx is what Quarry's API embedders share beyond the retrying
// JSON client of internal/httpx: batching, dimension checks and L2
// normalisation of the returned vectors, keys and defaults.
package httpx

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/internal/httpx"
)

// Client posts JSON with retries: internal/httpx's client, which every
// API client of Quarry shares.
type Client = httpx.Client

// StatusError is a response with a status other than 2xx.
type StatusError = httpx.StatusError

// New applies the defaults of embed.HTTPOptions.
func New(o embed.HTTPOptions) Client {
	return httpx.New(httpx.Options{Client: o.Client, MaxRetries: o.MaxRetries, RetryDelay: o.RetryDelay, MaxRetryWait: o.MaxRetryWait})
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
	return httpx.Key(key, provider+" embedder", vars...)
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
