package weaviate

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
)

// Upsert implements store.Writer: one transaction, visible whole or not
// at all.
func (b *Backend) Upsert(ctx context.Context, coll string, docs []*document.Document) error {
	c, err := b.get(ctx, coll)
	if err != nil {
		return err
	}
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	return b.write(ctx, c, docs, nil, txnRecord{Chunks: ids})
}

// ReplaceSources implements store.SourceSyncer: the new chunks and states
// of every source in one transaction, which supersedes everything older of
// those sources.
func (b *Backend) ReplaceSources(ctx context.Context, coll string, updates []store.SourceUpdate) error {
	c, err := b.get(ctx, coll)
	if err != nil {
		return err
	}
	var docs []*document.Document
	var states []store.SourceState
	sup := txnRecord{}
	for _, u := range updates {
		docs = append(docs, u.Docs...)
		sup.Sources = append(sup.Sources, sourceKey(u.Source.Type, u.Source.Name))
		if u.Hash != "" {
			states = append(states, store.SourceState{Source: u.Source, Hash: u.Hash, Chunks: len(u.Docs), Origin: u.Origin})
		}
	}
	return b.write(ctx, c, docs, states, sup)
}

// write runs one transaction that writes docs and source states.
func (b *Backend) write(ctx context.Context, c *collection, docs []*document.Document, states []store.SourceState, sup txnRecord) error {
	b.tidy(ctx, c.cfg.Name)
	t, err := b.beginTxn(ctx, c.cfg.Name)
	if err != nil {
		return err
	}
	objs := make([]object, 0, len(docs)+len(states))
	for _, d := range docs {
		o, err := b.docObject(c, d, t)
		if err != nil {
			t.abort(ctx)
			return fmt.Errorf("%w: %v", store.ErrInvalidRequest, err)
		}
		objs = append(objs, o)
	}
	for _, st := range states {
		raw, err := json.Marshal(storedState{SourceState: st, Seq: t.rec.Seq})
		if err != nil {
			t.abort(ctx)
			return fmt.Errorf("weaviate: encode source state: %w", err)
		}
		key := sourceKey(st.Source.Type, st.Source.Name)
		objs = append(objs, object{Class: b.sourcesClass(), ID: objectID(c.cfg.Name, "source", key, t.rec.Txn),
			Properties: map[string]any{"coll": c.cfg.Name, "q_source": wrap(key), "q_txn": t.rec.Txn, "q_seq": t.rec.Seq, "q_state": string(raw)}})
	}
	if err := b.putObjects(ctx, objs); err != nil {
		t.abort(ctx)
		return err
	}
	return t.commit(ctx, c.class, sup)
}

// Delete implements store.Writer. The delete is a transaction too: its
// commit hides the matching documents at once (and forgets their sources'
// hashes, so a later sync rewrites them); the objects go with the cleanup.
func (b *Backend) Delete(ctx context.Context, coll string, f filter.Expr) (int, error) {
	c, cf, err := b.filtered(ctx, coll, f)
	if err != nil || cf.t == never {
		return 0, err
	}
	b.tidy(ctx, coll)
	t, err := b.beginTxn(ctx, coll)
	if err != nil {
		return 0, err
	}
	// What the delete removes is what a read now sees; its sources lose
	// their hashes.
	var n int
	var sources []string
	err = b.read(ctx, coll, func(s snapshot) error {
		n, sources, err = b.groupSources(ctx, c.class, and(cf.w, s.visible(false)))
		return err
	})
	if err != nil {
		t.abort(ctx)
		return 0, err
	}
	if n == 0 {
		t.abort(ctx)
		return 0, nil
	}
	w := cf.w
	if w == nil { // a filter that matches everything
		w = where{"path": []any{"q_chunk"}, "operator": "IsNull", "valueBoolean": false}
	}
	if err := t.commit(ctx, c.class, txnRecord{Where: w, States: sources}); err != nil {
		return 0, err
	}
	return n, nil
}

// groupSources counts the objects matching w and lists their sources.
func (b *Backend) groupSources(ctx context.Context, class string, w where) (int, []string, error) {
	ws, err := gqlValue(w)
	if err != nil {
		return 0, nil, err
	}
	var data struct {
		Aggregate map[string][]struct {
			GroupedBy struct {
				Value string `json:"value"`
			} `json:"groupedBy"`
			Meta struct {
				Count int `json:"count"`
			} `json:"meta"`
		} `json:"Aggregate"`
	}
	q := fmt.Sprintf(`{Aggregate{%s(where:%s,groupBy:["q_source"],limit:%d){groupedBy{value} meta{count}}}}`, class, ws, maxResults)
	if err := b.c.graphql(ctx, q, &data); err != nil {
		return 0, nil, err
	}
	n := 0
	var sources []string
	for _, g := range data.Aggregate[class] {
		n += g.Meta.Count
		sources = append(sources, unwrap(g.GroupedBy.Value))
	}
	return n, sources, nil
}
