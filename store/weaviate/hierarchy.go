package weaviate

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/quarry-rag/quarry/store"
)

// The knowledge hierarchy lives in one class, {prefix}Hier: a row per
// node, attachment and link, plus each collection's node id counter, keyed
// by collection, kind and id. Rows are versioned like chunks, so every
// change is one transaction (all or none, never seen in part), and every
// change runs under the collection's hierarchy lock, which makes the
// checks that a folder has one node and that ids are never reused hold
// across processes.

const (
	kindNode = "node"
	kindAtt  = "att"
	kindLink = "link"
	kindSeq  = "seq"
)

func (b *Backend) hierClass() string { return b.opts.Prefix + "Hier" }

// hierColl is the transaction namespace of a collection's hierarchy.
func hierColl(coll string) string { return "#hier:" + coll }

func hierKey(coll, kind, id string) string { return coll + "\x1f" + kind + "\x1f" + id }

func linkID(l store.Link) string {
	return strconv.FormatInt(l.From, 10) + ":" + strconv.FormatInt(l.To, 10) + ":" + l.Type
}

func (b *Backend) ensureHierClass(ctx context.Context) error {
	return b.createClass(ctx, b.classDef(b.hierClass(), []map[string]any{
		textProp("coll", "field", true, false),
		textProp("kind", "field", true, false),
		typedProp("q_chunk", "text"),
		typedProp("q_txn", "text"),
		typedProp("q_seq", "int"),
		textProp("body", "", false, false),
	}, false))
}

// hierRows reads a collection's rows of one kind, as JSON bodies.
func (b *Backend) hierRows(ctx context.Context, coll, kind string) ([]string, error) {
	if _, err := b.get(ctx, coll); err != nil {
		return nil, err
	}
	var out []string
	err := b.read(ctx, hierColl(coll), func(s snapshot) error {
		out = out[:0]
		w := and(where{"path": []any{"coll"}, "operator": "Equal", "valueText": coll},
			where{"path": []any{"kind"}, "operator": "Equal", "valueText": kind}, s.visible(false))
		return b.sorted(ctx, b.hierClass(), w, "q_chunk", "body", func(rows []map[string]json.RawMessage) error {
			for _, r := range rows {
				out = append(out, text(r, "body"))
			}
			return nil
		})
	})
	return out, err
}

// hierRow is a row to write: its kind, id and value.
type hierRow struct {
	kind, id string
	value    any
}

// hierWrite writes rows and removes keys (kind and id) in one transaction.
func (b *Backend) hierWrite(ctx context.Context, coll string, put []hierRow, remove [][2]string) error {
	ns := hierColl(coll)
	b.tidy(ctx, ns)
	t, err := b.beginTxn(ctx, ns)
	if err != nil {
		return err
	}
	var keys []string
	objs := make([]object, 0, len(put))
	for _, r := range put {
		body, err := json.Marshal(r.value)
		if err != nil {
			t.abort(ctx)
			return fmt.Errorf("weaviate: encode hierarchy row: %w", err)
		}
		key := hierKey(coll, r.kind, r.id)
		keys = append(keys, key)
		objs = append(objs, object{Class: b.hierClass(), ID: objectID("hier", key, t.rec.Txn), Properties: map[string]any{
			"coll": coll, "kind": r.kind, "q_chunk": wrap(key), "q_txn": t.rec.Txn, "q_seq": t.rec.Seq, "body": string(body),
		}})
	}
	for _, r := range remove {
		keys = append(keys, hierKey(coll, r[0], r[1]))
	}
	if err := b.putObjects(ctx, objs); err != nil {
		t.abort(ctx)
		return err
	}
	return t.commit(ctx, b.hierClass(), txnRecord{Chunks: keys})
}

// lockHierarchy takes the collection's hierarchy lock, once the
// collection is known to exist.
func (b *Backend) lockHierarchy(ctx context.Context, coll string) (func(), error) {
	if _, err := b.get(ctx, coll); err != nil {
		return nil, err
	}
	return b.lock(ctx, hierColl(coll))
}

