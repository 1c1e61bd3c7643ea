package weaviate

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
)

// maxResults is Weaviate's default QUERY_MAXIMUM_RESULTS: no query may ask
// for more objects than this.
const maxResults = 10000

// userFilter compiles a request's filter for a collection.
func userFilter(c *collection, f filter.Expr) (compiled, error) {
	cf, err := compileFilter(f, c.cfg.Schema)
	if err != nil {
		return compiled{}, fmt.Errorf("%w: %v", store.ErrInvalidRequest, err)
	}
	return cf, nil
}

// filtered loads a collection and compiles a filter for it.
func (b *Backend) filtered(ctx context.Context, coll string, f filter.Expr) (*collection, compiled, error) {
	c, err := b.get(ctx, coll)
	if err != nil {
		return nil, compiled{}, err
	}
	cf, err := userFilter(c, f)
	return c, cf, err
}

// Get implements store.Searcher.
func (b *Backend) Get(ctx context.Context, coll string, ids []string) ([]*document.Document, error) {
	c, err := b.get(ctx, coll)
	if err != nil {
		return nil, err
	}
	found := map[string]*document.Document{}
	err = b.read(ctx, coll, func(s snapshot) error {
		clear(found)
		for start := 0; start < len(ids); start += 1000 {
			part := ids[start:min(start+1000, len(ids))]
			w := and(where{"path": []any{"q_chunk"}, "operator": "ContainsAny", "valueTextArray": wrapAll(part)}, s.visible(false))
			docs, err := b.fetch(ctx, c.class, w, "", min(2*len(part)+16, maxResults), true)
			if err != nil {
				return err
			}
			for _, d := range docs {
				found[d.ID] = d
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]*document.Document, 0, len(found))
	for _, id := range ids {
		if d, ok := found[id]; ok {
			out = append(out, d)
			delete(found, id) // an id asked twice is returned once
		}
	}
	return out, nil
}

// fetch runs one filtered Get (no ranking) and returns its documents, the
// newest version of each chunk.
func (b *Backend) fetch(ctx context.Context, class string, w where, sort string, limit int, vectors bool) ([]*document.Document, error) {
	ws, err := gqlValue(w)
	if err != nil {
		return nil, err
	}
	fields := hitFields(vectors)
	if sort != "" {
		// A sharded class is sorted by the node that merges the shards'
		// answers, from the properties selected: without q_chunk among
		// them the merged page is in no order.
		fields = "q_chunk " + fields
	}
	q := fmt.Sprintf(`{Get{%s(where:%s%s,limit:%d%s){%s}}}`, class, ws, sort, limit, b.gqlConsistency(), fields)
	var data struct {
		Get map[string][]hit `json:"Get"`
	}
	if err := b.c.graphql(ctx, q, &data); err != nil {
		return nil, err
	}
	docs, _, err := newest(data.Get[class], nil)
	return docs, err
}

// newest decodes hits, keeping one version per chunk: the newest (two are
// visible only while a concurrent rewrite of the same chunk settles).
// score, when set, scores each hit; from[i] is the hit docs[i] came from.
func newest(hits []hit, score func(hit) (float64, error)) (docs []*document.Document, from []int, err error) {
	seqs := map[string]int64{}
	pos := map[string]int{}
	for k, h := range hits {
		d, seq, err := h.document()
		if err != nil {
			return nil, nil, err
		}
		if score != nil {
			s, err := score(h)
			if err != nil {
				return nil, nil, err
			}
			d.SetScore(s)
		}
		if i, dup := pos[d.ID]; dup {
			if seq > seqs[d.ID] {
				docs[i], from[i], seqs[d.ID] = d, k, seq
			}
			continue
		}
		pos[d.ID], seqs[d.ID] = len(docs), seq
		docs, from = append(docs, d), append(from, k)
	}
	return docs, from, nil
}

// Count implements store.Searcher.
func (b *Backend) Count(ctx context.Context, coll string, f filter.Expr) (int, error) {
	c, cf, err := b.filtered(ctx, coll, f)
	if err != nil || cf.t == never {
		return 0, err
	}
	n := 0
	err = b.read(ctx, coll, func(s snapshot) error {
		n, err = b.aggregateCount(ctx, c.class, and(cf.w, s.visible(false)))
		return err
	})
	return n, err
}

// SearchVector implements store.Searcher.
func (b *Backend) SearchVector(ctx context.Context, coll string, vec []float32, f filter.Expr, k int) ([]*document.Document, error) {
	return b.SearchRequest(ctx, coll, store.SearchRequest{Mode: store.ModeVector, Embedding: vec, Filter: f, TopK: k, Vectors: true})
}

// SearchKeyword implements store.Searcher.
func (b *Backend) SearchKeyword(ctx context.Context, coll string, query string, f filter.Expr, k int) ([]*document.Document, error) {
	return b.SearchRequest(ctx, coll, store.SearchRequest{Mode: store.ModeKeyword, Query: query, Filter: f, TopK: k, Vectors: true})
}

// SearchRequest implements store.RequestSearcher: one branch, with the
// vectors only when asked for.
func (b *Backend) SearchRequest(ctx context.Context, coll string, req store.SearchRequest) ([]*document.Document, error) {
	c, err := b.get(ctx, coll)
	if err != nil {
		return nil, err
	}
	br := branch{k: req.TopK}
	if req.Mode == store.ModeVector {
		br.vector = req.Embedding
	} else {
		br.terms = c.analyzer.Analyze(req.Query)
	}
	res, err := b.search(ctx, c, req.Filter, req.Vectors, []branch{br})
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// SearchHybrid implements store.HybridSearcher: both branches run at once
// over one snapshot, and Quarry fuses them, so scores are
// the same as on every other store (SEMANTICS §5).
func (b *Backend) SearchHybrid(ctx context.Context, coll string, req store.SearchRequest) ([]store.Hit, error) {
	c, err := b.get(ctx, coll)
	if err != nil {
		return nil, err
	}
	terms := c.analyzer.Analyze(req.Query)
	if b.opts.NativeHybrid && len(terms) > 0 {
		return b.nativeHybrid(ctx, c, req, terms)
	}
	k := 2 * req.TopK
	res, err := b.search(ctx, c, req.Filter, req.Vectors, []branch{
		{vector: req.Embedding, k: k},
		{terms: c.analyzer.Analyze(req.Query), k: k},
	})
	if err != nil {
		return nil, err
	}
	return store.Fuse(res[0], res[1], req.Fusion, req.Explain), nil
}

// branch is one ranked search: by vector, or by keyword terms.
type branch struct {
	vector []float32
	terms  []string
	k      int
}

// tieSlack is how many results past k a branch asks for, so equal scores
// at the cut are ordered by id as on every store, not by the engine.
const tieSlack = 16

// search runs branches over one snapshot.
func (b *Backend) search(ctx context.Context, c *collection, f filter.Expr, vectors bool, branches []branch) ([][]*document.Document, error) {
	cf, err := userFilter(c, f)
	if err != nil {
		return nil, err
	}
	out := make([][]*document.Document, len(branches))
	if cf.t == never {
		return out, nil
	}
	err = b.read(ctx, c.cfg.Name, func(s snapshot) error {
		w, err := gqlValue(and(cf.w, s.visible(false)))
		if err != nil {
			return err
		}
		limits := make([]int, len(branches))
		var todo []int
		for i, br := range branches {
			out[i] = nil
			if br.vector == nil && len(br.terms) == 0 {
				continue // no term survives analysis: nothing matches
			}
			limits[i] = min(br.k+tieSlack, maxResults)
			todo = append(todo, i)
		}
		// Each branch is a request of its own, run at the same time: the
		// server resolves the fields of one GraphQL request one after
		// another, so one request with both would take their sum.
		var wg sync.WaitGroup
		errs := make([]error, len(branches))
		for _, i := range todo {
			wg.Go(func() { out[i], errs[i] = b.rankBranch(ctx, c, branches[i], w, limits[i], vectors) })
		}
		wg.Wait()
		return errors.Join(errs...)
	})
	return out, err
}

// rankBranch runs one ranked branch, asking again for more results while
// its k-th score ties with its last one.
func (b *Backend) rankBranch(ctx context.Context, c *collection, br branch, w string, limit int, vectors bool) ([]*document.Document, error) {
	var rank string
	score := keywordScore
	if br.vector != nil {
		rank, score = "nearVector:{vector:"+vectorLiteral(br.vector)+"}", vectorScore
	} else {
		terms, _ := json.Marshal(strings.Join(br.terms, " "))
		rank = `bm25:{query:` + string(terms) + `,properties:["q_terms"]}`
	}
	for {
		q := fmt.Sprintf("{Get{%s(%s,where:%s,limit:%d%s){%s}}}", c.class, rank, w, limit, b.gqlConsistency(), hitFields(vectors))
		var data struct {
			Get map[string][]hit `json:"Get"`
		}
		if err := b.c.graphql(ctx, q, &data); err != nil {
			return nil, err
		}
		docs, _, err := newest(data.Get[c.class], score)
		if err != nil {
			return nil, err
		}
		store.SortDocuments(docs)
		if len(data.Get[c.class]) == limit && limit < maxResults && len(docs) > br.k && docs[br.k-1].Score == docs[len(docs)-1].Score {
			limit = min(4*limit, maxResults)
			continue
		}
		if len(docs) > br.k {
			docs = docs[:br.k]
		}
		return docs, nil
	}
}

func vectorScore(h hit) (float64, error) {
	if h.Additional.Distance == nil {
		return 0, fmt.Errorf("weaviate: object %s came without its distance", h.Additional.ID)
	}
	return 1 - *h.Additional.Distance, nil
}

func keywordScore(h hit) (float64, error) { return parseScore(h.Additional.Score) }

func vectorLiteral(v []float32) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, x := range v {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatFloat(float64(x), 'g', -1, 32))
	}
	b.WriteByte(']')
	return b.String()
}

// Scan implements store.Scanner: documents in id order.
func (b *Backend) Scan(ctx context.Context, coll string, after string, limit int) ([]*document.Document, error) {
	c, err := b.get(ctx, coll)
	if err != nil {
		return nil, err
	}
	var docs []*document.Document
	err = b.read(ctx, coll, func(s snapshot) error {
		w := s.visible(false)
		if after != "" {
			w = and(where{"path": []any{"q_chunk"}, "operator": "GreaterThan", "valueText": wrap(after)}, w)
		}
		docs, err = b.fetch(ctx, c.class, w, `,sort:[{path:["q_chunk"],order:asc}]`, min(limit, maxResults), true)
		return err
	})
	slices.SortFunc(docs, func(a, b *document.Document) int { return cmp.Compare(a.ID, b.ID) })
	return docs, err
}

// sorted reads a class's objects matching w in the order of the text
// property key, a page of maxResults at a time, passing each page to fn as
// raw objects (key and fields selected). The key is selected too: a
// sharded class is sorted by the merging node from the selected values.
func (b *Backend) sorted(ctx context.Context, class string, w where, key, fields string, fn func([]map[string]json.RawMessage) error) error {
	after := ""
	for {
		pw := w
		if after != "" {
			pw = and(where{"path": []any{key}, "operator": "GreaterThan", "valueText": after}, w)
		}
		ws, err := gqlValue(pw)
		if err != nil {
			return err
		}
		q := fmt.Sprintf(`{Get{%s(where:%s,sort:[{path:[%q],order:asc}],limit:%d%s){%s %s}}}`, class, ws, key, maxResults, b.gqlConsistency(), key, fields)
		var data struct {
			Get map[string][]map[string]json.RawMessage `json:"Get"`
		}
		if err := b.c.graphql(ctx, q, &data); err != nil {
			return err
		}
		rows := data.Get[class]
		if err := fn(rows); err != nil {
			return err
		}
		if len(rows) < maxResults {
			return nil
		}
		if err := json.Unmarshal(rows[len(rows)-1][key], &after); err != nil {
			return fmt.Errorf("weaviate: page key: %w", err)
		}
	}
}

// text decodes a text property of a raw object.
func text(row map[string]json.RawMessage, prop string) string {
	var s string
	_ = json.Unmarshal(row[prop], &s)
	return s
}

// Sources implements store.SourceSyncer.
func (b *Backend) Sources(ctx context.Context, coll string) ([]store.SourceState, error) {
	if _, err := b.get(ctx, coll); err != nil {
		return nil, err
	}
	var out []store.SourceState
	err := b.read(ctx, coll, func(s snapshot) error {
		out = out[:0]
		seqs := map[document.Source]int64{}
		pos := map[document.Source]int{}
		w := and(where{"path": []any{"coll"}, "operator": "Equal", "valueText": coll}, s.visible(true))
		return b.sorted(ctx, b.sourcesClass(), w, "q_source", "q_state", func(rows []map[string]json.RawMessage) error {
			for _, r := range rows {
				var st storedState
				if err := json.Unmarshal([]byte(text(r, "q_state")), &st); err != nil {
					return fmt.Errorf("weaviate: source state: %w", err)
				}
				if i, dup := pos[st.Source]; dup {
					if st.Seq > seqs[st.Source] {
						out[i], seqs[st.Source] = st.SourceState, st.Seq
					}
					continue
				}
				pos[st.Source], seqs[st.Source] = len(out), st.Seq
				out = append(out, st.SourceState)
			}
			return nil
		})
	})
	slices.SortFunc(out, func(a, b store.SourceState) int {
		return cmp.Or(cmp.Compare(a.Source.Type, b.Source.Type), cmp.Compare(a.Source.Name, b.Source.Name))
	})
	return out, err
}

// storedState is what q_state holds.
type storedState struct {
	store.SourceState
	Seq int64 `json:"seq"`
}
