package quarry

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/quarry-rag/quarry/config"
	"github.com/quarry-rag/quarry/document"
	embedspec "github.com/quarry-rag/quarry/embed/spec"
	"github.com/quarry-rag/quarry/retrieve/azuresearch"
)

// WithAzureSearch searches an Azure AI Search index beside the knowledge
// base: with every answer, in parallel with the collection, and as one of
// the agent's sources, always under the caller's scope. It replaces the
// [azure] settings.
func WithAzureSearch(ix *azuresearch.Index) Option {
	return func(o *options) { o.azure = ix }
}

// AzureSearch is the Azure AI Search index searched beside the knowledge
// base, nil when none is configured.
func (kb *KB) AzureSearch() *azuresearch.Index { return kb.azure }

// openAzure is the configured index, nil when none.
func openAzure(ctx context.Context, c config.Azure) (*azuresearch.Index, error) {
	if c.Endpoint == "" {
		return nil, nil
	}
	if c.Index == "" {
		return nil, fmt.Errorf("azure.index: name the index to search at %s", c.Endpoint)
	}
	ix := &azuresearch.Index{Endpoint: c.Endpoint, Name: c.Index, KeyField: c.KeyField, ContentField: c.ContentField,
		TitleField: c.TitleField, SourceField: c.SourceField, VectorField: c.VectorField, Semantic: c.Semantic}
	for _, spec := range c.Fields {
		name, typ, ok := strings.Cut(strings.TrimSpace(spec), ":")
		if !ok || name == "" {
			return nil, fmt.Errorf("azure.fields: %q: want name:type (string, integer, float, boolean or string[])", spec)
		}
		ix.Fields = append(ix.Fields, document.Field{Name: strings.TrimSpace(name), Type: document.FieldType(strings.TrimSpace(typ))})
	}
	if c.Embedder != "" {
		// An API model of unknown dimension costs one call to learn it.
		ectx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		e, err := embedspec.Open(ectx, c.Embedder)
		if err != nil {
			return nil, fmt.Errorf("azure.embedder: %w", err)
		}
		ix.Embedder = e
	}
	if err := ix.Check(); err != nil {
		return nil, err
	}
	return ix, nil
}
