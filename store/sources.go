package store

import (
	"context"
	"fmt"

	"github.com/quarry-rag/quarry/document"
)

// SourceState is what a store remembers of an ingested source: the hash of
// the content its chunks were made from, so an unchanged source is skipped
// without reading, splitting or embedding it again.
type SourceState struct {
	Source document.Source `json:"source"`
	Hash   string          `json:"hash"`
	Chunks int             `json:"chunks"`
	// Origin is the file the source was read from (an absolute path), so
	// a later run can tell another file of the same name from it; "" when
	// not recorded.
	Origin string `json:"origin,omitempty"`
}

// SourceUpdate replaces every chunk of one source and records its hash. An
// empty Hash means the source is gone: its chunks and its state are deleted.
// A source may have a hash and no chunks (an empty file).
type SourceUpdate struct {
	Source document.Source
	Hash   string
	Docs   []*document.Document
	// Origin is the file the source was read from (SourceState.Origin).
	Origin string
}

// SourceSyncer is implemented by backends that track sources and replace
// their chunks atomically: a reader sees a source's old chunks or its new
// ones, never a mix, and a crash leaves one or the other.
type SourceSyncer interface {
	Sources(ctx context.Context, coll string) ([]SourceState, error)
	// ReplaceSources applies all updates in one transaction.
	ReplaceSources(ctx context.Context, coll string, updates []SourceUpdate) error
}

// Sources lists the sources the collection holds with their content hashes.
func (c *Collection) Sources(ctx context.Context) ([]SourceState, error) {
	ss, ok := c.s.b.(SourceSyncer)
	if !ok {
		return nil, fmt.Errorf("%w: this store does not track sources", ErrUnsupported)
	}
	out, err := ss.Sources(ctx, c.cfg.Name)
	if err != nil {
		return nil, fmt.Errorf("sources of %q: %w", c.cfg.Name, err)
	}
	return out, nil
}

// ReplaceSources swaps in new chunks for whole sources in one transaction
// (SEMANTICS §5 reindex by source). Every document is validated first and
// must belong to its update's source; nothing is written on error.
func (c *Collection) ReplaceSources(ctx context.Context, updates []SourceUpdate) error {
	if len(updates) == 0 {
		return nil
	}
	ss, ok := c.s.b.(SourceSyncer)
	if !ok {
		return fmt.Errorf("%w: this store does not track sources", ErrUnsupported)
	}
	seen := map[document.Source]bool{}
	var all []*document.Document
	for _, u := range updates {
		if u.Source.Type == "" || u.Source.Name == "" {
			return fmt.Errorf("%w: a source update needs a source type and name", ErrInvalidRequest)
		}
		if seen[u.Source] {
			return fmt.Errorf("%w: source %s %s appears twice in one update", ErrInvalidRequest, u.Source.Type, u.Source.Name)
		}
		seen[u.Source] = true
		for _, d := range u.Docs {
			if d == nil || d.SourceType != u.Source.Type || d.SourceName != u.Source.Name {
				return fmt.Errorf("%w: a document in the update of %s %s belongs to another source", ErrInvalidRequest, u.Source.Type, u.Source.Name)
			}
		}
		all = append(all, u.Docs...)
	}
	if err := c.ValidateDocuments(all); err != nil {
		return err
	}
	if err := ss.ReplaceSources(ctx, c.cfg.Name, updates); err != nil {
		return fmt.Errorf("replace sources in %q: %w", c.cfg.Name, err)
	}
	return nil
}

// Scanner is implemented by backends that can list a collection's documents
// in id order, a page at a time: for export and migration between stores.
type Scanner interface {
	// Scan returns up to limit documents with ids greater than after,
	// ordered by id.
	Scan(ctx context.Context, coll string, after string, limit int) ([]*document.Document, error)
}

// Scan calls fn with every document of the collection in id order, in
// pages of pageSize (1000 when 0). Returning an error from fn stops it.
func (c *Collection) Scan(ctx context.Context, pageSize int, fn func([]*document.Document) error) error {
	sc, ok := c.s.b.(Scanner)
	if !ok {
		return fmt.Errorf("%w: this store cannot list documents", ErrUnsupported)
	}
	if pageSize <= 0 {
		pageSize = 1000
	}
	after := ""
	for {
		docs, err := sc.Scan(ctx, c.cfg.Name, after, pageSize)
		if err != nil {
			return fmt.Errorf("scan %q: %w", c.cfg.Name, err)
		}
		if len(docs) == 0 {
			return nil
		}
		if err := fn(docs); err != nil {
			return err
		}
		after = docs[len(docs)-1].ID
	}
}
