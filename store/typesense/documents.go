package typesense

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
)

// sourceKey names a source in q_src: its type and name, which cannot
// contain the separator, hex-encoded.
func sourceKey(typ, name string) string { return hexs(typ + "\x1f" + name) }

// chunkDoc makes a document's Typesense document.
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
	if len(d.Embedding) > 0 {
		out[fVector] = d.Embedding
	}
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
// terms and code pairs, each hex-encoded.
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
		b.WriteString(hexs(t))
	}
	return b.String()
}

// queryTerms is a query's distinct terms, hex-encoded.
func (c *collection) queryTerms(query string) []string {
	terms, pairs := c.analyzer.AnalyzeQuery(query)
	seen := map[string]bool{}
	var out []string
	for _, t := range append(terms, pairs...) {
		if !seen[t] {
			seen[t] = true
			out = append(out, hexs(t))
		}
	}
	return out
}

// keywordQuery is the q of a keyword search: the query's terms that some
// document under the filter holds, rarest first. Typesense requires every
// term, then drops terms from the right while too few documents match,
// so the commonest go first and a term no document holds — which would
// match nothing until it alone was left — not at all. One multi_search
// counts each term's documents. Empty when no term is held.
func (b *Backend) keywordQuery(ctx context.Context, c *collection, query, fb string) (string, error) {
	terms := c.queryTerms(query)
	if len(terms) <= 1 {
		return strings.Join(terms, " "), nil
	}
	ss := make([]search, len(terms))
	for i, t := range terms {
		ss[i] = search{"q": t, "query_by": fTerms, "prefix": "false", "num_typos": "0", "drop_tokens_threshold": 0,
			"filter_by": fb, "per_page": 1, "include_fields": "id"}
	}
	res, err := b.multiSearch(ctx, c, ss)
	if err != nil {
		return "", err
	}
	type held struct {
		term string
		df   int
	}
	var hs []held
	for i, r := range res {
		if r.Found > 0 {
			hs = append(hs, held{terms[i], r.Found})
		}
	}
	slices.SortStableFunc(hs, func(x, y held) int { return x.df - y.df })
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.term
	}
	return strings.Join(out, " "), nil
}

// record is a Typesense document as Quarry reads it back.
type record struct {
	ID     string    `json:"id"`
	Kind   string    `json:"q_kind"`
	QID    string    `json:"q_id"`
	Doc    string    `json:"q_doc"`
	Src    string    `json:"q_src"`
	State  string    `json:"q_state"`
	Key    string    `json:"q_key"`
	Value  string    `json:"q_value"`
	Vector []float32 `json:"embedding"`
}

func (r *record) document() (*document.Document, error) {
	d, err := store.DecodeDocument([]byte(r.Doc))
	if err != nil {
		return nil, fmt.Errorf("typesense: document %s: %w", r.ID, err)
	}
	d.Embedding = r.Vector
	return d, nil
}

// importDocs upserts documents in one import request and fails if any
// one failed.
func (b *Backend) importDocs(ctx context.Context, c *collection, docs []map[string]any) error {
	if len(docs) == 0 {
		return nil
	}
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	for _, d := range docs {
		if err := enc.Encode(d); err != nil {
			return fmt.Errorf("typesense: encode document: %w", err)
		}
	}
	var answer []byte
	err := b.call(ctx, http.MethodPost, colPath(c.name, "/documents/import"), url.Values{"action": {"upsert"}},
		bytes.TrimRight(body.Bytes(), "\n"), "application/octet-stream", &answer)
	if err != nil {
		return b.collErr(c, err)
	}
	type outcome struct {
		Success bool   `json:"success"`
		Error   string `json:"error"`
	}
	n := 0
	err = eachLine(answer, "import answer", func(r outcome) error {
		if !r.Success {
			return fmt.Errorf("typesense: import into %s: document %d: %s", c.name, n, r.Error)
		}
		n++
		return nil
	})
	if err != nil {
		return err
	}
	if n != len(docs) {
		return fmt.Errorf("typesense: import into %s answered for %d of %d documents", c.name, n, len(docs))
	}
	return nil
}

// Upsert implements store.Writer: every document is encoded and checked
// before one import request.
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
	return b.importDocs(ctx, c, out)
}

