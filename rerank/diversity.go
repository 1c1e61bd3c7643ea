package rerank

import (
	"context"
	"fmt"
	"math"
	"strings"
	"unicode"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
)

// DefaultLambda weighs relevance against novelty in MMR.
const DefaultLambda = 0.7

// MMR reorders passages by maximal marginal relevance: each next passage
// maximises Lambda·relevance − (1−Lambda)·(its greatest similarity to a
// passage already chosen), so near-repeats sink below fresh material.
// Relevance is the score scaled to [0, 1] over the input (unscored: 0).
// Similarity is the cosine of the passages' embeddings — their own, or
// Embedder's when they carry none — and the overlap of their word sets
// (Jaccard) without an embedder.
type MMR struct {
	// Lambda is DefaultLambda when 0.
	Lambda float64
	// K is how many passages to keep; all, reordered, when 0.
	K int
	// Embedder embeds passages that carry no embedding; nil compares words.
	Embedder embed.Embedder
}

// Process implements rag.PostProcessor.
func (m MMR) Process(ctx context.Context, _ string, docs []*document.Document) ([]*document.Document, error) {
	if len(docs) < 2 {
		return docs, nil
	}
	lambda := m.Lambda
	if lambda == 0 {
		lambda = DefaultLambda
	}
	k := m.K
	if k <= 0 || k > len(docs) {
		k = len(docs)
	}
	sim, err := m.similarity(ctx, docs)
	if err != nil {
		return nil, err
	}
	rel := relevance(docs)
	chosen := make([]bool, len(docs))
	maxSim := make([]float64, len(docs))
	out := make([]*document.Document, 0, k)
	for len(out) < k {
		best, bestVal := -1, math.Inf(-1)
		for i := range docs {
			if chosen[i] {
				continue
			}
			v := lambda*rel[i] - (1-lambda)*maxSim[i]
			if v > bestVal {
				best, bestVal = i, v
			}
		}
		chosen[best] = true
		out = append(out, docs[best])
		for i := range docs {
			if !chosen[i] {
				maxSim[i] = math.Max(maxSim[i], sim(i, best))
			}
		}
	}
	return out, nil
}

// relevance scales the scores to [0, 1]; equal scores are all 1.
func relevance(docs []*document.Document) []float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, d := range docs {
		if d.Scored {
			lo, hi = math.Min(lo, d.Score), math.Max(hi, d.Score)
		}
	}
	out := make([]float64, len(docs))
	for i, d := range docs {
		switch {
		case !d.Scored:
		case hi > lo:
			out[i] = (d.Score - lo) / (hi - lo)
		default:
			out[i] = 1
		}
	}
	return out
}

func (m MMR) similarity(ctx context.Context, docs []*document.Document) (func(i, j int) float64, error) {
	vecs := make([][]float32, len(docs))
	var missing []int
	for i, d := range docs {
		vecs[i] = d.Embedding
		if len(d.Embedding) == 0 {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 && m.Embedder != nil {
		texts := make([]string, len(missing))
		for j, i := range missing {
			texts[j] = docs[i].Content
		}
		got, err := m.Embedder.Embed(ctx, texts)
		if err != nil {
			return nil, fmt.Errorf("mmr: embed the passages: %w", err)
		}
		for j, i := range missing {
			vecs[i] = got[j]
		}
		missing = nil
	}
	if len(missing) == 0 {
		return func(i, j int) float64 {
			s, _ := document.Cosine(vecs[i], vecs[j]) // 0 for vectors of different lengths
			return s
		}, nil
	}
	sets := make([]map[string]bool, len(docs))
	for i, d := range docs {
		sets[i] = wordSet(d.Content)
	}
	return func(i, j int) float64 { return jaccard(sets[i], sets[j]) }, nil
}

// wordSet is the set of lowercased words of s.
func wordSet(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		out[w] = true
	}
	return out
}

func jaccard(a, b map[string]bool) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	inter := 0
	for w := range a {
		if b[w] {
			inter++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// DefaultSimilarity is the word-set overlap above which Dedupe holds two
// passages to say the same thing.
const DefaultSimilarity = 0.9

// Dedupe drops passages that repeat an earlier one: the same id, or word
// sets overlapping (Jaccard) at least Similarity. The first keeps its
// place. The pipeline already drops exact repeats of content; this catches
// the same text chunked or whitespaced differently, or mirrored in two
// sources.
type Dedupe struct {
	// Similarity is DefaultSimilarity when 0.
	Similarity float64
}

// Process implements rag.PostProcessor.
func (d Dedupe) Process(_ context.Context, _ string, docs []*document.Document) ([]*document.Document, error) {
	th := d.Similarity
	if th == 0 {
		th = DefaultSimilarity
	}
	ids := map[string]bool{}
	var kept []map[string]bool
	out := make([]*document.Document, 0, len(docs))
next:
	for _, doc := range docs {
		if doc.ID != "" && ids[doc.ID] {
			continue
		}
		ws := wordSet(doc.Content)
		for _, k := range kept {
			if jaccard(ws, k) >= th {
				continue next
			}
		}
		ids[doc.ID] = true
		kept = append(kept, ws)
		out = append(out, doc)
	}
	return out, nil
}
