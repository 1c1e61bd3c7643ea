package pinecone

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/internal/sparsebm25"
)

// Pinecone's operation limits.
const (
	maxUpsertRecords = 1000
	maxUpsertBytes   = 2 << 20
	maxFetchIDs      = 1000
	maxDeleteIDs     = 1000
	maxTopK          = 10000
	maxSparseValues  = 1000
	maxMetadataBytes = 40 << 10
	// fetchPage is how many records one fetch_by_metadata asks for: its
	// default, whose answer stays under the 4 MB a query may return even
	// with chunks of 40 KB of metadata.
	fetchPage = 100
	// idsPerFetch is how many ids a fetch names, so its URL stays short.
	idsPerFetch = 100
)

// vector is a record as the data plane writes and reads it.
type vector struct {
	ID           string         `json:"id"`
	Values       []float32      `json:"values,omitempty"`
	SparseValues *sparse        `json:"sparseValues,omitempty"`
	Metadata     map[string]any `json:"metadata,omitempty"`
	Score        float64        `json:"score,omitempty"`
}

// sparse is a sparse vector.
type sparse = sparsebm25.Vector

// noTerms is the one dimension of a chunk without terms, which every
// sparse record needs one of; no query asks for it.
var noTerms = sparsebm25.Index("\x00quarry:no-terms")

// docVector is a chunk's sparse vector of BM25 term weights; past
// Pinecone's 1,000 values a record, the heaviest are kept.
func (c *collection) docVector(d *document.Document) *sparse {
	if v := sparsebm25.Doc(c.analyzer, d, c.bm25, maxSparseValues); v != nil {
		return v
	}
	return &sparse{Indices: []uint32{noTerms}, Values: []float32{1}}
}

// sourceKey names a source in q_src: its type and name, which cannot
// contain the separator.
func sourceKey(typ, name string) string { return typ + "\x1f" + name }

// metaKey is the metadata field a filterable schema field is kept in.
func metaKey(name string) string { return "m_" + name }

// chunkRecords makes a chunk's dense and sparse records.
func (c *collection) chunkRecords(d *document.Document) (dense, sp vector, err error) {
	doc, err := store.EncodeDocument(d)
	if err != nil {
		return dense, sp, err
	}
	md := map[string]any{
		kDoc:   string(doc),
		kID:    d.ID,
		kSType: d.SourceType,
		kSName: d.SourceName,
		kSrc:   sourceKey(d.SourceType, d.SourceName),
	}
	if c.cfg.Schema != nil {
		for _, f := range c.cfg.Schema.Fields {
			v, ok := d.Metadata[f.Name]
			if !f.Filterable || !ok || v == nil {
				continue
			}
			sv, err := filter.Stored(f.Type, v)
			if err != nil {
				return dense, sp, fmt.Errorf("document %s: field %s: %w", d.ID, f.Name, err)
			}
			md[metaKey(f.Name)] = sv
		}
	}
	id := recordID("chunk", d.ID)
	sp = vector{ID: id, SparseValues: c.docVector(d), Metadata: md}
	dmd := make(map[string]any, len(md)+1)
	for k, v := range md {
		dmd[k] = v
	}
	dmd[kEmb] = store.EncodeVector(d.Embedding)
	dense = vector{ID: id, Values: d.Embedding, Metadata: dmd}
	if n := metadataSize(dmd); n > maxMetadataBytes {
		return dense, sp, fmt.Errorf("%w: document %s: its metadata takes %d KB; Pinecone holds at most %d KB a record",
			store.ErrInvalidRequest, d.ID, (n+1023)>>10, maxMetadataBytes>>10)
	}
	return dense, sp, nil
}

// metadataSize is the size of metadata as JSON, which is how Pinecone
// measures it.
func metadataSize(md map[string]any) int {
	b, _ := json.Marshal(md)
	return len(b)
}

