package opensearch

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
)

// stored is what a chunk's "metadata" field holds: the parts of a
// document read back but not searched, as JSON text so numbers keep their
// integer or float kind.
type stored struct {
	Content    string              `json:"content"`
	Metadata   json.RawMessage     `json:"metadata"`
	Provenance document.Provenance `json:"provenance"`
}

// chunkSource is a chunk as the index holds it.
func (c *collection) chunkSource(d *document.Document) (map[string]any, error) {
	md := []byte("{}")
	if d.Metadata != nil {
		var err error
		if md, err = document.MarshalValue(d.Metadata); err != nil {
			return nil, fmt.Errorf("document %s: metadata: %w", d.ID, err)
		}
	}
	st, err := json.Marshal(stored{Content: d.Content, Metadata: md, Provenance: d.Provenance})
	if err != nil {
		return nil, fmt.Errorf("document %s: %w", d.ID, err)
	}
	text := d.Content
	if t := store.Title(d); t != "" {
		text = t + "\n\n" + d.Content
	}
	src := map[string]any{
		fieldID:        d.ID,
		fieldContent:   text,
		fieldEmbedding: d.Embedding,
		keySType:       d.SourceType,
		keySName:       d.SourceName,
		fieldStored:    string(st),
	}
	if c.cfg.Schema != nil {
		for _, f := range c.cfg.Schema.Fields {
			if v, ok := d.Metadata[f.Name]; f.Filterable && ok && v != nil {
				src[f.Name] = v
			}
		}
	}
	return src, nil
}

// bulk is an NDJSON _bulk body.
type bulk struct{ buf bytes.Buffer }

func (bk *bulk) index(index, id string, src any) error {
	j, err := json.Marshal(src)
	if err != nil {
		return err
	}
	fmt.Fprintf(&bk.buf, `{"index":{"_index":%q,"_id":%q}}`+"\n", index, id)
	bk.buf.Write(j)
	bk.buf.WriteByte('\n')
	return nil
}

func (bk *bulk) delete(index, id string) {
	fmt.Fprintf(&bk.buf, `{"delete":{"_index":%q,"_id":%q}}`+"\n", index, id)
}

// send applies the actions, waiting until they are searchable. An action
// OpenSearch refuses fails the call with the first reason.
func (b *Backend) send(ctx context.Context, bk *bulk) error {
	if bk.buf.Len() == 0 {
		return nil
	}
	var res struct {
		Errors bool                         `json:"errors"`
		Items  []map[string]json.RawMessage `json:"items"`
	}
	if err := b.call(ctx, http.MethodPost, "/_bulk?refresh=wait_for", &bk.buf, &res); err != nil {
		return err
	}
	if !res.Errors {
		return nil
	}
	for _, it := range res.Items {
		for op, raw := range it {
			var r struct {
				ID     string `json:"_id"`
				Status int    `json:"status"`
				Error  *struct {
					Type   string `json:"type"`
					Reason string `json:"reason"`
				} `json:"error"`
			}
			if json.Unmarshal(raw, &r) == nil && r.Error != nil {
				return fmt.Errorf("opensearch: bulk %s %s: HTTP %d: %s: %s", op, r.ID, r.Status, r.Error.Type, r.Error.Reason)
			}
		}
	}
	return fmt.Errorf("opensearch: bulk request reported errors")
}

// Upsert implements store.Writer: one bulk request. The documents were
// validated against the schema before (store.Collection), so OpenSearch
// refuses none of them short of a failing node.
func (b *Backend) Upsert(ctx context.Context, coll string, docs []*document.Document) error {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return err
	}
	var bk bulk
	if err := c.addChunks(&bk, docs); err != nil {
		return err
	}
	return b.send(ctx, &bk)
}

func (c *collection) addChunks(bk *bulk, docs []*document.Document) error {
	for _, d := range docs {
		src, err := c.chunkSource(d)
		if err != nil {
			return err
		}
		if err := bk.index(c.index, docID(d.ID), src); err != nil {
			return fmt.Errorf("document %s: %w", d.ID, err)
		}
	}
	return nil
}

// visible is the query clause of a request's filter; false when it can
// match nothing.
func (c *collection) visible(f filter.Expr) (clause, bool, error) {
	cf, err := compileFilter(f, c.cfg.Schema, c.dialect)
	if err != nil {
		return nil, false, err
	}
	if cf.fold == filter.Never {
		return nil, false, nil
	}
	return cf.query(), true, nil
}

