package weaviate

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/store"
)

// object is one Weaviate object as the batch endpoint takes it.
type object struct {
	Class      string         `json:"class"`
	ID         string         `json:"id"`
	Vector     []float32      `json:"vector,omitempty"`
	Properties map[string]any `json:"properties"`
}

// batchSize bounds the objects of one batch request: a few megabytes of
// JSON with 1,536-dimension vectors.
const batchSize = 200

// putObjects creates or replaces objects, failing if any one fails.
func (b *Backend) putObjects(ctx context.Context, objs []object) error {
	for start := 0; start < len(objs); start += batchSize {
		part := objs[start:min(start+batchSize, len(objs))]
		var results []struct {
			ID     string `json:"id"`
			Result struct {
				Errors *struct {
					Error []struct {
						Message string `json:"message"`
					} `json:"error"`
				} `json:"errors"`
			} `json:"result"`
		}
		if err := b.c.do(ctx, http.MethodPost, "/batch/objects", b.consistency(), map[string]any{"objects": part}, &results); err != nil {
			return err
		}
		if len(results) != len(part) {
			return fmt.Errorf("weaviate: batch of %d objects answered for %d", len(part), len(results))
		}
		for _, r := range results {
			if r.Result.Errors != nil && len(r.Result.Errors.Error) > 0 {
				msgs := make([]string, len(r.Result.Errors.Error))
				for i, e := range r.Result.Errors.Error {
					msgs[i] = e.Message
				}
				return fmt.Errorf("weaviate: write object %s: %s", r.ID, strings.Join(msgs, "; "))
			}
		}
	}
	return nil
}

// deleteWhere deletes the objects of a class matching w and returns how
// many it deleted. One request deletes at most the server's query limit,
// so it repeats until nothing matches.
func (b *Backend) deleteWhere(ctx context.Context, class string, w where) (int, error) {
	total := 0
	for {
		var resp struct {
			Results struct {
				Matches    int `json:"matches"`
				Limit      int `json:"limit"`
				Successful int `json:"successful"`
				Failed     int `json:"failed"`
			} `json:"results"`
		}
		body := map[string]any{"match": map[string]any{"class": class, "where": w}, "output": "minimal"}
		if err := b.c.do(ctx, http.MethodDelete, "/batch/objects", b.consistency(), body, &resp); err != nil {
			return total, err
		}
		r := resp.Results
		total += r.Successful
		if r.Failed > 0 {
			return total, fmt.Errorf("weaviate: delete from %s: %d of %d objects failed", class, r.Failed, r.Matches)
		}
		if r.Limit == 0 || r.Matches < r.Limit || r.Successful == 0 {
			return total, nil
		}
	}
}

func (b *Backend) deleteObject(ctx context.Context, class, id string) error {
	err := b.c.do(ctx, http.MethodDelete, "/objects/"+url.PathEscape(class)+"/"+id, b.consistency(), nil, nil)
	if isStatus(err, http.StatusNotFound) {
		return nil
	}
	return err
}

// aggregateCount counts a class's objects matching w.
func (b *Backend) aggregateCount(ctx context.Context, class string, w where) (int, error) {
	arg := ""
	if w != nil {
		s, err := gqlValue(w)
		if err != nil {
			return 0, err
		}
		arg = "(where:" + s + ")"
	}
	var data struct {
		Aggregate map[string][]struct {
			Meta struct {
				Count int `json:"count"`
			} `json:"meta"`
		} `json:"Aggregate"`
	}
	if err := b.c.graphql(ctx, fmt.Sprintf(`{Aggregate{%s%s{meta{count}}}}`, class, arg), &data); err != nil {
		return 0, err
	}
	n := 0
	for _, g := range data.Aggregate[class] {
		n += g.Meta.Count
	}
	return n, nil
}

// sourceKey names a source in q_source: its type and name, which cannot
// contain the separator.
func sourceKey(typ, name string) string { return typ + "\x1f" + name }

// storedDoc is what q_doc holds: the parts of a document that are read
// back but not searched.
type storedDoc struct {
	ID         string              `json:"id"`
	Content    string              `json:"content"`
	SourceType string              `json:"sourceType"`
	SourceName string              `json:"sourceName"`
	Metadata   json.RawMessage     `json:"metadata"`
	Provenance document.Provenance `json:"provenance"`
	Seq        int64               `json:"seq"`
}