// decode makes a record's document, with its embedding when asked for
// and the record (a dense one) has it.
func decode(v vector, vectors bool) (*document.Document, error) {
	raw, _ := v.Metadata[kDoc].(string)
	d, err := store.DecodeDocument([]byte(raw))
	if err != nil {
		return nil, fmt.Errorf("pinecone: record %s: %w", v.ID, err)
	}
	if e, ok := v.Metadata[kEmb].(string); ok && vectors {
		if d.Embedding, err = store.DecodeVector(e); err != nil {
			return nil, fmt.Errorf("pinecone: record %s: %w", v.ID, err)
		}
	}
	return d, nil
}

// upsert writes records in parts within Pinecone's limits (1,000 records
// and 2 MB a request); each part is applied whole.
func (b *Backend) upsert(ctx context.Context, host, ns string, vs []vector) error {
	for start := 0; start < len(vs); {
		end, size := start, 0
		for end < len(vs) && end-start < maxUpsertRecords {
			raw, err := json.Marshal(vs[end])
			if err != nil {
				return fmt.Errorf("pinecone: record %s: %w", vs[end].ID, err)
			}
			if end > start && size+len(raw)+1 > maxUpsertBytes-1024 {
				break
			}
			size += len(raw) + 1
			end++
		}
		if err := b.call(ctx, http.MethodPost, host+"/vectors/upsert", map[string]any{"vectors": vs[start:end], "namespace": ns}, nil); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// fetch reads records by id; those missing are not in the map.
func (b *Backend) fetch(ctx context.Context, host, ns string, ids []string) (map[string]vector, error) {
	out := make(map[string]vector, len(ids))
	for start := 0; start < len(ids); start += idsPerFetch {
		q := url.Values{"namespace": {ns}}
		for _, id := range ids[start:min(start+idsPerFetch, len(ids))] {
			q.Add("ids", id)
		}
		var res struct {
			Vectors map[string]vector `json:"vectors"`
		}
		if err := b.call(ctx, http.MethodGet, host+"/vectors/fetch?"+q.Encode(), nil, &res); err != nil {
			return nil, err
		}
		for id, v := range res.Vectors {
			v.ID = id
			out[id] = v
		}
	}
	return out, nil
}

// fetchWhere calls fn with every record a filter matches (every record
// when nil), a page at a time.
func (b *Backend) fetchWhere(ctx context.Context, host, ns string, f any, fn func(vector) error) error {
	token := ""
	for {
		body := map[string]any{"namespace": ns, "limit": fetchPage}
		if f != nil {
			body["filter"] = f
		}
		if token != "" {
			body["paginationToken"] = token
		}
		var res struct {
			Vectors    map[string]vector `json:"vectors"`
			Pagination *struct {
				Next string `json:"next"`
			} `json:"pagination"`
		}
		if err := b.call(ctx, http.MethodPost, host+"/vectors/fetch_by_metadata", body, &res); err != nil {
			if isStatus(err, http.StatusNotFound) {
				return nil // a namespace never written holds nothing
			}
			return err
		}
		ids := make([]string, 0, len(res.Vectors))
		for id := range res.Vectors {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			v := res.Vectors[id]
			v.ID = id
			if err := fn(v); err != nil {
				return err
			}
		}
		if res.Pagination == nil || res.Pagination.Next == "" || len(res.Vectors) == 0 {
			return nil
		}
		token = res.Pagination.Next
	}
}

// deleteIDs deletes records by id, 1,000 a request.
func (b *Backend) deleteIDs(ctx context.Context, host, ns string, ids []string) error {
	for start := 0; start < len(ids); start += maxDeleteIDs {
		body := map[string]any{"ids": ids[start:min(start+maxDeleteIDs, len(ids))], "namespace": ns}
		if err := b.call(ctx, http.MethodPost, host+"/vectors/delete", body, nil); err != nil && !isStatus(err, http.StatusNotFound) {
			return err
		}
	}
	return nil
}

// chunksRecords makes the dense and sparse records of chunks, every one
// checked before anything is sent.
func (c *collection) chunksRecords(docs []*document.Document) (dense, sp []vector, err error) {
	dense, sp = make([]vector, len(docs)), make([]vector, len(docs))
	for i, d := range docs {
		if dense[i], sp[i], err = c.chunkRecords(d); err != nil {
			return nil, nil, err
		}
	}
	return dense, sp, nil
}

// writeChunks writes chunks' records to the sparse index, then the dense
// one.
func (b *Backend) writeChunks(ctx context.Context, c *collection, dense, sp []vector) error {
	defer b.wrote(c.cfg.Name)
	if err := b.upsert(ctx, c.sparse, c.ns(), sp); err != nil {
		return err
	}
	return b.upsert(ctx, c.dense, c.ns(), dense)
}

// Upsert implements store.Writer: every document is encoded and checked
// before the first request; a batch within Pinecone's limits is one
// upsert an index applies whole.
func (b *Backend) Upsert(ctx context.Context, coll string, docs []*document.Document) error {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return err
	}
	dense, sp, err := c.chunksRecords(docs)
	if err != nil {
		return err
	}
	return b.writeChunks(ctx, c, dense, sp)
}

// chunkIDs reads the record ids and sources of the chunks a filter
// matches, from the sparse index, whose records are the lighter.
func (b *Backend) chunkIDs(ctx context.Context, c *collection, f any) (ids, srcs []string, err error) {
	seen := map[string]bool{}
	err = b.fetchWhere(ctx, c.sparse, c.ns(), f, func(v vector) error {
		ids = append(ids, v.ID)
		if s, _ := v.Metadata[kSrc].(string); s != "" && !seen[s] {
			seen[s] = true
			srcs = append(srcs, s)
		}
		return nil
	})
	return ids, srcs, err
}

// deleteChunks deletes chunks by record id from both indexes, the dense
// index first, so a chunk cut short is still found by the listing that
// the next delete makes.
func (b *Backend) deleteChunks(ctx context.Context, c *collection, ids []string) error {
	defer b.wrote(c.cfg.Name)
	if err := b.deleteIDs(ctx, c.dense, c.ns(), ids); err != nil {
		return err
	}
	return b.deleteIDs(ctx, c.sparse, c.ns(), ids)
}

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
	ids, srcs, err := b.chunkIDs(ctx, c, w)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	if err := b.dropStates(ctx, c, srcs); err != nil {
		return 0, err
	}
	if err := b.deleteChunks(ctx, c, ids); err != nil {
		return 0, err
	}
	return len(ids), nil
}

