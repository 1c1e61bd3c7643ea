package quarry

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/load"
	"github.com/quarry-rag/quarry/store"
)

// MaxObjectsBytes bounds the JSON one PutObjects call takes.
const MaxObjectsBytes = 32 << 20

// ObjectsResult is what PutObjects stored.
type ObjectsResult struct {
	Collection string `json:"collection"`
	// Objects are the ids of the objects stored, in order; IDs the ids of
	// their passages.
	Objects []string `json:"objects"`
	IDs     []string `json:"ids"`
}

// PutObjects stores JSON objects — one, or an array — as passages of
// source type "object", one per object, rendered as ingestion renders a
// JSON file (its fields as "key: value" lines, its id, title and @self
// fields as metadata). An object is named by its id (or @self.id), and
// putting an object with the same id again replaces it. The rules are
// AddDocuments': all or none, at most MaxDocuments, and under a scope
// filter each object must match it.
func (kb *KB) PutObjects(ctx context.Context, sc Scope, collection string, data []byte) (*ObjectsResult, error) {
	if sc.ReadOnly {
		return nil, fmt.Errorf("%w: this caller may only read", ErrForbidden)
	}
	if len(data) > MaxObjectsBytes {
		return nil, invalid(fmt.Errorf("objects: over %d MiB in one call", MaxObjectsBytes>>20))
	}
	docs, err := load.ReadObjects(data)
	if err != nil {
		return nil, invalid(fmt.Errorf("objects: %w", err))
	}
	switch {
	case len(docs) == 0:
		return nil, invalid(errors.New("objects: none given"))
	case len(docs) > MaxDocuments:
		return nil, invalid(fmt.Errorf("objects: at most %d per call, got %d", MaxDocuments, len(docs)))
	}
	out := &ObjectsResult{Objects: make([]string, len(docs)), IDs: make([]string, len(docs))}
	seen := map[string]bool{}
	for i, d := range docs {
		id, _ := d.Metadata["object_id"].(string)
		if seen[id] {
			return nil, invalid(fmt.Errorf("objects: two objects have the id %q", id))
		}
		seen[id] = true
		d.SourceType, d.SourceName = document.SourceObject, id
		// The id names the object, not its text, so a changed object
		// replaces its passage.
		d.ID = document.ChunkID(document.SourceObject, id, 0, "")
		out.Objects[i] = id
	}
	c, err := kb.collection(ctx, sc, collection, true)
	if err != nil {
		return nil, err
	}
	if err := fileObjects(ctx, c, docs); err != nil {
		return nil, err
	}
	if err := ingest.Add(ctx, c, kb.emb, docs, sc.Filter); err != nil {
		return nil, err
	}
	out.Collection = c.Name()
	for i, d := range docs {
		out.IDs[i] = d.ID
	}
	return out, nil
}

// fileObjects refuses objects whose ids name the objects of an ingested
// JSON file (an "object" source named by the file's path, recorded with a
// source state): the next ingest of the file would replace them. Only ids
// that read as a JSON file's name can, so only those are looked up.
func fileObjects(ctx context.Context, c *store.Collection, docs []*document.Document) error {
	var names []string
	for _, d := range docs {
		if load.SourceTypeOf(d.SourceName) == document.SourceObject {
			names = append(names, d.SourceName)
		}
	}
	if len(names) == 0 {
		return nil
	}
	states, err := c.Sources(ctx)
	if errors.Is(err, store.ErrUnsupported) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("objects: %w", err)
	}
	for _, st := range states {
		if st.Source.Type == document.SourceObject && slices.Contains(names, st.Source.Name) {
			return invalid(fmt.Errorf("objects: %q names the objects of an ingested JSON file; give the object another id", st.Source.Name))
		}
	}
	return nil
}

// DeleteObject deletes the passages of the object with this id, under the
// scope; it returns how many were deleted.
func (kb *KB) DeleteObject(ctx context.Context, sc Scope, collection, id string) (int, error) {
	if id == "" {
		return 0, invalid(errors.New("objects: give the id of the object to delete"))
	}
	return kb.Delete(ctx, sc, DeleteRequest{Collection: collection,
		Filter: filter.And(filter.Eq("sourceType", document.SourceObject), filter.Eq("sourceName", id))})
}
