package retrieve_test

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

// replyModel answers every request with reply(request) and records the
// requests.
type replyModel struct {
	reply func(llm.Request) string
	mu    sync.Mutex
	reqs  []llm.Request
}

func (m *replyModel) Generate(_ context.Context, req llm.Request) (llm.Response, error) {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	return llm.Response{Text: m.reply(req)}, nil
}

func (m *replyModel) Stream(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		r, err := m.Generate(ctx, req)
		if err != nil {
			yield(llm.Event{}, err)
			return
		}
		if yield(llm.Event{Text: r.Text}, nil) {
			yield(llm.Event{Done: true}, nil)
		}
	}
}

func fixed(s string) *replyModel { return &replyModel{reply: func(llm.Request) string { return s }} }

// newColl is an in-memory collection of docs embedded with the hash
// embedder.
func newColl(t *testing.T, schema *document.Schema, docs ...*document.Document) (*store.Collection, *hash.Embedder) {
	t.Helper()
	coll, emb, closeFn, err := buildColl(schema, docs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeFn)
	return coll, emb
}

func buildColl(schema *document.Schema, docs ...*document.Document) (*store.Collection, *hash.Embedder, func(), error) {
	ctx := context.Background()
	emb, err := hash.New(hash.Config{})
	if err != nil {
		return nil, nil, nil, err
	}
	s := store.New(memory.New())
	closeFn := func() { s.Close() }
	coll, err := s.EnsureCollection(ctx, store.CollectionConfig{Name: "docs", Schema: schema, Model: emb.Model()})
	if err != nil {
		closeFn()
		return nil, nil, nil, err
	}
	if len(docs) > 0 {
		texts := make([]string, len(docs))
		for i, d := range docs {
			texts[i] = d.Content
		}
		vecs, err := emb.Embed(ctx, texts)
		if err != nil {
			closeFn()
			return nil, nil, nil, err
		}
		for i, d := range docs {
			d.Embedding = vecs[i]
		}
		if err := coll.Upsert(ctx, docs); err != nil {
			closeFn()
			return nil, nil, nil, err
		}
	}
	return coll, emb, closeFn, nil
}

func doc(content, sourceType, sourceName string) *document.Document {
	d := document.New(content)
	d.SourceType, d.SourceName = sourceType, sourceName
	return d
}

func contents(docs []*document.Document) []string {
	out := []string{}
	for _, d := range docs {
		out = append(out, d.Content)
	}
	return out
}
