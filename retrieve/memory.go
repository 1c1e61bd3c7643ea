package retrieve

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
)

// Errors of semantic memory's thread lists (SEMANTICS §5).
var (
	ErrNoThreads   = errors.New("semantic memory retrieval requires at least one thread id")
	ErrEmptyThread = errors.New("semantic memory thread ids must be non-empty")
)

// MemoryFilter is the scope of semantic memory over threads: sourceType
// "conversation" and sourceName in the threads, duplicates dropped in
// order. It needs at least one thread, each non-empty.
func MemoryFilter(threads []string) (filter.Expr, error) {
	if len(threads) == 0 {
		return nil, ErrNoThreads
	}
	seen := map[string]bool{}
	var ids []any
	for _, t := range threads {
		if t == "" {
			return nil, ErrEmptyThread
		}
		if !seen[t] {
			seen[t] = true
			ids = append(ids, t)
		}
	}
	return filter.And(filter.Eq("sourceType", document.SourceConversation), filter.In("sourceName", ids...)), nil
}

// Memory is semantic memory: the turns of conversation threads kept as
// passages in a collection (sourceType "conversation", sourceName the
// thread id), so a question can recall what was said before — in the
// threads the asker is authorised to read, and no others.
type Memory struct {
	// Retriever searches the collection the turns are kept in, usually a
	// *Collection; required.
	Retriever Retriever
	// Collection and Embedder are where Remember writes; Remember is an
	// error without them.
	Collection *store.Collection
	Embedder   embed.Embedder
}

// For implements Recall: a retriever over the past turns of threads only.
func (m *Memory) For(threads []string) (Retriever, error) {
	f, err := MemoryFilter(threads)
	if err != nil {
		return nil, err
	}
	if m == nil || m.Retriever == nil {
		return nil, errors.New("semantic memory has no retriever")
	}
	return &scoped{r: m.Retriever, scope: f}, nil
}

// Remember keeps one exchange of a thread (the question and the answer)
// as a passage of the thread's memory. Without a collection it keeps
// nothing: the memory only reads.
func (m *Memory) Remember(ctx context.Context, thread, question, answer string, at time.Time) error {
	if m == nil || m.Collection == nil {
		return nil
	}
	if err := store.CheckThreadID(thread); err != nil {
		return err
	}
	src := document.ConversationSource(thread)
	text := "User: " + question + "\nAssistant: " + answer
	d := &document.Document{
		ID:         document.ChunkID(src.Type, src.Name, int(at.UnixNano()), text),
		Content:    text,
		SourceType: src.Type,
		SourceName: src.Name,
		Metadata:   map[string]any{},
	}
	if m.Embedder != nil {
		vecs, err := m.Embedder.Embed(ctx, []string{text})
		if err != nil {
			return fmt.Errorf("remember a turn of %s: %w", thread, err)
		}
		if err := d.SetEmbedding(vecs[0]); err != nil {
			return fmt.Errorf("remember a turn of %s: %w", thread, err)
		}
	}
	if err := m.Collection.Upsert(ctx, []*document.Document{d}); err != nil {
		return fmt.Errorf("remember a turn of %s: %w", thread, err)
	}
	return nil
}

// scoped narrows a retriever with one more mandatory scope.
type scoped struct {
	r     Retriever
	scope filter.Expr
}

func (s *scoped) Retrieve(ctx context.Context, req Request) ([]*document.Document, error) {
	req.Scope = filter.Merge(req.Scope, s.scope)
	return s.r.Retrieve(ctx, req)
}