// deleteWhere deletes the documents matching filter_by and returns how
// many.
func (b *Backend) deleteWhere(ctx context.Context, c *collection, fb string) (int, error) {
	var res struct {
		NumDeleted int `json:"num_deleted"`
	}
	err := b.callJSON(ctx, http.MethodDelete, colPath(c.name, "/documents"), url.Values{"filter_by": {fb}, "batch_size": {"500"}}, nil, &res)
	return res.NumDeleted, b.collErr(c, err)
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
	err = b.export(ctx, c, fb, []string{fSrc}, func(r record) error {
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
		if _, err := b.deleteWhere(ctx, c, and(fKind+":="+kindSource, fSrc+":=["+strings.Join(part, ",")+"]")); err != nil {
			return 0, err
		}
	}
	return b.deleteWhere(ctx, c, fb)
}

// export reads every document filter_by matches, with the fields named.
func (b *Backend) export(ctx context.Context, c *collection, fb string, fields []string, fn func(record) error) error {
	q := url.Values{"filter_by": {fb}}
	if len(fields) > 0 {
		q.Set("include_fields", strings.Join(append([]string{"id"}, fields...), ","))
	}
	var data []byte
	if err := b.call(ctx, http.MethodGet, colPath(c.name, "/documents/export"), q, nil, "", &data); err != nil {
		return b.collErr(c, err)
	}
	return eachLine(data, "export of "+c.name, fn)
}

// eachLine decodes JSON lines (an import's answer, an export) one value
// at a time; blank lines are skipped.
func eachLine[T any](data []byte, what string, fn func(T) error) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, maxResponse)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(line, &v); err != nil {
			return fmt.Errorf("typesense: %s: %w", what, err)
		}
		if err := fn(v); err != nil {
			return err
		}
	}
	return sc.Err()
}

// search is one search of a multi_search request.
type search map[string]any

// hit is one search result.
type hit struct {
	Document       record   `json:"document"`
	TextMatch      *int64   `json:"text_match"`
	VectorDistance *float64 `json:"vector_distance"`
	Hybrid         *struct {
		RankFusionScore float64 `json:"rank_fusion_score"`
	} `json:"hybrid_search_info"`
}

type result struct {
	Found int    `json:"found"`
	Hits  []hit  `json:"hits"`
	Code  int    `json:"code"`
	Error string `json:"error"`
}