// Delete implements store.Writer. The matching chunks' sources lose their
// states too, so a later sync writes them again instead of skipping them.
func (b *Backend) Delete(ctx context.Context, coll string, f filter.Expr) (int, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return 0, err
	}
	q, ok, err := c.visible(f)
	if err != nil || !ok {
		return 0, err
	}
	seen := map[[2]string]bool{}
	var sources [][2]string
	err = b.scan(ctx, c, q, []string{keySType, keySName}, func(h searchHit) error {
		var s struct {
			Type string `json:"sourceType"`
			Name string `json:"sourceName"`
		}
		if err := json.Unmarshal(h.Source, &s); err != nil {
			return fmt.Errorf("opensearch: chunk %s: %w", h.ID, err)
		}
		if k := [2]string{s.Type, s.Name}; !seen[k] {
			seen[k] = true
			sources = append(sources, k)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	var bk bulk
	for _, s := range sources {
		bk.delete(sourcesIndex(c.index), docID(sourceKey(s[0], s[1])))
	}
	if err := b.send(ctx, &bk); err != nil {
		return 0, err
	}
	var res struct {
		Deleted int `json:"deleted"`
	}
	if err := b.request(ctx, c, http.MethodPost, "/_delete_by_query?refresh=true&conflicts=proceed", map[string]any{"query": q}, &res); err != nil {
		return 0, err
	}
	return res.Deleted, nil
}

// sourceKey names a source: its type and name, which cannot contain the
// separator.
func sourceKey(typ, name string) string { return typ + "\x1f" + name }

// Sources implements store.SourceSyncer.
func (b *Backend) Sources(ctx context.Context, coll string) ([]store.SourceState, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return nil, err
	}
	var out []store.SourceState
	err = b.all(ctx, sourcesIndex(c.index), func(h searchHit) error {
		var v struct {
			Value string `json:"value"`
		}
		var st store.SourceState
		if err := json.Unmarshal(h.Source, &v); err != nil {
			return fmt.Errorf("opensearch: source state %s: %w", h.ID, err)
		}
		if err := json.Unmarshal([]byte(v.Value), &st); err != nil {
			return fmt.Errorf("opensearch: source state %s: %w", h.ID, err)
		}
		out = append(out, st)
		return nil
	})
	slices.SortFunc(out, func(x, y store.SourceState) int {
		return cmp.Or(cmp.Compare(x.Source.Type, y.Source.Type), cmp.Compare(x.Source.Name, y.Source.Name))
	})
	return out, err
}

// ReplaceSources implements store.SourceSyncer in three requests: the
// sources' states are deleted, then their chunks, then the new chunks and
// the new states are written. A crash part way leaves a source without a
// state, which the next ingestion writes again; never a state that claims
// chunks that are not there.
func (b *Backend) ReplaceSources(ctx context.Context, coll string, updates []store.SourceUpdate) error {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return err
	}
	var drop, write bulk
	var which []any
	for _, u := range updates {
		key := docID(sourceKey(u.Source.Type, u.Source.Name))
		drop.delete(sourcesIndex(c.index), key)
		which = append(which, clause{"bool": clause{"filter": []any{
			clause{"term": clause{keySType: u.Source.Type}},
			clause{"term": clause{keySName: u.Source.Name}},
		}}})
		if err := c.addChunks(&write, u.Docs); err != nil {
			return err
		}
		if u.Hash == "" {
			continue
		}
		st, err := json.Marshal(store.SourceState{Source: u.Source, Hash: u.Hash, Chunks: len(u.Docs), Origin: u.Origin})
		if err != nil {
			return fmt.Errorf("opensearch: source %s: %w", u.Source.Name, err)
		}
		if err := write.index(sourcesIndex(c.index), key, map[string]any{"key": key, keySType: u.Source.Type, keySName: u.Source.Name, "value": string(st)}); err != nil {
			return err
		}
	}
	if len(updates) == 0 {
		return nil
	}
	if err := b.send(ctx, &drop); err != nil {
		return err
	}
	q := clause{"bool": clause{"should": which, "minimum_should_match": 1}}
	if err := b.request(ctx, c, http.MethodPost, "/_delete_by_query?refresh=true&conflicts=proceed", map[string]any{"query": q}, nil); err != nil {
		return err
	}
	return b.send(ctx, &write)
}

// Setting implements store.SettingsKeeper.
func (b *Backend) Setting(ctx context.Context, coll, key string) (json.RawMessage, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return nil, err
	}
	var res struct {
		Docs []struct {
			Found  bool            `json:"found"`
			Source json.RawMessage `json:"_source"`
		} `json:"docs"`
	}
	if err := b.call(ctx, http.MethodPost, "/"+esc(settingsIndex(c.index))+"/_mget", map[string]any{"ids": []string{docID(key)}}, &res); err != nil {
		return nil, err
	}
	for _, d := range res.Docs {
		if d.Found {
			var v struct {
				Value string `json:"value"`
			}
			if err := json.Unmarshal(d.Source, &v); err != nil {
				return nil, fmt.Errorf("opensearch: setting %s: %w", key, err)
			}
			return json.RawMessage(v.Value), nil
		}
	}
	return nil, nil
}

// PutSetting implements store.SettingsKeeper.
func (b *Backend) PutSetting(ctx context.Context, coll, key string, value json.RawMessage) error {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return err
	}
	var bk bulk
	if value == nil {
		bk.delete(settingsIndex(c.index), docID(key))
	} else if err := bk.index(settingsIndex(c.index), docID(key), map[string]any{"key": key, "value": string(value)}); err != nil {
		return err
	}
	return b.send(ctx, &bk)
}

// Settings implements store.SettingsKeeper.
func (b *Backend) Settings(ctx context.Context, coll string) (map[string]json.RawMessage, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return nil, err
	}
	out := map[string]json.RawMessage{}
	err = b.all(ctx, settingsIndex(c.index), func(h searchHit) error {
		var v struct {
			Key   string `json:"key"`
			Value string `json:"value"`
		}
		if err := json.Unmarshal(h.Source, &v); err != nil {
			return fmt.Errorf("opensearch: setting %s: %w", h.ID, err)
		}
		out[v.Key] = json.RawMessage(v.Value)
		return nil
	})
	return out, err
}