// docObject makes a chunk version's object.
func (b *Backend) docObject(c *collection, d *document.Document, t *txn) (object, error) {
	md := []byte("{}")
	if d.Metadata != nil {
		var err error
		if md, err = document.MarshalValue(d.Metadata); err != nil {
			return object{}, fmt.Errorf("document %s: metadata: %w", d.ID, err)
		}
	}
	doc, err := json.Marshal(storedDoc{ID: d.ID, Content: d.Content, SourceType: d.SourceType, SourceName: d.SourceName,
		Metadata: md, Provenance: d.Provenance, Seq: t.rec.Seq})
	if err != nil {
		return object{}, fmt.Errorf("document %s: %w", d.ID, err)
	}
	props := map[string]any{
		"q_chunk":  wrap(d.ID),
		"q_txn":    t.rec.Txn,
		"q_seq":    t.rec.Seq,
		"q_source": wrap(sourceKey(d.SourceType, d.SourceName)),
		"q_stype":  wrap(d.SourceType),
		"q_sname":  wrap(d.SourceName),
		"q_terms":  keywordTerms(c, d),
		"q_doc":    string(doc),
	}
	if c.cfg.Schema != nil {
		for _, f := range c.cfg.Schema.Fields {
			v, ok := d.Metadata[f.Name]
			if !f.Filterable || !ok || v == nil {
				continue
			}
			props[fieldProp(f.Name)] = storedValue(f.Type, v)
		}
	}
	return object{Class: c.class, ID: objectID(c.cfg.Name, d.ID, t.rec.Txn), Vector: d.Embedding, Properties: props}, nil
}

// keywordTerms are the terms BM25 scores a document by: its title's and
// its content's, as the embedded store's index counts them (a title term
// weighs as much as a content term).
func keywordTerms(c *collection, d *document.Document) string {
	terms := c.analyzer.Analyze(d.Content)
	if t := store.Title(d); t != "" {
		terms = append(c.analyzer.Analyze(t), terms...)
	}
	return strings.Join(terms, " ")
}

// storedValue is a validated metadata value as its typed property holds it.
func storedValue(t document.FieldType, v any) any {
	switch t {
	case document.TypeString:
		return wrap(v.(string))
	case document.TypeStringList:
		elems, _ := v.([]any)
		out := make([]any, len(elems))
		for i, e := range elems {
			s, _ := e.(string)
			out[i] = wrap(s)
		}
		return out
	}
	return v
}

// hitFields are the fields a search or read asks for.
func hitFields(vectors bool) string {
	add := "id distance score"
	if vectors {
		add += " vector"
	}
	return "q_doc _additional{" + add + "}"
}

// hit is one object of a GraphQL Get answer.
type hit struct {
	Doc        string `json:"q_doc"`
	Additional struct {
		ID       string    `json:"id"`
		Distance *float64  `json:"distance"`
		Score    string    `json:"score"`
		Vector   []float32 `json:"vector"`
		// ExplainScore is asked for by Weaviate's own hybrid only.
		ExplainScore string `json:"explainScore"`
	} `json:"_additional"`
}

func (h hit) document() (*document.Document, int64, error) {
	var sd storedDoc
	if err := json.Unmarshal([]byte(h.Doc), &sd); err != nil {
		return nil, 0, fmt.Errorf("weaviate: object %s: stored document: %w", h.Additional.ID, err)
	}
	v, err := document.DecodeJSONValue(sd.Metadata)
	if err != nil {
		return nil, 0, fmt.Errorf("weaviate: document %s: metadata: %w", sd.ID, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, 0, fmt.Errorf("weaviate: document %s: stored metadata is not an object", sd.ID)
	}
	d := &document.Document{ID: sd.ID, Content: sd.Content, SourceType: sd.SourceType, SourceName: sd.SourceName,
		Metadata: m, Provenance: sd.Provenance, Embedding: h.Additional.Vector}
	return d, sd.Seq, nil
}

func parseScore(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("weaviate: score %q: %w", s, err)
	}
	return f, nil
}
