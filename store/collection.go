package store

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/split"
)

// Collection is a handle on one collection. It validates every request
// before any I/O and is safe for concurrent use.
type Collection struct {
	s   *Store
	cfg CollectionConfig
}

// Store returns the store the collection belongs to.
func (c *Collection) Store() *Store { return c.s }

// Config returns the collection's configuration.
func (c *Collection) Config() CollectionConfig { return c.cfg }

// Name returns the collection's name.
func (c *Collection) Name() string { return c.cfg.Name }

// Upsert stores docs, replacing documents with the same id. The whole batch
// is validated first — ids present and unique, each document valid against
// the schema, an embedding of the collection's dimension — and then written
// atomically: on any error nothing is written.
func (c *Collection) Upsert(ctx context.Context, docs []*document.Document) error {
	if len(docs) == 0 {
		return nil
	}
	if err := c.ValidateDocuments(docs); err != nil {
		return err
	}
	if err := c.s.b.Upsert(ctx, c.cfg.Name, docs); err != nil {
		return fmt.Errorf("upsert into %q: %w", c.cfg.Name, err)
	}
	return nil
}

// ValidateDocuments checks a batch as Upsert would, without writing.
func (c *Collection) ValidateDocuments(docs []*document.Document) error {
	seen := make(map[string]int, len(docs))
	for i, d := range docs {
		if d == nil {
			return fmt.Errorf("%w: document %d of the batch is nil", ErrInvalidRequest, i)
		}
		if d.ID == "" {
			return fmt.Errorf("%w: document %d of the batch has no id", ErrInvalidRequest, i)
		}
		if j, dup := seen[d.ID]; dup {
			return fmt.Errorf("%w: documents %d and %d of the batch share id %s", ErrInvalidRequest, j, i, d.ID)
		}
		seen[d.ID] = i
		if d.Embedding == nil {
			return fmt.Errorf("%w: document %s must have an embedding before it can be stored", ErrInvalidRequest, d.ID)
		}
		if err := document.CheckVector(d.Embedding, c.cfg.Model.Dimension); err != nil {
			return fmt.Errorf("%w: document %s: %w (collection %q uses %s)", ErrInvalidRequest, d.ID, err, c.cfg.Name, c.cfg.Model)
		}
		if err := c.cfg.Schema.ValidateDocument(d); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidRequest, err)
		}
	}
	return nil
}

// Get returns the documents with the given ids, in that order, skipping ids
// that are not stored. Returned documents are copies.
func (c *Collection) Get(ctx context.Context, ids []string) ([]*document.Document, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	docs, err := c.s.b.Get(ctx, c.cfg.Name, ids)
	if err != nil {
		return nil, fmt.Errorf("get from %q: %w", c.cfg.Name, err)
	}
	return docs, nil
}

// Delete removes the documents matching f and returns how many it removed.
// f is validated against the schema first; a nil filter is an error (drop
// the collection to delete everything).
func (c *Collection) Delete(ctx context.Context, f filter.Expr) (int, error) {
	if f == nil {
		return 0, fmt.Errorf("%w: delete from %q needs a filter", ErrInvalidRequest, c.cfg.Name)
	}
	if err := c.checkFilter(f); err != nil {
		return 0, err
	}
	n, err := c.s.b.Delete(ctx, c.cfg.Name, f)
	if err != nil {
		return 0, fmt.Errorf("delete from %q: %w", c.cfg.Name, err)
	}
	return n, nil
}

// Count counts the documents matching f; nil counts all.
func (c *Collection) Count(ctx context.Context, f filter.Expr) (int, error) {
	if err := c.checkFilter(f); err != nil {
		return 0, err
	}
	n, err := c.s.b.Count(ctx, c.cfg.Name, f)
	if err != nil {
		return 0, fmt.Errorf("count in %q: %w", c.cfg.Name, err)
	}
	return n, nil
}

