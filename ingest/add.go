package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

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
//
// Under a scope, ids live in the scope's own id space: each id is stored
// behind the scope's prefix ("s" and 12 hex digits of the scope's hash, then
// ":"), and the documents carry those ids afterwards. A
// key holder can neither learn that another tenant's id exists nor claim
// it first, and ids a scoped add returned are written back unchanged.
func Add(ctx context.Context, c *store.Collection, emb embed.Embedder, docs []*document.Document, scope filter.Expr) error {
	if err := Prepare(ctx, c, emb, docs, scope); err != nil {
		return err
	}
	if err := c.Upsert(ctx, docs); err != nil {
		return fmt.Errorf("add to %q: %w", c.Name(), err)
	}
	return nil
}

// Prepare is Add without the write: it checks the documents, gives them
// their ids under scope and embeds them, so a caller can embed one batch
// while the store writes the one before.
func Prepare(ctx context.Context, c *store.Collection, emb embed.Embedder, docs []*document.Document, scope filter.Expr) error {
	inScope, err := filter.NewMatcher(scope)
	if err != nil {
		return fmt.Errorf("scope: %w", err)
	}
	if scope != nil {
		prefix, err := scopePrefix(scope)
		if err != nil {
			return err
		}
		for _, d := range docs {
			if !strings.HasPrefix(d.ID, prefix) {
				d.ID = prefix + d.ID
			}
		}
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
			// Only an unscoped writer can have put a document there.
			if !inScope.MatchDocument(o) {
				return fmt.Errorf("documents[%d]: id %q cannot be written under this scope, %w", seen[o.ID], o.ID, ErrOutOfScope)
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
	return nil
}

// scopePrefix starts the ids of documents added under scope: a hash of
// the scope's canonical form, so keys with the same filter share one id
// space.
func scopePrefix(scope filter.Expr) (string, error) {
	canon, err := filter.Format(scope)
	if err != nil {
		return "", fmt.Errorf("scope: %w", err)
	}
	sum := sha256.Sum256([]byte(canon))
	return "s" + hex.EncodeToString(sum[:6]) + ":", nil
}
