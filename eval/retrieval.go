package eval

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/store"
)

// SourceBEIR is the source type of BEIR corpus documents.
const SourceBEIR = "beir"

// IndexCorpus stores a BEIR corpus in a collection the BEIR way: one
// document per chunk, unsplit, its title as the "title" metadata that
// keyword search scores as its own field, its vector embedded from title
// and text. Documents are written in batches of batchSize.
func IndexCorpus(ctx context.Context, c *store.Collection, e embed.Embedder, corpus []Doc, batchSize int) error {
	if batchSize <= 0 {
		batchSize = 1000
	}
	for start := 0; start < len(corpus); start += batchSize {
		part := corpus[start:min(start+batchSize, len(corpus))]
		texts := make([]string, len(part))
		docs := make([]*document.Document, len(part))
		for i, d := range part {
			texts[i] = strings.TrimSpace(d.Title + "\n" + d.Text)
			doc := document.New(d.Text)
			doc.ID = d.ID
			doc.SourceType, doc.SourceName = SourceBEIR, d.ID
			if d.Title != "" {
				doc.Metadata["title"] = d.Title
			}
			docs[i] = doc
		}
		vecs, err := embed.Batched{Embedder: e}.Embed(ctx, texts)
		if err != nil {
			return fmt.Errorf("index corpus: %w", err)
		}
		for i, v := range vecs {
			docs[i].Embedding = v
		}
		if err := c.Upsert(ctx, docs); err != nil {
			return fmt.Errorf("index corpus: %w", err)
		}
	}
	return nil
}

// Config is one retrieval configuration to evaluate.
type Config struct {
	// Name labels the configuration in reports.
	Name string
	Mode store.Mode
	// Fusion applies to hybrid search.
	Fusion store.Fusion
}

// Retrieve runs every query against the collection with cfg and returns
// the rankings (document ids, best first, at most topK each).
func Retrieve(ctx context.Context, c *store.Collection, e embed.Embedder, queries []Query, cfg Config, topK int) (Run, error) {
	run := make(Run, len(queries))
	err := searchAll(ctx, c, e, queries, cfg, topK, func(q Query, hits []store.Hit) {
		ids := make([]string, len(hits))
		for j, h := range hits {
			ids[j] = h.Doc.ID
		}
		run[q.ID] = ids
	})
	if err != nil {
		return nil, err
	}
	return run, nil
}

// searchAll runs every query against the collection with cfg, embedding
// them first in one call when cfg needs vectors, and passes each query's
// hits (at most topK) to f.
func searchAll(ctx context.Context, c *store.Collection, e embed.Embedder, queries []Query, cfg Config, topK int, f func(Query, []store.Hit)) error {
	var vecs [][]float32
	if cfg.Mode != store.ModeKeyword {
		texts := make([]string, len(queries))
		for i, q := range queries {
			texts[i] = q.Text
		}
		var err error
		if vecs, err = embed.EmbedQuery(ctx, e, texts); err != nil {
			return fmt.Errorf("embed queries: %w", err)
		}
	}
	for i, q := range queries {
		req := store.SearchRequest{Mode: cfg.Mode, TopK: topK, Fusion: cfg.Fusion}
		if cfg.Mode != store.ModeVector {
			req.Query = q.Text
		}
		if vecs != nil {
			req.Embedding = vecs[i]
		}
		hits, err := c.Search(ctx, req)
		if err != nil {
			return fmt.Errorf("query %s: %w", q.ID, err)
		}
		f(q, hits)
	}
	return nil
}

// Gate is a threshold on a metric's mean, such as ndcg@10>=0.67.
type Gate struct {
	Metric Metric
	Op     string // >=, >, <=, <
	Value  float64
}

var gateRE = regexp.MustCompile(`^\s*([A-Za-z]+(?:@\d+)?)\s*(>=|<=|>|<)\s*([0-9.eE+-]+)\s*$`)

// ParseGate reads "metric op value", as in "ndcg@10>=0.67".
func ParseGate(s string) (Gate, error) {
	m := gateRE.FindStringSubmatch(s)
	if m == nil {
		return Gate{}, fmt.Errorf("gate %q: write it as metric>=value, such as ndcg@10>=0.67", s)
	}
	metric, err := ParseMetric(m[1])
	if err != nil {
		return Gate{}, fmt.Errorf("gate %q: %w", s, err)
	}
	v, err := strconv.ParseFloat(m[3], 64)
	if err != nil {
		return Gate{}, fmt.Errorf("gate %q: %w", s, err)
	}
	return Gate{Metric: metric, Op: m[2], Value: v}, nil
}

// Pass reports whether the result meets the gate.
func (g Gate) Pass(r Result) bool {
	v := r.Mean[g.Metric.String()]
	switch g.Op {
	case ">=":
		return v >= g.Value
	case ">":
		return v > g.Value
	case "<=":
		return v <= g.Value
	}
	return v < g.Value
}

// String writes the gate back.
func (g Gate) String() string {
	return g.Metric.String() + g.Op + strconv.FormatFloat(g.Value, 'g', -1, 64)
}
