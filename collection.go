package quarry

import (
	"context"
	"encoding/json"

	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/hierarchy"
	"github.com/quarry-rag/quarry/ingest"
)

// QueryOption sets a search's or a question's options. Thread, Memory,
// Post, Transforms and Schema apply to questions only; Explain and
// InHierarchy to searches only.
type QueryOption func(*query)

type query struct {
	search SearchRequest
	ask    AskRequest
}

// Mode sets the mode: auto, keyword, vector or hybrid.
func Mode(m string) QueryOption {
	return func(q *query) { q.search.Mode, q.ask.Mode = m, m }
}

// TopK sets how many results (or passages to read) there are.
func TopK(k int) QueryOption {
	return func(q *query) { q.search.TopK, q.ask.TopK = k, k }
}

// Where narrows the results with a filter (filter.Parse reads every
// syntax).
func Where(f filter.Expr) QueryOption {
	return func(q *query) { q.search.Filter, q.ask.Filter = f, f }
}

// Explain reports each result's rank and score per branch.
func Explain() QueryOption { return func(q *query) { q.search.Explain = true } }

// InHierarchy places each result in the knowledge hierarchy.
func InHierarchy() QueryOption { return func(q *query) { q.search.Hierarchy = true } }

// Thread keeps the question in a conversation thread.
func Thread(id string) QueryOption { return func(q *query) { q.ask.Thread = id } }

// Memory recalls the past exchanges of these threads beside the documents.
func Memory(threads ...string) QueryOption {
	return func(q *query) { q.ask.Memory = append(q.ask.Memory, threads...) }
}

// Post adds post-processors (rerank/spec) after the knowledge base's own.
func Post(specs ...string) QueryOption {
	return func(q *query) { q.ask.Post = append(q.ask.Post, specs...) }
}

// Transforms adds query transforms (rewrite, hyde, decompose, multi-query).
func Transforms(names ...string) QueryOption {
	return func(q *query) { q.ask.Transforms = append(q.ask.Transforms, names...) }
}

// Schema asks for a JSON answer valid against a JSON Schema.
func Schema(jsonSchema json.RawMessage) QueryOption {
	return func(q *query) { q.ask.Schema = jsonSchema }
}

func queryOf(opts []QueryOption) query {
	var q query
	for _, o := range opts {
		o(&q)
	}
	return q
}

// Search searches the collection.
func (c *Collection) Search(ctx context.Context, text string, opts ...QueryOption) (*SearchResult, error) {
	q := queryOf(opts)
	q.search.Collection, q.search.Query = c.Name(), text
	return c.kb.Search(ctx, Developer(), q.search)
}

// Ask answers a question from the collection, citing its passages.
func (c *Collection) Ask(ctx context.Context, question string, opts ...QueryOption) (*AskResult, error) {
	q := queryOf(opts)
	q.ask.Collection, q.ask.Question = c.Name(), question
	return c.kb.Ask(ctx, Developer(), q.ask)
}

// IngestOption sets an ingestion's options.
type IngestOption func(*IngestRequest)

// Meta adds metadata to every chunk.
func Meta(m map[string]any) IngestOption { return func(r *IngestRequest) { r.Metadata = m } }

// Prune removes the collection's sources that are no longer under the
// paths.
func Prune() IngestOption { return func(r *IngestRequest) { r.Prune = true } }

// Include takes only files matching these .gitignore-style patterns.
func Include(patterns ...string) IngestOption {
	return func(r *IngestRequest) { r.Include = append(r.Include, patterns...) }
}

// Exclude leaves out files and folders matching these patterns.
func Exclude(patterns ...string) IngestOption {
	return func(r *IngestRequest) { r.Exclude = append(r.Exclude, patterns...) }
}

// OnProgress receives the run's progress events.
func OnProgress(fn func(ingest.Event)) IngestOption {
	return func(r *IngestRequest) { r.Progress = fn }
}

// OnHierarchy receives the knowledge hierarchy's refresh.
func OnHierarchy(fn func(*hierarchy.BuildReport, *hierarchy.LinkReport)) IngestOption {
	return func(r *IngestRequest) { r.Hierarchy = fn }
}

// Ingest adds files and folders to the collection, re-doing only what
// changed, and refreshes the knowledge hierarchy.
func (c *Collection) Ingest(ctx context.Context, paths []string, opts ...IngestOption) (*ingest.Report, error) {
	req := IngestRequest{Collection: c.Name(), Paths: paths}
	for _, o := range opts {
		o(&req)
	}
	return c.kb.Ingest(ctx, Developer(), req)
}

// Add stores texts whole, each one passage, and returns their ids.
func (c *Collection) Add(ctx context.Context, docs ...NewDocument) ([]string, error) {
	res, err := c.kb.AddDocuments(ctx, Developer(), c.Name(), docs)
	if err != nil {
		return nil, err
	}
	return res.IDs, nil
}

// Delete deletes every passage matching f and returns how many went.
func (c *Collection) Delete(ctx context.Context, f filter.Expr) (int, error) {
	return c.kb.Delete(ctx, Developer(), DeleteRequest{Collection: c.Name(), Filter: f})
}

// DeleteSource deletes every passage of a source.
func (c *Collection) DeleteSource(ctx context.Context, source string) (int, error) {
	return c.kb.Delete(ctx, Developer(), DeleteRequest{Collection: c.Name(), Source: source})
}

// Count counts the passages matching f (nil for all).
func (c *Collection) Count(ctx context.Context, f filter.Expr) (int, error) {
	sc, err := c.Store(ctx)
	if err != nil {
		return 0, err
	}
	return sc.Count(ctx, f)
}

// Hierarchy is the collection's knowledge hierarchy (store.ErrUnsupported
// for a store that keeps none).
func (c *Collection) Hierarchy(ctx context.Context) (*hierarchy.Hierarchy, error) {
	return c.kb.Hierarchy(ctx, Developer(), c.name)
}

// Tree is the collection's knowledge hierarchy as a tree.
func (c *Collection) Tree(ctx context.Context) (*hierarchy.TreeNode, error) {
	return c.kb.Tree(ctx, Developer(), c.name)
}

// Health audits the collection's knowledge hierarchy and indexes; with fix
// it applies the safe repairs first.
func (c *Collection) Health(ctx context.Context, fix bool) (*Health, error) {
	return c.kb.Health(ctx, Developer(), c.name, fix)
}
