package meilisearch

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
)

// sourceKey names a source in q_src: its type and name, which cannot
// contain the separator, hex-encoded.
func sourceKey(typ, name string) string { return hexs(typ + "\x1f" + name) }

// spell writes a term in the letters a–p, two per byte: one plain word
// for Meilisearch's tokenizer, which would split a term at punctuation or
// between scripts, and fold its case.
func spell(sb *strings.Builder, t string) {
	for i := 0; i < len(t); i++ {
		sb.WriteByte('a' + t[i]>>4)
		sb.WriteByte('a' + t[i]&15)
	}
}

func spelt(t string) string {
	var sb strings.Builder
	spell(&sb, t)
	return sb.String()
}

// chunkDoc makes a document's Meilisearch document.
func (c *collection) chunkDoc(d *document.Document) (map[string]any, error) {
	doc, err := store.EncodeDocument(d)
	if err != nil {
		return nil, err
	}
	out := map[string]any{
		"id":   docID(kindChunk, d.ID),
		fKind:  kindChunk,
		fID:    d.ID,
		fDoc:   string(doc),
		fSType: hexs(d.SourceType),
		fSName: hexs(d.SourceName),
		fSrc:   sourceKey(d.SourceType, d.SourceName),
	}
	if terms := c.terms(d); terms != "" {
		out[fTerms] = terms
	}
	var vec any // null: no embedding for this embedder
	if len(d.Embedding) > 0 {
		vec = d.Embedding
	}
	out["_vectors"] = map[string]any{embedder: vec}
	var has []string
	if c.cfg.Schema != nil {
		for _, f := range c.cfg.Schema.Fields {
			v, ok := d.Metadata[f.Name]
			if !f.Filterable || !ok || v == nil {
				continue
			}
			sv, err := storedValue(f.Type, v)
			if err != nil {
				return nil, fmt.Errorf("document %s: field %s: %w", d.ID, f.Name, err)
			}
			out[metaField(f.Name)] = sv
			has = append(has, hexs(f.Name))
		}
	}
	if len(has) > 0 {
		out[fHas] = has
	}
	return out, nil
}

// storedValue is a metadata value as its typed field holds it, its
// strings hex-encoded.
func storedValue(t document.FieldType, v any) (any, error) {
	sv, err := filter.Stored(t, v)
	switch x := sv.(type) {
	case string:
		return hexs(x), err
	case []string:
		out := make([]string, len(x))
		for i, s := range x {
			out[i] = hexs(s)
		}
		return out, err
	}
	return sv, err
}

// terms is the text keyword search matches: the title's and the text's
// terms and code pairs, each spelt.
func (c *collection) terms(d *document.Document) string {
	terms, pairs := c.analyzer.AnalyzeDocument(d.Content, store.Code(d))
	if t := store.Title(d); t != "" {
		terms = append(c.analyzer.Analyze(t), terms...)
	}
	var b strings.Builder
	for _, t := range append(terms, pairs...) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		spell(&b, t)
	}
	return b.String()
}

// maxWords is how many words of a query Meilisearch considers.
const maxWords = 10