// multiSearch runs searches in one request.
func (b *Backend) multiSearch(ctx context.Context, c *collection, searches []search) ([]result, error) {
	for _, s := range searches {
		s["collection"] = c.name
	}
	var res struct {
		Results []result `json:"results"`
	}
	if err := b.callJSON(ctx, http.MethodPost, "/multi_search", nil, map[string]any{"searches": searches}, &res); err != nil {
		return nil, b.collErr(c, err)
	}
	if len(res.Results) != len(searches) {
		return nil, fmt.Errorf("typesense: multi_search answered %d of %d searches", len(res.Results), len(searches))
	}
	for _, r := range res.Results {
		if r.Code/100 > 2 || r.Error != "" {
			return nil, b.collErr(c, &apiError{Status: r.Code, Msg: r.Error})
		}
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
	res, err := b.multiSearch(ctx, c, []search{{"q": "*", "filter_by": fb, "per_page": 1, "include_fields": "id"}})
	if err != nil {
		return 0, err
	}
	return res[0].Found, nil
}

// docFields are the fields a read of documents asks for.
func docFields(vectors bool) string {
	if vectors {
		return "id," + fDoc + "," + fVector
	}
	return "id," + fDoc
}

// Get implements store.Searcher: an export by ids, 250 at a time.
func (b *Backend) Get(ctx context.Context, coll string, ids []string) ([]*document.Document, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*document.Document, len(ids))
	for start := 0; start < len(ids); start += 250 {
		part := ids[start:min(start+250, len(ids))]
		tids := make([]string, len(part))
		for i, id := range part {
			tids[i] = docID(kindChunk, id)
		}
		err := b.export(ctx, c, "id:["+strings.Join(tids, ",")+"]", []string{fKind, fDoc, fVector}, func(r record) error {
			if r.Kind != kindChunk {
				return nil
			}
			d, err := r.document()
			if err != nil {
				return err
			}
			byID[d.ID] = d
			return nil
		})
		if err != nil {
			return nil, err
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
// by Typesense's internal order.
const tieSlack = 8

// perPage is the most hits one page of a search holds.
const perPage = 250

// SearchVector implements store.Searcher.
func (b *Backend) SearchVector(ctx context.Context, coll string, vec []float32, f filter.Expr, k int) ([]*document.Document, error) {
	return b.SearchRequest(ctx, coll, store.SearchRequest{Mode: store.ModeVector, Embedding: vec, Filter: f, TopK: k})
}

// SearchKeyword implements store.Searcher.
func (b *Backend) SearchKeyword(ctx context.Context, coll string, query string, f filter.Expr, k int) ([]*document.Document, error) {
	return b.SearchRequest(ctx, coll, store.SearchRequest{Mode: store.ModeKeyword, Query: query, Filter: f, TopK: k})
}

// vectorQuery is a vector_query expression; extra holds more of its
// parameters (", alpha:0.5").
func vectorQuery(v []float32, k int, extra string) string {
	var sb strings.Builder
	sb.WriteString(fVector + ":([")
	for i, x := range v {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.FormatFloat(float64(x), 'g', -1, 32))
	}
	sb.WriteString("], k:" + strconv.Itoa(k) + extra + ")")
	return sb.String()
}

// branch is the searches of one ranked branch (pages of perPage) under
// the filter_by fb, nil when it can find nothing; q is a keyword branch's
// keywordQuery.
func (c *collection) branch(req store.SearchRequest, k int, fb, q string) []search {
	want := min(k+tieSlack, store.MaxTopK+tieSlack)
	base := search{"filter_by": fb, "include_fields": docFields(req.Vectors)}
	if req.Mode == store.ModeKeyword {
		if q == "" {
			return nil
		}
		// Every term must match, then terms are dropped from the right
		// until enough documents do: a term never matches by a typo or
		// as a prefix of another.
		base["q"], base["query_by"], base["prefix"], base["num_typos"] = q, fTerms, "false", "0"
		base["drop_tokens_threshold"] = want
	} else {
		base["q"], base["vector_query"] = "*", vectorQuery(req.Embedding, want, "")
	}
	var out []search
	size := min(want, perPage) // one size for every page: it fixes where each starts
	for page := 1; (page-1)*size < want; page++ {
		s := search{"page": page, "per_page": size}
		for key, v := range base {
			s[key] = v
		}
		out = append(out, s)
	}
	return out
}

// ranked turns hits into documents in the stores' order, cut at k.
func ranked(hits []hit, keyword bool, k int) ([]*document.Document, error) {
	out := make([]*document.Document, 0, len(hits))
	seen := map[string]bool{}
	for i := range hits {
		h := &hits[i]
		if seen[h.Document.ID] {
			continue
		}
		seen[h.Document.ID] = true
		d, err := h.Document.document()
		if err != nil {
			return nil, err
		}
		switch {
		case keyword && h.TextMatch != nil:
			d.SetScore(float64(*h.TextMatch))
		case h.VectorDistance != nil:
			d.SetScore(1 - *h.VectorDistance) // cosine distance
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
	ss := c.branch(req, req.TopK, fb, q)
	if ss == nil {
		return nil, nil
	}
	res, err := b.multiSearch(ctx, c, ss)
	if err != nil {
		return nil, err
	}
	var hits []hit
	for _, r := range res {
		hits = append(hits, r.Hits...)
	}
	return ranked(hits, req.Mode == store.ModeKeyword, req.TopK)
}

// SearchHybrid implements store.HybridSearcher: both branches, 2·k each
// with the filter inside, in one multi_search request, fused as every
// store fuses them. With hybrid=typesense, an unweighted RRF is fused by
// Typesense instead: one search with q and vector_query, whose rank
// fusion scores (1−alpha)/rank_text + alpha/rank_vector with ranks from 1,
// alpha 0.5 here; scores are then Typesense's.
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
	vs := c.branch(vreq, 2*req.TopK, fb, "")
	q, err := b.keywordQuery(ctx, c, req.Query, fb)
	if err != nil {
		return nil, err
	}
	ks := c.branch(kreq, 2*req.TopK, fb, q)
	if b.native && ks != nil && req.PlainRRF() {
		return b.nativeHybrid(ctx, c, req, vs[0], ks[0])
	}
	res, err := b.multiSearch(ctx, c, append(slices.Clone(vs), ks...))
	if err != nil {
		return nil, err
	}
	var vh, kh []hit
	for i, r := range res {
		if i < len(vs) {
			vh = append(vh, r.Hits...)
		} else {
			kh = append(kh, r.Hits...)
		}
	}
	vec, err := ranked(vh, false, 2*req.TopK)
	if err != nil {
		return nil, err
	}
	kw, err := ranked(kh, true, 2*req.TopK)
	if err != nil {
		return nil, err
	}
	return store.Fuse(vec, kw, req.Fusion, req.Explain), nil
}

func (b *Backend) nativeHybrid(ctx context.Context, c *collection, req store.SearchRequest, vs, ks search) ([]store.Hit, error) {
	want := min(req.TopK+tieSlack, perPage)
	s := search{"q": ks["q"], "query_by": fTerms, "prefix": "false", "num_typos": "0", "drop_tokens_threshold": want,
		"vector_query": vectorQuery(req.Embedding, 2*req.TopK, ", alpha:0.5"), "filter_by": vs["filter_by"],
		"include_fields": docFields(req.Vectors), "per_page": want}
	res, err := b.multiSearch(ctx, c, []search{s})
	if err != nil {
		return nil, err
	}
	docs := make([]*document.Document, 0, len(res[0].Hits))
	for i := range res[0].Hits {
		h := &res[0].Hits[i]
		d, err := h.Document.document()
		if err != nil {
			return nil, err
		}
		if h.Hybrid != nil {
			d.SetScore(h.Hybrid.RankFusionScore)
		}
		docs = append(docs, d)
	}
	store.SortDocuments(docs)
	if len(docs) > req.TopK {
		docs = docs[:req.TopK]
	}
	hits := make([]store.Hit, len(docs))
	for i, d := range docs {
		hits[i] = store.Hit{Doc: d}
	}
	return hits, nil
}

// Scan implements store.Scanner. Typesense exports in its own order, so
// each page lists every document id to find the next ones in id order: a
// scan of n documents reads n ids per page.
func (b *Backend) Scan(ctx context.Context, coll string, after string, limit int) ([]*document.Document, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return nil, err
	}
	var ids []string
	err = b.export(ctx, c, fKind+":="+kindChunk, []string{fID}, func(r record) error {
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
