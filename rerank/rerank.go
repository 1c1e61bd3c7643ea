// Package rerank reworks retrieved passages after retrieval and before the
// prompt: rerankers (Cohere, Jina, Voyage, OpenAI-compatible /rerank servers
// such as TEI and vLLM, and a chat model ranking listwise, in subpackages),
// fixed and adaptive score thresholds, MMR diversity, near-duplicate
// removal, neighbour expansion and citation-aware packing to a token budget.
//
// Every type here has the method set of rag.PostProcessor,
//
//	Process(ctx, question string, docs []*document.Document) ([]*document.Document, error)
//
// so a pipeline lists them in the order they should run. None modifies the
// documents it is given: a step that changes a score returns copies.
package rerank

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/quarry-rag/quarry/document"
)

// Reranker orders documents by their relevance to a query, best first,
// with the relevance as each document's score. An empty input makes no
// call and returns an empty list.
type Reranker interface {
	Rerank(ctx context.Context, query string, docs []*document.Document) ([]*document.Document, error)
}

// ErrResponse marks a reranking service's reply that breaks the rerank
// contract (SEMANTICS §5): no results, an index naming no document sent or
// named twice, a score that is not a number.
var ErrResponse = errors.New("malformed rerank response")

// Result is one entry of a rerank response: the position of a document in
// the request and its relevance score as the service sent it.
type Result struct {
	Index int
	Score json.RawMessage
}

// Apply maps a rerank response onto the documents sent, in the
// response's order, each a copy with the relevance as its score
// (SEMANTICS §5). Documents the response leaves out are dropped: the
// service was asked for its top results.
func Apply(docs []*document.Document, results []Result) ([]*document.Document, error) {
	if len(results) == 0 {
		return nil, fmt.Errorf("%w: the response holds no results", ErrResponse)
	}
	seen := make(map[int]bool, len(results))
	out := make([]*document.Document, 0, len(results))
	for _, r := range results {
		if r.Index < 0 || r.Index >= len(docs) {
			return nil, fmt.Errorf("%w: it names document %d, which was not sent", ErrResponse, r.Index)
		}
		if seen[r.Index] {
			return nil, fmt.Errorf("%w: it names document %d twice", ErrResponse, r.Index)
		}
		seen[r.Index] = true
		s, err := number(r.Score)
		if err != nil {
			return nil, fmt.Errorf("%w: it gives document %d a score that is not a number (%s)", ErrResponse, r.Index, r.Score)
		}
		out = append(out, WithScore(docs[r.Index], s))
	}
	return out, nil
}

// number reads a JSON number; strings, null and anything else are errors.
func number(raw json.RawMessage) (float64, error) {
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil || len(raw) == 0 || raw[0] == '"' {
		return 0, errors.New("not a number")
	}
	return strconv.ParseFloat(string(n), 64)
}

// WithScore returns a shallow copy of d holding score s.
func WithScore(d *document.Document, s float64) *document.Document {
	c := *d
	c.SetScore(s)
	return &c
}

// Texts returns the documents' contents, in order: what a reranking
// service is sent.
func Texts(docs []*document.Document) []string {
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = d.Content
	}
	return out
}