// lastByID makes the rows of a batch, one per id, the last of an id
// winning as a replace would; seen holds the ids.
func lastByID[T any](kind string, vals []T, id func(T) string) (put []hierRow, seen map[string]bool) {
	seen = map[string]bool{}
	for i := len(vals) - 1; i >= 0; i-- {
		if k := id(vals[i]); !seen[k] {
			seen[k] = true
			put = append(put, hierRow{kind, k, vals[i]})
		}
	}
	return put, seen
}

func decodeRows[T any](bodies []string) ([]T, error) {
	out := make([]T, len(bodies))
	for i, s := range bodies {
		if err := json.Unmarshal([]byte(s), &out[i]); err != nil {
			return nil, fmt.Errorf("weaviate: hierarchy row: %w", err)
		}
	}
	return out, nil
}

// Nodes implements store.HierarchyStore.
func (b *Backend) Nodes(ctx context.Context, coll string) ([]store.Node, error) {
	rows, err := b.hierRows(ctx, coll, kindNode)
	if err != nil {
		return nil, err
	}
	nodes, err := decodeRows[store.Node](rows)
	for i := range nodes {
		if nodes[i].Triggers == nil {
			nodes[i].Triggers = []string{}
		}
	}
	slices.SortFunc(nodes, func(a, b store.Node) int { return cmp.Compare(a.ID, b.ID) })
	return nodes, err
}

