package chroma

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
)

// sourceKey names a source in q_src: its type and name, which cannot
// contain the separator.
func sourceKey(typ, name string) string { return typ + "\x1f" + name }

// form is a term as a chunk's Chroma document holds it, a word without
// spaces that no other term has: a term of letters and digits as it is
// (the analyzer's terms are lowercase), a code pair of two such terms
// joined by "+", anything else "_" and its bytes in hex. Chroma's
// full-text index is trigrams, so the words are kept readable: trigrams of
// a small alphabet would each be in nearly every record, and every
// $contains would read them all.
func form(t string) string {
	a, b, pair := strings.Cut(t, " ")
	if plain(a) && (!pair || plain(b)) {
		if pair {
			return a + "+" + b
		}
		return a
	}
	return "_" + hex.EncodeToString([]byte(t))
}

// plain reports whether s is letters and digits only.
func plain(s string) bool {
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return false
		}
	}
	return s != ""
}

// pairMark separates a record's terms from its code pairs; no term's form
// is "|".
const pairMark = "|"

// termText is a chunk's Chroma document: its title's and text's terms,
// then pairMark and its code pairs, each as its form, with spaces around
// each so that $contains " form " finds a whole term; nil when it has
// none.
func (c *collection) termText(d *document.Document) *string {
	terms, pairs := c.analyzer.AnalyzeDocument(d.Content, store.Code(d))
	if t := store.Title(d); t != "" {
		terms = append(c.analyzer.Analyze(t), terms...)
	}
	if len(terms)+len(pairs) == 0 {
		return nil
	}
	var sb strings.Builder
	sb.WriteByte(' ')
	for _, t := range terms {
		sb.WriteString(form(t))
		sb.WriteByte(' ')
	}
	if len(pairs) > 0 {
		sb.WriteString(pairMark + " ")
		for _, t := range pairs {
			sb.WriteString(form(t))
			sb.WriteByte(' ')
		}
	}
	s := sb.String()
	return &s
}

// records is the body of an upsert.
type records struct {
	IDs        []string         `json:"ids"`
	Embeddings [][]float32      `json:"embeddings"`
	Documents  []*string        `json:"documents,omitempty"`
	Metadatas  []map[string]any `json:"metadatas"`
}

func (r *records) add(id string, emb []float32, doc *string, md map[string]any) {
	r.IDs = append(r.IDs, id)
	r.Embeddings = append(r.Embeddings, emb)
	r.Documents = append(r.Documents, doc)
	r.Metadatas = append(r.Metadatas, md)
}

// addSide adds a sidecar record: the one-dimensional embedding every
// sidecar record carries, no document.
func (r *records) addSide(id string, md map[string]any) {
	r.IDs = append(r.IDs, id)
	r.Embeddings = append(r.Embeddings, sideEmbedding)
	r.Metadatas = append(r.Metadatas, md)
}

// part is records [i, j).
func (r *records) part(i, j int) *records {
	p := &records{IDs: r.IDs[i:j], Embeddings: r.Embeddings[i:j], Metadatas: r.Metadatas[i:j]}
	if r.Documents != nil {
		p.Documents = r.Documents[i:j]
	}
	return p
}

