package rerank

import (
	"context"
	"errors"
	"fmt"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/retrieve"
)

// Neighbours expands each passage with the chunks next to it in its source
// (Window before and after), placed around it in source order, so an
// answer sees a passage's surrounding sentences. Chunks already present
// are not repeated. The neighbours are fetched under the retrieval
// request's scopes and filter, which the pipeline puts in the context
// (retrieve.WithRequest); without it Neighbours refuses to run rather than
// fetch unscoped. Neighbours inherit the passage's score.
type Neighbours struct {
	// Finder looks the chunks up, usually the pipeline's
	// *retrieve.Collection; required.
	Finder retrieve.NeighbourFinder
	// Window is how many chunks on each side: 1 when 0.
	Window int
	// Max caps the passages after expansion; no cap when 0.
	Max int
}

// Process implements rag.PostProcessor.
func (n Neighbours) Process(ctx context.Context, _ string, docs []*document.Document) ([]*document.Document, error) {
	if n.Finder == nil {
		return nil, errors.New("neighbour expansion: no finder")
	}
	req, ok := retrieve.RequestFrom(ctx)
	if !ok {
		return nil, errors.New("neighbour expansion: the context carries no retrieval request, so its scopes are unknown")
	}
	w := n.Window
	if w <= 0 {
		w = 1
	}
	have := map[string]bool{}
	for _, d := range docs {
		have[key(d)] = true
	}
	out := make([]*document.Document, 0, len(docs))
	for _, d := range docs {
		nb, err := n.Finder.Neighbours(ctx, req, d, w)
		if err != nil {
			return nil, fmt.Errorf("neighbour expansion: %w", err)
		}
		var before, after []*document.Document
		for _, x := range nb {
			if have[key(x)] {
				continue
			}
			have[key(x)] = true
			c := *x
			if d.Scored {
				c.SetScore(d.Score)
			}
			if x.Provenance.ChunkIndex < d.Provenance.ChunkIndex {
				before = append(before, &c)
			} else {
				after = append(after, &c)
			}
		}
		out = append(out, before...)
		out = append(out, d)
		out = append(out, after...)
	}
	if n.Max > 0 && len(out) > n.Max {
		out = out[:n.Max]
	}
	return out, nil
}

func key(d *document.Document) string {
	if d.ID != "" {
		return d.ID
	}
	return "\x00" + d.Content
}