// keywordQuery is the q of a keyword search: the query's terms that some
// document under the filter holds, rarest first, at most maxWords of
// them. Meilisearch requires every word, then drops words from the end
// while too few documents match, so the commonest go last; a term no
// document holds would match nothing until it alone was left. One
// multi-search counts each term's documents. Empty when no term is held.
func (b *Backend) keywordQuery(ctx context.Context, c *collection, query, fb string) (string, error) {
	terms, pairs := c.analyzer.AnalyzeQuery(query)
	seen := map[string]bool{}
	var words []string
	for _, t := range append(terms, pairs...) {
		if w := spelt(t); !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	if len(words) == 0 {
		return "", nil
	}
	qs := make([]search, len(words))
	for i, w := range words {
		qs[i] = search{"q": w, "filter": fb, "page": 1, "hitsPerPage": 0, "matchingStrategy": "all"}
	}
	res, err := b.multiSearch(ctx, c, qs)
	if err != nil {
		return "", err
	}
	type held struct {
		word string
		df   int
	}
	var hs []held
	for i, r := range res {
		if r.TotalHits > 0 {
			hs = append(hs, held{words[i], r.TotalHits})
		}
	}
	slices.SortStableFunc(hs, func(x, y held) int { return cmp.Compare(x.df, y.df) })
	out := make([]string, 0, min(len(hs), maxWords))
	for _, h := range hs[:min(len(hs), maxWords)] {
		out = append(out, h.word)
	}
	return strings.Join(out, " "), nil
}

// record is a Meilisearch document as Quarry reads it back.
type record struct {
	ID      string                     `json:"id"`
	Kind    string                     `json:"q_kind"`
	QID     string                     `json:"q_id"`
	Doc     string                     `json:"q_doc"`
	Src     string                     `json:"q_src"`
	State   string                     `json:"q_state"`
	Key     string                     `json:"q_key"`
	Value   string                     `json:"q_value"`
	Vectors map[string]json.RawMessage `json:"_vectors"`
	Score   *float64                   `json:"_rankingScore"`
}

// vector is the record's embedding, from _vectors as retrieveVectors
// gives it ({"embeddings": [[…]], "regenerate": false}) or as written.
func (r *record) vector() ([]float32, error) {
	raw, ok := r.Vectors[embedder]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	var full struct {
		Embeddings json.RawMessage `json:"embeddings"`
	}
	if json.Unmarshal(raw, &full) == nil && full.Embeddings != nil {
		raw = full.Embeddings
	}
	var many [][]float32
	if err := json.Unmarshal(raw, &many); err == nil {
		if len(many) == 0 {
			return nil, nil
		}
		return many[0], nil
	}
	var one []float32
	if err := json.Unmarshal(raw, &one); err != nil {
		return nil, fmt.Errorf("meilisearch: document %s: _vectors: %w", r.ID, err)
	}
	return one, nil
}

func (r *record) document(vectors bool) (*document.Document, error) {
	d, err := store.DecodeDocument([]byte(r.Doc))
	if err != nil {
		return nil, fmt.Errorf("meilisearch: document %s: %w", r.ID, err)
	}
	if vectors {
		if d.Embedding, err = r.vector(); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// addDocs adds or replaces documents in one task.
func (b *Backend) addDocs(ctx context.Context, c *collection, docs []map[string]any) error {
	if len(docs) == 0 {
		return nil
	}
	_, err := b.write(ctx, http.MethodPost, idxPath(c.uid, "/documents"), docs)
	return b.collErr(c, err)
}

// Upsert implements store.Writer: every document is encoded and checked
// before one document addition, which Meilisearch applies whole.
func (b *Backend) Upsert(ctx context.Context, coll string, docs []*document.Document) error {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return err
	}
	out := make([]map[string]any, len(docs))
	for i, d := range docs {
		if out[i], err = c.chunkDoc(d); err != nil {
			return err
		}
	}
	return b.addDocs(ctx, c, out)
}

// deleteWhere deletes the documents matching a filter and returns how
// many.
func (b *Backend) deleteWhere(ctx context.Context, c *collection, fb string) (int, error) {
	t, err := b.write(ctx, http.MethodPost, idxPath(c.uid, "/documents/delete"), map[string]any{"filter": fb})
	if err != nil {
		return 0, b.collErr(c, err)
	}
	var d struct {
		Deleted int `json:"deletedDocuments"`
	}
	_ = json.Unmarshal(t.Details, &d)
	return d.Deleted, nil
}

// inList is a filter that a field holds one of these strings.
func inList(field string, vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = `"` + v + `"`
	}
	return field + " IN [" + strings.Join(q, ", ") + "]"
}

// Delete implements store.Writer: the matching chunks' sources lose their
// states first, so a later sync writes them again, then the chunks go.
func (b *Backend) Delete(ctx context.Context, coll string, f filter.Expr) (int, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return 0, err
	}
	fb, ok, err := c.visible(kindChunk, f)
	if err != nil || !ok {
		return 0, err
	}
	seen := map[string]bool{}
	var srcs []string
	err = b.fetchAll(ctx, c, fb, []string{fSrc}, func(r record) error {
		if r.Src != "" && !seen[r.Src] {
			seen[r.Src] = true
			srcs = append(srcs, r.Src)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for start := 0; start < len(srcs); start += 500 {
		part := srcs[start:min(start+500, len(srcs))]
		if _, err := b.deleteWhere(ctx, c, and(kindIs(kindSource), inList(fSrc, part))); err != nil {
			return 0, err
		}
	}
	return b.deleteWhere(ctx, c, fb)
}

// fetchPage is how many documents one fetch reads.
const fetchPage = 1000

// fetchAll reads every document a filter matches, with the fields named.
func (b *Backend) fetchAll(ctx context.Context, c *collection, fb string, fields []string, fn func(record) error) error {
	for offset := 0; ; offset += fetchPage {
		var res struct {
			Results []record `json:"results"`
			Total   int      `json:"total"`
		}
		body := map[string]any{"filter": fb, "fields": append([]string{"id"}, fields...), "offset": offset, "limit": fetchPage}
		if err := b.call(ctx, http.MethodPost, idxPath(c.uid, "/documents/fetch"), body, &res); err != nil {
			return b.collErr(c, err)
		}
		for _, r := range res.Results {
			if err := fn(r); err != nil {
				return err
			}
		}
		if len(res.Results) < fetchPage || offset+fetchPage >= res.Total {
			return nil
		}
	}
}

// search is one query of a multi-search.
type search map[string]any

// result is one query's answer.
type result struct {
	Hits      []record `json:"hits"`
	TotalHits int      `json:"totalHits"`
}

// multiSearch runs queries on the collection's index in one request.
func (b *Backend) multiSearch(ctx context.Context, c *collection, qs []search) ([]result, error) {
	for _, q := range qs {
		q["indexUid"] = c.uid
	}
	var res struct {
		Results []result `json:"results"`
	}
	if err := b.call(ctx, http.MethodPost, "/multi-search", map[string]any{"queries": qs}, &res); err != nil {
		return nil, b.collErr(c, err)
	}
	if len(res.Results) != len(qs) {
		return nil, fmt.Errorf("meilisearch: multi-search answered %d of %d queries", len(res.Results), len(qs))
	}
	return res.Results, nil
}

// Count implements store.Searcher.
func (b *Backend) Count(ctx context.Context, coll string, f filter.Expr) (int, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return 0, err
	}
	fb, ok, err := c.visible(kindChunk, f)
	if err != nil || !ok {
		return 0, err
	}
	var res struct {
		Total int `json:"total"`
	}
	err = b.call(ctx, http.MethodPost, idxPath(c.uid, "/documents/fetch"), map[string]any{"filter": fb, "limit": 0, "fields": []string{"id"}}, &res)
	return res.Total, b.collErr(c, err)
}

// Get implements store.Searcher: a fetch by ids, 1,000 at a time.
func (b *Backend) Get(ctx context.Context, coll string, ids []string) ([]*document.Document, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*document.Document, len(ids))
	for start := 0; start < len(ids); start += fetchPage {
		part := ids[start:min(start+fetchPage, len(ids))]
		mids := make([]string, len(part))
		for i, id := range part {
			mids[i] = docID(kindChunk, id)
		}
		var res struct {
			Results []record `json:"results"`
		}
		body := map[string]any{"ids": mids, "fields": []string{"id", fKind, fDoc}, "retrieveVectors": true, "limit": len(mids)}
		if err := b.call(ctx, http.MethodPost, idxPath(c.uid, "/documents/fetch"), body, &res); err != nil {
			return nil, b.collErr(c, err)
		}
		for _, r := range res.Results {
			if r.Kind != kindChunk {
				continue
			}
			d, err := r.document(true)
			if err != nil {
				return nil, err
			}
			byID[d.ID] = d
		}
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

// tieSlack is how many results past k a search asks for, so documents
// tied at the k-th score are cut by id, as every store cuts them, and not
// by Meilisearch's internal order.
const tieSlack = 8

// SearchVector implements store.Searcher.
func (b *Backend) SearchVector(ctx context.Context, coll string, vec []float32, f filter.Expr, k int) ([]*document.Document, error) {
	return b.SearchRequest(ctx, coll, store.SearchRequest{Mode: store.ModeVector, Embedding: vec, Filter: f, TopK: k})
}

// SearchKeyword implements store.Searcher.
func (b *Backend) SearchKeyword(ctx context.Context, coll string, query string, f filter.Expr, k int) ([]*document.Document, error) {
	return b.SearchRequest(ctx, coll, store.SearchRequest{Mode: store.ModeKeyword, Query: query, Filter: f, TopK: k})
}

// branch is the query of one ranked branch under the filter fb, nil when
// it can find nothing; q is a keyword branch's keywordQuery.
func branch(req store.SearchRequest, k int, fb, q string) search {
	s := search{"filter": fb, "limit": min(k+tieSlack, maxTotalHits), "attributesToRetrieve": []string{"id", fDoc}, "showRankingScore": true}
	if req.Mode == store.ModeKeyword {
		if q == "" {
			return nil
		}
		s["q"], s["matchingStrategy"] = q, "last"
		if req.Vectors {
			s["retrieveVectors"] = true
		}
		return s
	}
	// The embeddings come back so that Quarry scores by cosine similarity
	// and leaves out documents without one, which a semantic search
	// returns last instead of not at all.
	s["vector"], s["hybrid"], s["retrieveVectors"] = req.Embedding, map[string]any{"embedder": embedder, "semanticRatio": 1.0}, true
	return s
}

// ranked turns hits into documents in the stores' order, cut at k.
func ranked(hits []record, req store.SearchRequest, k int) ([]*document.Document, error) {
	out := make([]*document.Document, 0, len(hits))
	for i := range hits {
		h := &hits[i]
		d, err := h.document(true)
		if err != nil {
			return nil, err
		}
		if req.Mode == store.ModeKeyword {
			if h.Score != nil {
				d.SetScore(*h.Score)
			}
		} else {
			sim, err := document.Cosine(d.Embedding, req.Embedding)
			if err != nil {
				continue // no embedding
			}
			d.SetScore(sim)
		}
		if !req.Vectors {
			d.Embedding = nil
		}
		out = append(out, d)
	}
	store.SortDocuments(out)
	if len(out) > k {
		out = out[:k]
	}
	return out, nil
}

// SearchRequest implements store.RequestSearcher.
func (b *Backend) SearchRequest(ctx context.Context, coll string, req store.SearchRequest) ([]*document.Document, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return nil, err
	}
	fb, ok, err := c.visible(kindChunk, req.Filter)
	if err != nil || !ok {
		return nil, err
	}
	q := ""
	if req.Mode == store.ModeKeyword {
		if q, err = b.keywordQuery(ctx, c, req.Query, fb); err != nil {
			return nil, err
		}
	}
	s := branch(req, req.TopK, fb, q)
	if s == nil {
		return nil, nil
	}
	res, err := b.multiSearch(ctx, c, []search{s})
	if err != nil {
		return nil, err
	}
	return ranked(res[0].Hits, req, req.TopK)
}

// SearchHybrid implements store.HybridSearcher: both branches, 2·k each
// with the filter inside, in one multi-search, fused as every store fuses
// them. With hybrid=meilisearch, a plain RRF request is one search with q
// and vector that Meilisearch merges itself (semanticRatio 0.5); the
// results keep its order and its ranking scores.
func (b *Backend) SearchHybrid(ctx context.Context, coll string, req store.SearchRequest) ([]store.Hit, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return nil, err
	}
	vreq, kreq := req, req
	vreq.Mode, kreq.Mode = store.ModeVector, store.ModeKeyword
	fb, ok, err := c.visible(kindChunk, req.Filter)
	if err != nil || !ok {
		return nil, err
	}
	q, err := b.keywordQuery(ctx, c, req.Query, fb)
	if err != nil {
		return nil, err
	}
	vs, ks := branch(vreq, 2*req.TopK, fb, ""), branch(kreq, 2*req.TopK, fb, q)
	if b.native && ks != nil && req.PlainRRF() {
		return b.nativeHybrid(ctx, c, req, fb, q)
	}
	qs := []search{vs}
	if ks != nil {
		qs = append(qs, ks)
	}
	res, err := b.multiSearch(ctx, c, qs)
	if err != nil {
		return nil, err
	}
	vec, err := ranked(res[0].Hits, vreq, 2*req.TopK)
	if err != nil {
		return nil, err
	}
	var kw []*document.Document
	if ks != nil {
		if kw, err = ranked(res[1].Hits, kreq, 2*req.TopK); err != nil {
			return nil, err
		}
	}
	return store.Fuse(vec, kw, req.Fusion, req.Explain), nil
}

func (b *Backend) nativeHybrid(ctx context.Context, c *collection, req store.SearchRequest, fb, q string) ([]store.Hit, error) {
	s := search{"q": q, "matchingStrategy": "last", "vector": req.Embedding, "hybrid": map[string]any{"embedder": embedder, "semanticRatio": 0.5},
		"filter": fb, "limit": req.TopK, "attributesToRetrieve": []string{"id", fDoc}, "showRankingScore": true}
	if req.Vectors {
		s["retrieveVectors"] = true
	}
	res, err := b.multiSearch(ctx, c, []search{s})
	if err != nil {
		return nil, err
	}
	hits := make([]store.Hit, 0, len(res[0].Hits))
	for i := range res[0].Hits {
		h := &res[0].Hits[i]
		d, err := h.document(req.Vectors)
		if err != nil {
			return nil, err
		}
		if h.Score != nil {
			d.SetScore(*h.Score)
		}
		hits = append(hits, store.Hit{Doc: d})
	}
	return hits, nil
}

// Scan implements store.Scanner. Meilisearch lists documents in its own
// order, so each page lists every document id to find the next ones in id
// order: a scan of n documents reads n ids per page.
func (b *Backend) Scan(ctx context.Context, coll string, after string, limit int) ([]*document.Document, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return nil, err
	}
	var ids []string
	err = b.fetchAll(ctx, c, kindIs(kindChunk), []string{fID}, func(r record) error {
		if r.QID > after {
			ids = append(ids, r.QID)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(ids)
	if len(ids) > limit {
		ids = ids[:limit]
	}
	return b.Get(ctx, coll, ids)
}