// Get implements store.Searcher: a fetch from the dense index by ids.
func (b *Backend) Get(ctx context.Context, coll string, ids []string) ([]*document.Document, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return nil, err
	}
	rids := make([]string, 0, len(ids))
	seen := map[string]bool{}
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			rids = append(rids, recordID("chunk", id))
		}
	}
	got, err := b.fetch(ctx, c.dense, c.ns(), rids)
	if err != nil {
		return nil, err
	}
	var out []*document.Document
	for _, rid := range rids {
		v, ok := got[rid]
		if !ok {
			continue
		}
		d, err := decode(v, true)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// Count implements store.Searcher: the namespace's record count from the
// index's statistics without a filter, else the matching records listed.
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
	ids, _, err := b.chunkIDs(ctx, c, w)
	return len(ids), err
}

// count is how many chunks the collection holds.
func (b *Backend) count(ctx context.Context, c *collection) (int, error) {
	var res struct {
		Namespaces map[string]struct {
			VectorCount int `json:"vectorCount"`
		} `json:"namespaces"`
	}
	if err := b.call(ctx, http.MethodPost, c.sparse+"/describe_index_stats", map[string]any{}, &res); err != nil {
		return 0, err
	}
	return res.Namespaces[c.ns()].VectorCount, nil
}

// Scan implements store.Scanner. Pinecone lists records in its own order,
// so each page lists every chunk to find the next ones in id order: a
// scan of n chunks reads n records a page.
func (b *Backend) Scan(ctx context.Context, coll string, after string, limit int) ([]*document.Document, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return nil, err
	}
	var ids []string
	err = b.fetchWhere(ctx, c.sparse, c.ns(), nil, func(v vector) error {
		if id, _ := v.Metadata[kID].(string); id > after {
			ids = append(ids, id)
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