// checkFilter validates f against the schema and refuses raw fragments the
// backend cannot run, anywhere in the tree.
func (c *Collection) checkFilter(f filter.Expr) error {
	if f == nil {
		return nil
	}
	if err := filter.Validate(f, c.cfg.Schema); err != nil {
		return fmt.Errorf("collection %q: %w", c.cfg.Name, err)
	}
	if err := filter.RejectRaw(f, c.s.b.Dialect()); err != nil {
		return fmt.Errorf("collection %q: %w", c.cfg.Name, err)
	}
	return nil
}

// Normalize validates req against the collection and fills its defaults:
// the mode (when ModeAuto), TopK and the fusion settings. Search calls it;
// backends receive normalised requests.
func (c *Collection) Normalize(req SearchRequest) (SearchRequest, error) {
	if req.TopK < 0 {
		return req, fmt.Errorf("%w: top-k must be greater than zero, got %d", ErrInvalidRequest, req.TopK)
	}
	if req.TopK == 0 {
		req.TopK = DefaultTopK
	}
	if req.TopK > MaxTopK {
		return req, fmt.Errorf("%w: top-k %d is above the limit of %d", ErrInvalidRequest, req.TopK, MaxTopK)
	}
	hasVec, hasQuery := req.Embedding != nil, strings.TrimSpace(req.Query) != ""
	if req.Mode == ModeAuto {
		switch {
		case hasVec && hasQuery:
			req.Mode = ModeHybrid
		case hasVec:
			req.Mode = ModeVector
		case hasQuery:
			req.Mode = ModeKeyword
		default:
			return req, fmt.Errorf("%w: a search needs an embedding, a query text or both", ErrInvalidRequest)
		}
	}
	switch req.Mode {
	case ModeVector, ModeKeyword, ModeHybrid:
	default:
		return req, fmt.Errorf("%w: unknown search mode %q (use vector, keyword or hybrid)", ErrInvalidRequest, req.Mode)
	}
	if req.Mode != ModeKeyword {
		if !hasVec {
			return req, fmt.Errorf("%w: %s search needs a query embedding", ErrInvalidRequest, req.Mode)
		}
		if err := document.CheckVector(req.Embedding, c.cfg.Model.Dimension); err != nil {
			return req, fmt.Errorf("%w: query embedding: %w (collection %q uses %s)", ErrInvalidRequest, err, c.cfg.Name, c.cfg.Model)
		}
	}
	if req.Mode != ModeVector && !hasQuery {
		return req, fmt.Errorf("%w: %s search needs a query text", ErrInvalidRequest, req.Mode)
	}
	if err := c.checkFilter(req.Filter); err != nil {
		return req, err
	}
	f := &req.Fusion
	if f.Method == "" {
		f.Method = FusionRRF
	}
	if f.Method != FusionRRF && f.Method != FusionConvex {
		return req, fmt.Errorf("%w: unknown fusion %q (use rrf or convex)", ErrInvalidRequest, f.Method)
	}
	if f.K < 0 || f.VectorWeight < 0 || f.KeywordWeight < 0 || f.Alpha < 0 || f.Alpha > 1 ||
		isBad(f.VectorWeight) || isBad(f.KeywordWeight) || isBad(f.Alpha) {
		return req, fmt.Errorf("%w: fusion settings must be non-negative and finite, alpha at most 1", ErrInvalidRequest)
	}
	if f.K == 0 {
		f.K = 60
	}
	if f.VectorWeight == 0 {
		f.VectorWeight = 1
	}
	if f.KeywordWeight == 0 {
		f.KeywordWeight = 1
	}
	if f.Alpha == 0 {
		f.Alpha = 0.5
	}
	return req, nil
}

func isBad(f float64) bool { return math.IsNaN(f) || math.IsInf(f, 0) }

