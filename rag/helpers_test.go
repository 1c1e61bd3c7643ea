package rag_test

import (
	"context"
	"iter"
	"sync"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed/hash"
	"github.com/quarry-rag/quarry/llm"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/memory"
)

// fakeModel replies with a fixed text, streamed in pieces of chunk bytes,
// and records what it was asked.
type fakeModel struct {
	reply string
	chunk int

	mu   sync.Mutex
	reqs []llm.Request
}

func (m *fakeModel) Generate(_ context.Context, req llm.Request) (llm.Response, error) {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	return llm.Response{Text: m.reply, StopReason: llm.StopEnd, Usage: llm.Usage{InputTokens: 100, OutputTokens: 20}}, nil
}

func (m *fakeModel) Stream(_ context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	return func(yield func(llm.Event, error) bool) {
		n := max(m.chunk, 1)
		for s := m.reply; s != ""; {
			k := min(n, len(s))
			if !yield(llm.Event{Text: s[:k]}, nil) {
				return
			}
			s = s[k:]
		}
		yield(llm.Event{Done: true, StopReason: llm.StopEnd, Usage: llm.Usage{InputTokens: 100, OutputTokens: 20}}, nil)
	}
}

func (m *fakeModel) last() llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reqs[len(m.reqs)-1]
}

// kb is a small knowledge base in memory, embedded with the hash embedder.
type kb struct {
	store *store.Store
	coll  *store.Collection
	emb   *hash.Embedder
}

func newKB(t *testing.T, schema *document.Schema, docs ...*document.Document) *kb {
	t.Helper()
	ctx := context.Background()
	emb, err := hash.New(hash.Config{})
	if err != nil {
		t.Fatal(err)
	}
	s := store.New(memory.New())
	t.Cleanup(func() { s.Close() })
	coll, err := s.EnsureCollection(ctx, store.CollectionConfig{Name: "docs", Schema: schema, Model: emb.Model()})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) > 0 {
		texts := make([]string, len(docs))
		for i, d := range docs {
			texts[i] = d.Content
		}
		vecs, err := emb.Embed(ctx, texts)
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range docs {
			d.Embedding = vecs[i]
		}
		if err := coll.Upsert(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	return &kb{store: s, coll: coll, emb: emb}
}

func (k *kb) threads(t *testing.T) store.ThreadStore {
	t.Helper()
	ts, err := k.store.Threads()
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// sourced is a document from a file source with a heading path.
func sourced(content, name string, headings ...string) *document.Document {
	d := document.New(content)
	d.ID = document.ChunkID(document.SourceFile, name, 0, content)
	d.SourceType, d.SourceName = document.SourceFile, name
	d.Provenance = document.Provenance{Source: name, HeadingPath: headings, LineStart: 1, LineEnd: 3}
	return d
}

func hashEmbedder() (*hash.Embedder, error) { return hash.New(hash.Config{}) }

func embedOne(e *hash.Embedder, text string) ([]float32, error) {
	vecs, err := e.Embed(context.Background(), []string{text})
	if err != nil {
		return nil, err
	}
	return vecs[0], nil
}