// PutNodes implements store.HierarchyStore.
func (b *Backend) PutNodes(ctx context.Context, coll string, nodes []store.Node) ([]store.Node, error) {
	unlock, err := b.lockHierarchy(ctx, coll)
	if err != nil {
		return nil, err
	}
	defer unlock()
	have, err := b.Nodes(ctx, coll)
	if err != nil {
		return nil, err
	}
	if err := store.CheckPutNodes(have, nodes); err != nil {
		return nil, err
	}
	next, err := b.nextNodeID(ctx, coll)
	if err != nil {
		return nil, err
	}
	out := make([]store.Node, len(nodes))
	var put []hierRow
	for i, n := range nodes {
		if n.ID == 0 {
			n.ID = next
			next++
		}
		if n.Triggers == nil {
			n.Triggers = []string{}
		}
		out[i] = n
		put = append(put, hierRow{kindNode, strconv.FormatInt(n.ID, 10), n})
	}
	put = append(put, hierRow{kindSeq, "next", map[string]int64{"next": next}})
	if err := b.hierWrite(ctx, coll, put, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// nextNodeID reads the collection's id counter: one past every id ever
// given, so a deleted node's id is never reused.
func (b *Backend) nextNodeID(ctx context.Context, coll string) (int64, error) {
	rows, err := b.hierRows(ctx, coll, kindSeq)
	if err != nil || len(rows) == 0 {
		return 1, err
	}
	var seq struct {
		Next int64 `json:"next"`
	}
	if err := json.Unmarshal([]byte(rows[0]), &seq); err != nil {
		return 0, fmt.Errorf("weaviate: node id counter: %w", err)
	}
	return max(seq.Next, 1), nil
}

// DeleteNodes implements store.HierarchyStore.
func (b *Backend) DeleteNodes(ctx context.Context, coll string, ids []int64) (int, error) {
	unlock, err := b.lockHierarchy(ctx, coll)
	if err != nil {
		return 0, err
	}
	defer unlock()
	nodes, err := b.Nodes(ctx, coll)
	if err != nil {
		return 0, err
	}
	gone := map[int64]bool{}
	var remove [][2]string
	for _, n := range nodes {
		if slices.Contains(ids, n.ID) {
			gone[n.ID] = true
			remove = append(remove, [2]string{kindNode, strconv.FormatInt(n.ID, 10)})
		}
	}
	if len(gone) == 0 {
		return 0, nil
	}
	atts, err := b.Attachments(ctx, coll)
	if err != nil {
		return 0, err
	}
	for _, a := range atts {
		if gone[a.NodeID] {
			remove = append(remove, [2]string{kindAtt, a.DocID})
		}
	}
	links, err := b.Links(ctx, coll)
	if err != nil {
		return 0, err
	}
	for _, l := range links {
		if gone[l.From] || gone[l.To] {
			remove = append(remove, [2]string{kindLink, linkID(l)})
		}
	}
	if err := b.hierWrite(ctx, coll, nil, remove); err != nil {
		return 0, err
	}
	return len(gone), nil
}

// Attachments implements store.HierarchyStore.
func (b *Backend) Attachments(ctx context.Context, coll string) ([]store.Attachment, error) {
	rows, err := b.hierRows(ctx, coll, kindAtt)
	if err != nil {
		return nil, err
	}
	atts, err := decodeRows[store.Attachment](rows)
	slices.SortFunc(atts, func(a, b store.Attachment) int { return strings.Compare(a.DocID, b.DocID) })
	return atts, err
}

// AttachmentsOf returns the attachments of the given documents, ordered
// by doc id; unattached ids are skipped. A search places its hits in the
// hierarchy with it, reading their rows instead of every attachment.
func (b *Backend) AttachmentsOf(ctx context.Context, coll string, docIDs []string) ([]store.Attachment, error) {
	if _, err := b.get(ctx, coll); err != nil {
		return nil, err
	}
	var rows []string
	const batch = 200 // keys per where clause
	for start := 0; start < len(docIDs); start += batch {
		ids := docIDs[start:min(start+batch, len(docIDs))]
		keys := make([]string, len(ids))
		for i, id := range ids {
			keys[i] = hierKey(coll, kindAtt, id)
		}
		var part []string
		err := b.read(ctx, hierColl(coll), func(s snapshot) error {
			part = part[:0]
			w := and(where{"path": []any{"q_chunk"}, "operator": "ContainsAny", "valueTextArray": wrapAll(keys)}, s.visible(false))
			return b.sorted(ctx, b.hierClass(), w, "q_chunk", "body", func(rs []map[string]json.RawMessage) error {
				for _, r := range rs {
					part = append(part, text(r, "body"))
				}
				return nil
			})
		})
		if err != nil {
			return nil, fmt.Errorf("weaviate: attachments of %q: %w", coll, err)
		}
		rows = append(rows, part...)
	}
	atts, err := decodeRows[store.Attachment](rows)
	slices.SortFunc(atts, func(a, b store.Attachment) int { return strings.Compare(a.DocID, b.DocID) })
	return slices.CompactFunc(atts, func(a, b store.Attachment) bool { return a.DocID == b.DocID }), err
}

// Attach implements store.HierarchyStore.
func (b *Backend) Attach(ctx context.Context, coll string, atts []store.Attachment, detach []string) error {
	unlock, err := b.lockHierarchy(ctx, coll)
	if err != nil {
		return err
	}
	defer unlock()
	put, seen := lastByID(kindAtt, atts, func(a store.Attachment) string { return a.DocID })
	var remove [][2]string
	for _, id := range detach {
		if !seen[id] {
			remove = append(remove, [2]string{kindAtt, id})
		}
	}
	return b.hierWrite(ctx, coll, put, remove)
}

// Links implements store.HierarchyStore.
func (b *Backend) Links(ctx context.Context, coll string) ([]store.Link, error) {
	rows, err := b.hierRows(ctx, coll, kindLink)
	if err != nil {
		return nil, err
	}
	links, err := decodeRows[store.Link](rows)
	slices.SortFunc(links, func(a, b store.Link) int {
		return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To), strings.Compare(a.Type, b.Type))
	})
	return links, err
}

// PutLinks implements store.HierarchyStore.
func (b *Backend) PutLinks(ctx context.Context, coll string, links []store.Link, replace []string) error {
	unlock, err := b.lockHierarchy(ctx, coll)
	if err != nil {
		return err
	}
	defer unlock()
	put, seen := lastByID(kindLink, links, linkID)
	var remove [][2]string
	if len(replace) > 0 {
		have, err := b.Links(ctx, coll)
		if err != nil {
			return err
		}
		for _, l := range have {
			if id := linkID(l); slices.Contains(replace, l.Type) && !seen[id] {
				remove = append(remove, [2]string{kindLink, id})
			}
		}
	}
	return b.hierWrite(ctx, coll, put, remove)
}