// addChunk adds a document's record.
func (c *collection) addChunk(r *records, d *document.Document) error {
	doc, err := store.EncodeDocument(d)
	if err != nil {
		return err
	}
	md := map[string]any{
		kDoc:   string(doc),
		kSType: d.SourceType,
		kSName: d.SourceName,
		kSrc:   sourceKey(d.SourceType, d.SourceName),
		kVec:   true,
	}
	var has []string
	if c.cfg.Schema != nil {
		for _, f := range c.cfg.Schema.Fields {
			v, ok := d.Metadata[f.Name]
			if !f.Filterable || !ok || v == nil {
				continue
			}
			sv, err := filter.Stored(f.Type, v)
			if err != nil {
				return fmt.Errorf("document %s: field %s: %w", d.ID, f.Name, err)
			}
			if l, ok := sv.([]string); !ok || len(l) > 0 { // Chroma keeps no empty list
				md[metaKey(f.Name)] = sv
			}
			has = append(has, f.Name)
		}
	}
	if len(has) > 0 {
		md[kHas] = has
	}
	if len(d.Embedding) == 0 {
		// store.Collection refuses such a document before it comes here.
		return fmt.Errorf("chroma: document %s has no embedding", d.ID)
	}
	// Chroma gives back the vectors of a cosine index as it normalised
	// them, a last bit off ([1, 1] reads [0.99999994, 0.99999994]).
	md[kEmb] = store.EncodeVector(d.Embedding)
	r.add(d.ID, d.Embedding, c.termText(d), md)
	return nil
}

// upsert writes records, in parts of the server's max_batch_size.
func (b *Backend) upsert(ctx context.Context, u string, r *records) error {
	for i := 0; i < len(r.IDs); i += b.maxBatch {
		if err := b.callJSON(ctx, http.MethodPost, u, r.part(i, min(i+b.maxBatch, len(r.IDs))), nil); err != nil {
			return err
		}
	}
	return nil
}

// Upsert implements store.Writer: every document is encoded and checked
// before the first request, and a batch within the server's
// max_batch_size is one request, which Chroma applies whole.
func (b *Backend) Upsert(ctx context.Context, coll string, docs []*document.Document) error {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return err
	}
	var r records
	for _, d := range docs {
		if err := c.addChunk(&r, d); err != nil {
			return err
		}
	}
	if len(r.IDs) == 0 {
		return nil
	}
	return b.collErr(c, b.upsert(ctx, b.path(c, "/upsert"), &r))
}

// getResult is the answer of a get.
type getResult struct {
	IDs       []string         `json:"ids"`
	Documents []*string        `json:"documents"`
	Metadatas []map[string]any `json:"metadatas"`
}

// get runs one get on a collection's records.
func (b *Backend) get(ctx context.Context, c *collection, body map[string]any) (getResult, error) {
	var res getResult
	err := b.read(ctx, b.path(c, "/get"), body, &res)
	return res, b.collErr(c, err)
}

// allChunks matches every record of a chunk collection, for a delete,
// which must name ids or a where: q_vec is true on each.
var allChunks = whereDoc{kVec: true}

// ids lists the ids of the records matching w (all when nil).
func (b *Backend) ids(ctx context.Context, c *collection, w any) ([]string, error) {
	body := map[string]any{"include": []string{}}
	if w != nil {
		body["where"] = w
	}
	res, err := b.get(ctx, c, body)
	return res.IDs, err
}

// decode makes a record's document, with its embedding when asked for
// and the record has one.
func decode(id string, md map[string]any, vectors bool) (*document.Document, error) {
	raw, _ := md[kDoc].(string)
	d, err := store.DecodeDocument([]byte(raw))
	if err != nil {
		return nil, fmt.Errorf("chroma: record %s: %w", id, err)
	}
	if e, ok := md[kEmb].(string); ok && vectors {
		if d.Embedding, err = store.DecodeVector(e); err != nil {
			return nil, fmt.Errorf("chroma: record %s: %w", id, err)
		}
	}
	return d, nil
}

// fetch reads the records with these ids (those matching w, when not
// nil), by id.
func (b *Backend) fetch(ctx context.Context, c *collection, ids []string, w any, vectors bool) (map[string]*document.Document, error) {
	out := make(map[string]*document.Document, len(ids))
	include := []string{"metadatas"}
	for start := 0; start < len(ids); start += b.maxBatch {
		body := map[string]any{"ids": ids[start:min(start+b.maxBatch, len(ids))], "include": include}
		if w != nil {
			body["where"] = w
		}
		res, err := b.get(ctx, c, body)
		if err != nil {
			return nil, err
		}
		if len(res.Metadatas) != len(res.IDs) {
			return nil, fmt.Errorf("chroma: get answered %d ids and %d metadatas", len(res.IDs), len(res.Metadatas))
		}
		for i, id := range res.IDs {
			d, err := decode(id, res.Metadatas[i], vectors)
			if err != nil {
				return nil, err
			}
			out[id] = d
		}
	}
	return out, nil
}