// Search runs a search. Results are ordered by score descending, then id
// ascending, and hold at most TopK documents. Hybrid search takes 2·TopK
// candidates from each branch, filtered before ranking, and fuses them.
func (c *Collection) Search(ctx context.Context, req SearchRequest) ([]Hit, error) {
	req, err := c.Normalize(req)
	if err != nil {
		return nil, err
	}
	var hits []Hit
	rs, whole := c.s.b.(RequestSearcher)
	switch {
	case whole && req.Mode != ModeHybrid:
		docs, err := rs.SearchRequest(ctx, c.cfg.Name, req)
		if err != nil {
			return nil, fmt.Errorf("%s search in %q: %w", req.Mode, c.cfg.Name, err)
		}
		hits = branchHits(docs, req.Explain, req.Mode == ModeVector)
	case req.Mode == ModeVector:
		docs, err := c.s.b.SearchVector(ctx, c.cfg.Name, req.Embedding, req.Filter, req.TopK)
		if err != nil {
			return nil, fmt.Errorf("vector search in %q: %w", c.cfg.Name, err)
		}
		hits = branchHits(docs, req.Explain, true)
	case req.Mode == ModeKeyword:
		docs, err := c.s.b.SearchKeyword(ctx, c.cfg.Name, req.Query, req.Filter, req.TopK)
		if err != nil {
			return nil, fmt.Errorf("keyword search in %q: %w", c.cfg.Name, err)
		}
		hits = branchHits(docs, req.Explain, false)
	case req.Mode == ModeHybrid:
		if hs, ok := c.s.b.(HybridSearcher); ok {
			hits, err = hs.SearchHybrid(ctx, c.cfg.Name, req)
		} else {
			hits, err = c.fuseBranches(ctx, req)
		}
		if err != nil {
			return nil, fmt.Errorf("hybrid search in %q: %w", c.cfg.Name, err)
		}
	}
	sortHits(hits)
	if len(hits) > req.TopK {
		hits = hits[:req.TopK]
	}
	return hits, nil
}

func (c *Collection) fuseBranches(ctx context.Context, req SearchRequest) ([]Hit, error) {
	k := 2 * req.TopK
	vec, err := c.s.b.SearchVector(ctx, c.cfg.Name, req.Embedding, req.Filter, k)
	if err != nil {
		return nil, fmt.Errorf("vector branch: %w", err)
	}
	kw, err := c.s.b.SearchKeyword(ctx, c.cfg.Name, req.Query, req.Filter, k)
	if err != nil {
		return nil, fmt.Errorf("keyword branch: %w", err)
	}
	return Fuse(vec, kw, req.Fusion, req.Explain), nil
}

func branchHits(docs []*document.Document, explain, vector bool) []Hit {
	hits := make([]Hit, len(docs))
	for i, d := range docs {
		hits[i] = Hit{Doc: d}
		if explain {
			b := &BranchScore{Rank: i + 1, Score: d.Score}
			if vector {
				hits[i].Explain = &Explanation{Vector: b}
			} else {
				hits[i].Explain = &Explanation{Keyword: b}
			}
		}
	}
	return hits
}

// Title is the text keyword search scores as a document's title, beside
// its content, on every store: its "title" metadata when that is a string.
func Title(d *document.Document) string {
	t, _ := d.Metadata["title"].(string)
	return t
}

// Code reports whether keyword search reads a document's whole text as
// code: a chunk of a source file (split.KindOf). Code spans and blocks in
// any text are code too (bm25: stop words inside code pair up).
func Code(d *document.Document) bool {
	return d.SourceType == document.SourceFile && split.KindOf(d.SourceName) == split.KindCode
}

// SortDocuments orders documents by score descending, then id ascending:
// the order every store returns (SEMANTICS §1).
func SortDocuments(docs []*document.Document) {
	sort.Slice(docs, func(i, j int) bool { return Less(docs[i], docs[j]) })
}

// Less reports whether a ranks before b: higher score first, then lower id.
func Less(a, b *document.Document) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.ID < b.ID
}

func sortHits(hits []Hit) {
	slices.SortFunc(hits, func(a, b Hit) int {
		switch {
		case Less(a.Doc, b.Doc):
			return -1
		case Less(b.Doc, a.Doc):
			return 1
		}
		return 0
	})
}

