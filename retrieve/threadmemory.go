package retrieve

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/store"
)

// Recall is semantic memory: a retriever over the past turns of the named
// threads, and of no others. The caller names only threads the asker may
// read.
type Recall interface {
	For(threads []string) (Retriever, error)
}

// Rememberer is semantic memory that keeps each answered exchange itself
// (Memory does; ThreadMemory reads the thread store instead).
type Rememberer interface {
	Remember(ctx context.Context, thread, question, answer string, at time.Time) error
}

// DefaultMemoryTurns is how many of a thread's last turns ThreadMemory
// reads.
const DefaultMemoryTurns = 200

// ThreadMemory is semantic memory read straight from a thread store: each
// question and its answer become one passage (sourceType "conversation",
// sourceName the thread id), ranked against the query by the cosine of
// their embeddings, or by the share of the query's words they hold
// without an embedder. It needs no collection of its own, and suits
// threads of modest length: every recall reads and ranks the turns.
type ThreadMemory struct {
	Threads store.ThreadStore
	// Embedder ranks by meaning; nil ranks by words.
	Embedder embed.Embedder
	// Turns is how many of each thread's last turns are read;
	// DefaultMemoryTurns when 0.
	Turns int
}

// For implements Recall.
func (m *ThreadMemory) For(threads []string) (Retriever, error) {
	f, err := MemoryFilter(threads)
	if err != nil {
		return nil, err
	}
	if m == nil || m.Threads == nil {
		return nil, errors.New("semantic memory has no thread store")
	}
	matcher, err := filter.NewMatcher(f)
	if err != nil {
		return nil, err
	}
	return &threadRecall{m: m, threads: uniq(threads), scope: matcher}, nil
}

func uniq(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

type threadRecall struct {
	m       *ThreadMemory
	threads []string
	scope   *filter.Matcher
}

func (r *threadRecall) Retrieve(ctx context.Context, req Request) ([]*document.Document, error) {
	n := r.m.Turns
	if n <= 0 {
		n = DefaultMemoryTurns
	}
	var docs []*document.Document
	for _, th := range r.threads {
		turns, err := r.m.Threads.Turns(ctx, th, n)
		if errors.Is(err, store.ErrThreadNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("semantic memory: thread %s: %w", th, err)
		}
		for i := 0; i+1 < len(turns); i++ {
			q, a := turns[i], turns[i+1]
			if q.Role != "user" || a.Role != "assistant" {
				continue
			}
			text := "User: " + q.Content + "\nAssistant: " + a.Content
			src := document.ConversationSource(th)
			d := &document.Document{ID: document.ChunkID(src.Type, src.Name, q.Seq, text), Content: text,
				SourceType: src.Type, SourceName: src.Name, Metadata: map[string]any{}}
			if r.scope.MatchDocument(d) {
				docs = append(docs, d)
			}
			i++
		}
	}
	if len(docs) == 0 {
		return nil, nil
	}
	if err := r.score(ctx, req.Query, docs); err != nil {
		return nil, err
	}
	slices.SortStableFunc(docs, func(a, b *document.Document) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	if req.TopK > 0 && len(docs) > req.TopK {
		docs = docs[:req.TopK]
	}
	return docs, nil
}

func (r *threadRecall) score(ctx context.Context, query string, docs []*document.Document) error {
	if r.m.Embedder != nil {
		qv, err := embed.EmbedQuery(ctx, r.m.Embedder, []string{query})
		if err != nil {
			return fmt.Errorf("semantic memory: embed the query: %w", err)
		}
		texts := make([]string, len(docs))
		for i, d := range docs {
			texts[i] = d.Content
		}
		vecs, err := r.m.Embedder.Embed(ctx, texts)
		if err != nil {
			return fmt.Errorf("semantic memory: embed the turns: %w", err)
		}
		for i, d := range docs {
			s, _ := document.Cosine(qv[0], vecs[i]) // 0 for vectors of different lengths
			d.SetScore(s)
		}
		return nil
	}
	an, err := bm25.NewAnalyzer(bm25.AnalyzerConfig{})
	if err != nil {
		return err
	}
	q := an.Analyze(query)
	for _, d := range docs {
		have := map[string]bool{}
		for _, w := range an.Analyze(d.Content) {
			have[w] = true
		}
		hit := 0
		for _, w := range q {
			if have[w] {
				hit++
			}
		}
		s := 0.0
		if len(q) > 0 {
			s = float64(hit) / float64(len(q))
		}
		d.SetScore(s)
	}
	return nil
}
