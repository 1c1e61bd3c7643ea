// Package hosted is what Quarry's rerankers over hosted APIs share: their
// client defaults, keys, and the {index, relevance_score} answer that
// Cohere, Jina and Voyage all return.
package hosted

import (
	"context"
	"encoding/json"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/internal/httpx"
	"github.com/quarry-rag/quarry/rerank"
)

// Client applies rerank.HTTPOptions' defaults: 2 retries when MaxRetries
// is 0.
func Client(o rerank.HTTPOptions) httpx.Client {
	retries := o.MaxRetries
	if retries == 0 {
		retries = 2
	}
	return httpx.New(httpx.Options{Client: o.Client, MaxRetries: retries, RetryDelay: o.RetryDelay})
}

// Key returns key, else the first of vars set, else an error saying that
// the named reranker needs one.
func Key(key, name string, vars ...string) (string, error) {
	return httpx.Key(key, name+" reranker", vars...)
}

type result struct {
	Index int             `json:"index"`
	Score json.RawMessage `json:"relevance_score"`
}

// Rerank posts body and orders docs by the answer's results (Cohere, Jina)
// or data (Voyage), checked by rerank.Apply.
func Rerank(ctx context.Context, c httpx.Client, endpoint string, header map[string]string, body any, docs []*document.Document) ([]*document.Document, error) {
	var resp struct {
		Results []result `json:"results"`
		Data    []result `json:"data"`
	}
	if err := c.PostJSON(ctx, endpoint, header, body, &resp); err != nil {
		return nil, err
	}
	list := resp.Results
	if list == nil {
		list = resp.Data
	}
	res := make([]rerank.Result, len(list))
	for i, x := range list {
		res[i] = rerank.Result{Index: x.Index, Score: x.Score}
	}
	return rerank.Apply(docs, res)
}