// FuseBranches is the hybrid search of a store whose engine answers one
// kind of search a request: the vector and keyword branches, 2·k each
// with the request's filter, run at once through search and are fused as
// on every store.
func FuseBranches(ctx context.Context, req SearchRequest, search func(context.Context, SearchRequest) ([]*document.Document, error)) ([]Hit, error) {
	vreq, kreq := req, req
	vreq.Mode, vreq.TopK, vreq.Query = ModeVector, 2*req.TopK, ""
	kreq.Mode, kreq.TopK, kreq.Embedding = ModeKeyword, 2*req.TopK, nil
	var (
		vec  []*document.Document
		verr error
		wg   sync.WaitGroup
	)
	wg.Go(func() { vec, verr = search(ctx, vreq) })
	kw, kerr := search(ctx, kreq)
	wg.Wait()
	if verr != nil {
		return nil, fmt.Errorf("vector branch: %w", verr)
	}
	if kerr != nil {
		return nil, fmt.Errorf("keyword branch: %w", kerr)
	}
	return Fuse(vec, kw, req.Fusion, req.Explain), nil
}

// Fuse combines a vector and a keyword result list, each ranked best first,
// into one list with fused scores (SEMANTICS §5). RRF: Σ weight/(k + rank)
// over the branches that returned the document. Convex: alpha·v + (1−alpha)·w
// with each branch's scores min–max normalised to [0, 1] (a branch whose
// scores are all equal normalises to 1; a branch that missed the document
// contributes 0). f must have its defaults filled (see Normalize).
func Fuse(vector, keyword []*document.Document, f Fusion, explain bool) []Hit {
	// One slice of accumulators and no per-branch allocations unless the
	// caller wants explanations: a hybrid search fuses on every query, and
	// a pointer per document and branch made this a sizeable part of an
	// embedded hybrid search (126 allocations for 20 + 20 hits).
	type acc struct {
		doc      *document.Document
		score    float64
		v, k     BranchScore
		inV, inK bool
	}
	accs := make([]acc, 0, len(vector)+len(keyword))
	at := make(map[string]int, len(vector)+len(keyword))
	add := func(docs []*document.Document, isVector bool) {
		lo, hi := scoreRange(docs)
		for i, d := range docs {
			n, ok := at[d.ID]
			if !ok {
				n = len(accs)
				at[d.ID] = n
				accs = append(accs, acc{doc: d.Clone()})
			}
			a := &accs[n]
			var w float64
			if f.Method == FusionConvex {
				norm := 1.0
				if hi > lo {
					norm = (d.Score - lo) / (hi - lo)
				}
				w = (1 - f.Alpha) * norm
				if isVector {
					w = f.Alpha * norm
				}
			} else {
				weight := f.KeywordWeight
				if isVector {
					weight = f.VectorWeight
				}
				w = weight / float64(f.K+i+1)
			}
			a.score += w
			b := BranchScore{Rank: i + 1, Score: d.Score}
			if isVector {
				a.v, a.inV = b, true
			} else {
				a.k, a.inK = b, true
			}
		}
	}
	add(vector, true)
	add(keyword, false)
	hits := make([]Hit, len(accs))
	var exs []Explanation
	if explain {
		exs = make([]Explanation, len(accs))
	}
	for i := range accs {
		a := &accs[i]
		a.doc.SetScore(a.score)
		hits[i].Doc = a.doc
		if explain {
			ex := &exs[i]
			ex.Fusion = f.Method
			if a.inV {
				ex.Vector = &a.v
			}
			if a.inK {
				ex.Keyword = &a.k
			}
			hits[i].Explain = ex
		}
	}
	sortHits(hits)
	return hits
}

func scoreRange(docs []*document.Document) (lo, hi float64) {
	for i, d := range docs {
		if i == 0 || d.Score < lo {
			lo = d.Score
		}
		if i == 0 || d.Score > hi {
			hi = d.Score
		}
	}
	return lo, hi
}
