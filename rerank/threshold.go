package rerank

import (
	"context"
	"math"
	"slices"

	"github.com/quarry-rag/quarry/document"
)

// Defaults of the thresholds (SEMANTICS §5).
const (
	DefaultThreshold  = 0.5
	DefaultMultiplier = 0.6
)

// FixedThreshold keeps the documents scored at least Min, in order.
// Unscored documents never pass. A threshold is a filter, not a sort. The
// zero value keeps every score ≥ 0; write FixedThreshold{Min:
// DefaultThreshold} for the documented default.
type FixedThreshold struct {
	Min float64
}

// Process implements rag.PostProcessor.
func (t FixedThreshold) Process(_ context.Context, _ string, docs []*document.Document) ([]*document.Document, error) {
	out := make([]*document.Document, 0, len(docs))
	for _, d := range docs {
		if d.Scored && d.Score >= t.Min {
			out = append(out, d)
		}
	}
	return out, nil
}

// AdaptiveThreshold keeps the documents whose score stands out from the
// rest, robustly: with the median and the median absolute deviation (MAD)
// of the scores, it keeps score ≥ max(0, median − Multiplier·MAD), in
// order. Unscored documents are dropped; fewer than two scored documents
// come back as they are; scores that hardly differ (MAD ≤ 1e-4) all pass.
// The zero value has multiplier 0 (keeps the upper half); write
// AdaptiveThreshold{Multiplier: DefaultMultiplier} for the default.
type AdaptiveThreshold struct {
	Multiplier float64
}

// Process implements rag.PostProcessor.
func (t AdaptiveThreshold) Process(_ context.Context, _ string, docs []*document.Document) ([]*document.Document, error) {
	scored := make([]*document.Document, 0, len(docs))
	for _, d := range docs {
		if d.Scored {
			scored = append(scored, d)
		}
	}
	if len(scored) < 2 {
		return scored, nil
	}
	scores := make([]float64, len(scored))
	for i, d := range scored {
		scores[i] = d.Score
	}
	med := median(scores)
	dev := make([]float64, len(scores))
	for i, s := range scores {
		dev[i] = math.Abs(s - med)
	}
	mad := median(dev)
	if mad <= 1e-4 {
		return scored, nil
	}
	cut := math.Max(0, med-t.Multiplier*mad)
	out := scored[:0:0]
	for _, d := range scored {
		if d.Score >= cut {
			out = append(out, d)
		}
	}
	return out, nil
}

// median is the middle value, or the mean of the two middle values.
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
