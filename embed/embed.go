// Package embed turns texts into vectors. An Embedder reports the identity of
// its model so a collection can refuse vectors from another model: mixing
// models in one index silently ruins retrieval.
package embed

import (
	"context"
	"fmt"
)

// ModelInfo identifies an embedding model. Two embedders produce comparable
// vectors only when every field is equal.
type ModelInfo struct {
	// Provider names the embedder family: "hash", "static", "openai", "ollama", …
	Provider string `json:"provider"`
	// Model is the provider's model name ("text-embedding-3-small"); for
	// offline embedders, their configuration ("hash-512").
	Model string `json:"model"`
	// Dimension is the length of every vector.
	Dimension int `json:"dimension"`
	// Normalized reports whether vectors are L2-normalised.
	Normalized bool `json:"normalized"`
}

// String names the model the way messages show it: provider:model/dimension.
func (m ModelInfo) String() string {
	return fmt.Sprintf("%s:%s/%d", m.Provider, m.Model, m.Dimension)
}

// Check reports whether the identity is complete.
func (m ModelInfo) Check() error {
	if m.Provider == "" || m.Model == "" {
		return fmt.Errorf("embedding model identity needs a provider and a model (got %q, %q)", m.Provider, m.Model)
	}
	if m.Dimension <= 0 {
		return fmt.Errorf("embedding model %s: dimension must be positive", m)
	}
	return nil
}

// Embedder turns texts into vectors, one per text, in order.
type Embedder interface {
	// Embed returns one vector per text. Implementations batch and retry as
	// their service requires; an empty input makes no call.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Model returns the identity of the model.
	Model() ModelInfo
}
