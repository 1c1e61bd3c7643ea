package ingest

import (
	"context"
	"errors"
	"fmt"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
)

// ErrOutOfScope marks a document a scoped client may not write: it does not
// match the client's scope, or its id belongs to a document outside it.
var ErrOutOfScope = errors.New("outside this client's scope")

// Add writes documents given whole (an API or MCP client's texts), all or
// none: it checks ids are distinct, validates each document against the
// collection's schema and, under a scope, checks each matches the scope
// and replaces no document outside it — all before the embedding call —
// then embeds the documents and upserts them.
func Add(ctx context.Context, c *store.Collection, emb embed.Embedder, docs []*document.Document, scope filter.Expr) error {
	inScope, err := filter.NewMatcher(scope)
	if err != nil {
		return fmt.Errorf("scope: %w", err)
	}
	seen := make(map[string]int, len(docs))
	texts := make([]string, len(docs))
	for i, d := range docs {
		if j, dup := seen[d.ID]; dup {
			return fmt.Errorf("%w: documents[%d] and documents[%d] share id %q", store.ErrInvalidRequest, j, i, d.ID)
		}
		seen[d.ID] = i
		if err := c.Config().Schema.ValidateDocument(d); err != nil {
			return fmt.Errorf("%w: documents[%d]: %w", store.ErrInvalidRequest, i, err)
		}
		if scope != nil && !inScope.MatchDocument(d) {
			return fmt.Errorf("documents[%d] is %w: give it metadata that matches it", i, ErrOutOfScope)
		}
		texts[i] = d.Content
	}
	if scope != nil {
		ids := make([]string, len(docs))
		for i, d := range docs {
			ids[i] = d.ID
		}
		old, err := c.Get(ctx, ids)
		if err != nil {
			return fmt.Errorf("add to %q: %w", c.Name(), err)
		}
		for _, o := range old {
			if !inScope.MatchDocument(o) {
				return fmt.Errorf("documents[%d]: id %q is taken, %w", seen[o.ID], o.ID, ErrOutOfScope)
			}
		}
	}
	vecs, err := emb.Embed(ctx, texts)
	if err != nil {
		return fmt.Errorf("embed the documents: %w", err)
	}
	for i, d := range docs {
		if err := d.SetEmbedding(vecs[i]); err != nil {
			return fmt.Errorf("documents[%d]: %w", i, err)
		}
	}
	if err := c.Upsert(ctx, docs); err != nil {
		return fmt.Errorf("add to %q: %w", c.Name(), err)
	}
	return nil
}