// Get implements store.Searcher.
func (b *Backend) Get(ctx context.Context, coll string, ids []string) ([]*document.Document, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return nil, err
	}
	byID, err := b.fetch(ctx, c, slices.Compact(slices.Sorted(slices.Values(ids))), nil, true)
	if err != nil {
		return nil, err
	}
	var out []*document.Document
	for _, id := range ids {
		if d := byID[id]; d != nil {
			out = append(out, d)
			delete(byID, id) // an id asked twice is returned once
		}
	}
	return out, nil
}

// Count implements store.Searcher: Chroma's count without a filter, the
// matching ids with one.
func (b *Backend) Count(ctx context.Context, coll string, f filter.Expr) (int, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return 0, err
	}
	w, ok, err := c.visible(f)
	if err != nil || !ok {
		return 0, err
	}
	if w == nil {
		return b.count(ctx, c)
	}
	ids, err := b.ids(ctx, c, w)
	return len(ids), err
}

// count is how many records a collection holds.
func (b *Backend) count(ctx context.Context, c *collection) (int, error) {
	var n int
	err := b.callJSON(ctx, http.MethodGet, b.path(c, "/count"), nil, &n)
	if isServerError(err) {
		err = b.callJSON(ctx, http.MethodGet, b.path(c, "/count"), nil, &n)
	}
	return n, b.collErr(c, err)
}

// deletePage is how many records a delete reads the sources of at once.
const deletePage = 1000

// Delete implements store.Writer: the matching chunks' sources lose their
// states first, so a later sync writes them again, then the chunks go.
func (b *Backend) Delete(ctx context.Context, coll string, f filter.Expr) (int, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return 0, err
	}
	w, ok, err := c.visible(f)
	if err != nil || !ok {
		return 0, err
	}
	if w == nil {
		w = allChunks
	}
	// The sources, a page at a time: Chroma's include cannot pick one
	// metadata key, so each record's whole metadata is read.
	seen := map[string]bool{}
	var srcs []any
	matched := 0
	for offset := 0; ; offset += deletePage {
		res, err := b.get(ctx, c, map[string]any{"where": w, "include": []string{"metadatas"}, "limit": deletePage, "offset": offset})
		if err != nil {
			return 0, err
		}
		matched += len(res.IDs)
		for _, md := range res.Metadatas {
			if s, _ := md[kSrc].(string); !seen[s] {
				seen[s] = true
				srcs = append(srcs, s)
			}
		}
		if len(res.IDs) < deletePage {
			break
		}
	}
	if err := b.deleteStates(ctx, c.cfg.Name, srcs); err != nil {
		return 0, err
	}
	if matched == 0 {
		return 0, nil
	}
	var del struct {
		Deleted *int `json:"deleted"`
	}
	if err := b.callJSON(ctx, http.MethodPost, b.path(c, "/delete"), map[string]any{"where": w}, &del); err != nil {
		return 0, b.collErr(c, err)
	}
	if del.Deleted != nil {
		return *del.Deleted, nil
	}
	return matched, nil
}

// Scan implements store.Scanner. Chroma lists records in its own order,
// so each page lists every id to find the next ones in id order: a scan
// of n documents reads n ids per page.
func (b *Backend) Scan(ctx context.Context, coll string, after string, limit int) ([]*document.Document, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return nil, err
	}
	all, err := b.ids(ctx, c, nil)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, id := range all {
		if id > after {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	if len(ids) > limit {
		ids = ids[:limit]
	}
	return b.Get(ctx, coll, ids)
}
