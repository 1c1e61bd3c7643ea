package embed

import (
	"context"
	"fmt"
)

// DefaultBatchSize is how many texts go into one embedding call.
const DefaultBatchSize = 64

// Func adapts a function to an Embedder with a fixed model identity.
type Func struct {
	Info ModelInfo
	Fn   func(ctx context.Context, texts []string) ([][]float32, error)
}

// Embed implements Embedder.
func (f Func) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	return f.Fn(ctx, texts)
}

// Model implements Embedder.
func (f Func) Model() ModelInfo { return f.Info }

// Batched splits work into calls of at most Size texts (DefaultBatchSize
// when 0), one call per batch, in order, and checks that every call returns
// one vector of the model's dimension per text.
type Batched struct {
	Embedder Embedder
	Size     int
}

// Model implements Embedder.
func (b Batched) Model() ModelInfo { return b.Embedder.Model() }

// Embed implements Embedder. An empty input makes no call.
func (b Batched) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	size := b.Size
	if size <= 0 {
		size = DefaultBatchSize
	}
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += size {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		part := texts[start:min(start+size, len(texts))]
		vecs, err := b.Embedder.Embed(ctx, part)
		if err != nil {
			return nil, fmt.Errorf("embed texts %d-%d with %s: %w", start, start+len(part)-1, b.Model(), err)
		}
		if err := checkVectors(b.Model(), len(part), vecs); err != nil {
			return nil, err
		}
		out = append(out, vecs...)
	}
	return out, nil
}

func checkVectors(m ModelInfo, want int, vecs [][]float32) error {
	if len(vecs) != want {
		return fmt.Errorf("embedder %s returned %d vectors for %d texts", m, len(vecs), want)
	}
	for i, v := range vecs {
		if len(v) != m.Dimension {
			return fmt.Errorf("embedder %s returned a vector of dimension %d at %d, want %d", m, len(v), i, m.Dimension)
		}
	}
	return nil
}
