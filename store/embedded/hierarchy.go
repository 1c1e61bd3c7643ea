package embedded

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/quarry-rag/quarry/store"
)

// hierarchyDDL creates the knowledge hierarchy's tables. Node ids are never
// reused (AUTOINCREMENT), so a stale reference cannot land on a new node.
// Parents, attachments and links carry no foreign key to nodes: an audit
// must be able to see a broken parent, and DeleteNodes removes the rest.
const hierarchyDDL = `
CREATE TABLE IF NOT EXISTS kb_nodes (
	id            INTEGER PRIMARY KEY AUTOINCREMENT,
	collection_id INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
	parent_id     INTEGER NOT NULL,
	kind          TEXT NOT NULL,
	name          TEXT NOT NULL,
	path          TEXT NOT NULL,
	folder        TEXT NOT NULL,
	triggers      TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS kb_nodes_collection ON kb_nodes(collection_id);
CREATE UNIQUE INDEX IF NOT EXISTS kb_nodes_folder_once ON kb_nodes(collection_id, folder) WHERE folder <> '' OR kind = 'root';
CREATE TABLE IF NOT EXISTS kb_chunks (
	collection_id INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
	doc_id        TEXT NOT NULL,
	node_id       INTEGER NOT NULL,
	source_type   TEXT NOT NULL,
	source_name   TEXT NOT NULL,
	file          TEXT NOT NULL,
	PRIMARY KEY (collection_id, doc_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS kb_chunks_node ON kb_chunks(collection_id, node_id);
CREATE TABLE IF NOT EXISTS kb_links (
	collection_id INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
	from_id       INTEGER NOT NULL,
	to_id         INTEGER NOT NULL,
	type          TEXT NOT NULL,
	weight        REAL NOT NULL,
	evidence      TEXT NOT NULL,
	PRIMARY KEY (collection_id, from_id, to_id, type)
) WITHOUT ROWID;
`

// collectionID looks a collection's id up with q (a reader or a
// transaction).
func collectionID(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, name string) (int64, error) {
	var cid int64
	err := q.QueryRowContext(ctx, `SELECT id FROM collections WHERE name = ?`, name).Scan(&cid)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, store.ErrCollectionNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("read collection %q: %w", name, err)
	}
	return cid, nil
}

// hierTx runs fn in a write transaction on the collection's hierarchy.
func (b *Backend) hierTx(ctx context.Context, coll string, fn func(tx *sql.Tx, cid int64) error) (err error) {
	tx, err := b.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("hierarchy of %q: %w", coll, err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, tx.Rollback())
		}
	}()
	cid, err := collectionID(ctx, tx, coll)
	if err != nil {
		return err
	}
	if err := fn(tx, cid); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("hierarchy of %q: commit: %w", coll, err)
	}
	return nil
}

// folderTaken maps a violation of the unique folder index to
// store.ErrFolderTaken.
func folderTaken(err error, folder string) error {
	if strings.Contains(err.Error(), "UNIQUE constraint failed: kb_nodes.") {
		return fmt.Errorf("%w: %s", store.ErrFolderTaken, folder)
	}
	return err
}

// Nodes implements store.HierarchyStore.
func (b *Backend) Nodes(ctx context.Context, coll string) ([]store.Node, error) {
	cid, err := collectionID(ctx, b.r, coll)
	if err != nil {
		return nil, err
	}
	rows, err := b.r.QueryContext(ctx, `SELECT id, parent_id, kind, name, path, folder, triggers FROM kb_nodes WHERE collection_id = ? ORDER BY id`, cid)
	if err != nil {
		return nil, fmt.Errorf("nodes of %q: %w", coll, err)
	}
	defer rows.Close()
	var out []store.Node
	for rows.Next() {
		var (
			n    store.Node
			trig string
		)
		if err := rows.Scan(&n.ID, &n.ParentID, &n.Kind, &n.Name, &n.Path, &n.Folder, &trig); err != nil {
			return nil, fmt.Errorf("nodes of %q: %w", coll, err)
		}
		if err := json.Unmarshal([]byte(trig), &n.Triggers); err != nil {
			return nil, fmt.Errorf("node %d of %q: corrupt triggers: %w", n.ID, coll, err)
		}
		if n.Triggers == nil {
			n.Triggers = []string{}
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("nodes of %q: %w", coll, err)
	}
	return out, nil
}

// PutNodes implements store.HierarchyStore.
func (b *Backend) PutNodes(ctx context.Context, coll string, nodes []store.Node) ([]store.Node, error) {
	out := make([]store.Node, len(nodes))
	err := b.hierTx(ctx, coll, func(tx *sql.Tx, cid int64) error {
		for i, n := range nodes {
			if n.Triggers == nil {
				n.Triggers = []string{}
			}
			trig, err := json.Marshal(n.Triggers)
			if err != nil {
				return fmt.Errorf("node %q: %w", n.Name, err)
			}
			if n.ID == 0 {
				err = tx.QueryRowContext(ctx, `INSERT INTO kb_nodes(collection_id, parent_id, kind, name, path, folder, triggers)
					VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`, cid, n.ParentID, n.Kind, n.Name, n.Path, n.Folder, string(trig)).Scan(&n.ID)
				if err != nil {
					return fmt.Errorf("insert node %q: %w", n.Name, folderTaken(err, n.Folder))
				}
			} else {
				res, err := tx.ExecContext(ctx, `UPDATE kb_nodes SET parent_id = ?, kind = ?, name = ?, path = ?, folder = ?, triggers = ?
					WHERE id = ? AND collection_id = ?`, n.ParentID, n.Kind, n.Name, n.Path, n.Folder, string(trig), n.ID, cid)
				if err != nil {
					return fmt.Errorf("update node %d: %w", n.ID, folderTaken(err, n.Folder))
				}
				if k, _ := res.RowsAffected(); k == 0 {
					return fmt.Errorf("%w: %d", store.ErrNodeNotFound, n.ID)
				}
			}
			out[i] = n
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteNodes implements store.HierarchyStore.
func (b *Backend) DeleteNodes(ctx context.Context, coll string, ids []int64) (int, error) {
	var n int
	err := b.hierTx(ctx, coll, func(tx *sql.Tx, cid int64) error {
		for _, id := range ids {
			res, err := tx.ExecContext(ctx, `DELETE FROM kb_nodes WHERE id = ? AND collection_id = ?`, id, cid)
			if err != nil {
				return fmt.Errorf("delete node %d: %w", id, err)
			}
			if k, _ := res.RowsAffected(); k == 0 {
				continue
			}
			n++
			if _, err := tx.ExecContext(ctx, `DELETE FROM kb_chunks WHERE collection_id = ? AND node_id = ?`, cid, id); err != nil {
				return fmt.Errorf("delete node %d: %w", id, err)
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM kb_links WHERE collection_id = ? AND (from_id = ? OR to_id = ?)`, cid, id, id); err != nil {
				return fmt.Errorf("delete node %d: %w", id, err)
			}
		}
		return nil
	})
	return n, err
}

// Attachments implements store.HierarchyStore.
func (b *Backend) Attachments(ctx context.Context, coll string) ([]store.Attachment, error) {
	cid, err := collectionID(ctx, b.r, coll)
	if err != nil {
		return nil, err
	}
	out, err := b.attachments(ctx, nil, `WHERE collection_id = ? ORDER BY doc_id`, cid)
	if err != nil {
		return nil, fmt.Errorf("attachments of %q: %w", coll, err)
	}
	return out, nil
}

// attachments appends to out the kb_chunks rows that where selects.
func (b *Backend) attachments(ctx context.Context, out []store.Attachment, where string, args ...any) ([]store.Attachment, error) {
	rows, err := b.r.QueryContext(ctx, `SELECT doc_id, node_id, source_type, source_name, file FROM kb_chunks `+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var a store.Attachment
		if err := rows.Scan(&a.DocID, &a.NodeID, &a.Source.Type, &a.Source.Name, &a.File); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// AttachmentsOf returns the attachments of the given documents, ordered by
// doc id; unattached ids are skipped. A search places its hits in the
// hierarchy with it, reading a few rows instead of every attachment.
func (b *Backend) AttachmentsOf(ctx context.Context, coll string, docIDs []string) ([]store.Attachment, error) {
	cid, err := collectionID(ctx, b.r, coll)
	if err != nil {
		return nil, err
	}
	var out []store.Attachment
	const batch = 500 // well under SQLite's limit on bound parameters
	for start := 0; start < len(docIDs); start += batch {
		ids := docIDs[start:min(start+batch, len(docIDs))]
		args := make([]any, 0, len(ids)+1)
		args = append(args, cid)
		for _, id := range ids {
			args = append(args, id)
		}
		out, err = b.attachments(ctx, out, `WHERE collection_id = ? AND doc_id IN (?`+strings.Repeat(",?", len(ids)-1)+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("attachments of %q: %w", coll, err)
		}
	}
	slices.SortFunc(out, func(a, b store.Attachment) int { return strings.Compare(a.DocID, b.DocID) })
	out = slices.CompactFunc(out, func(a, b store.Attachment) bool { return a.DocID == b.DocID })
	return out, nil
}

// Attach implements store.HierarchyStore.
func (b *Backend) Attach(ctx context.Context, coll string, atts []store.Attachment, detach []string) error {
	return b.hierTx(ctx, coll, func(tx *sql.Tx, cid int64) error {
		for _, id := range detach {
			if _, err := tx.ExecContext(ctx, `DELETE FROM kb_chunks WHERE collection_id = ? AND doc_id = ?`, cid, id); err != nil {
				return fmt.Errorf("detach %s: %w", id, err)
			}
		}
		st, err := tx.PrepareContext(ctx, `INSERT INTO kb_chunks(collection_id, doc_id, node_id, source_type, source_name, file) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT(collection_id, doc_id) DO UPDATE SET node_id = excluded.node_id, source_type = excluded.source_type,
			source_name = excluded.source_name, file = excluded.file`)
		if err != nil {
			return fmt.Errorf("attach: %w", err)
		}
		defer st.Close()
		for _, a := range atts {
			if _, err := st.ExecContext(ctx, cid, a.DocID, a.NodeID, a.Source.Type, a.Source.Name, a.File); err != nil {
				return fmt.Errorf("attach %s: %w", a.DocID, err)
			}
		}
		return nil
	})
}

// Links implements store.HierarchyStore.
func (b *Backend) Links(ctx context.Context, coll string) ([]store.Link, error) {
	cid, err := collectionID(ctx, b.r, coll)
	if err != nil {
		return nil, err
	}
	rows, err := b.r.QueryContext(ctx, `SELECT from_id, to_id, type, weight, evidence FROM kb_links WHERE collection_id = ? ORDER BY from_id, to_id, type`, cid)
	if err != nil {
		return nil, fmt.Errorf("links of %q: %w", coll, err)
	}
	defer rows.Close()
	var out []store.Link
	for rows.Next() {
		var l store.Link
		if err := rows.Scan(&l.From, &l.To, &l.Type, &l.Weight, &l.Evidence); err != nil {
			return nil, fmt.Errorf("links of %q: %w", coll, err)
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("links of %q: %w", coll, err)
	}
	return out, nil
}

// PutLinks implements store.HierarchyStore.
func (b *Backend) PutLinks(ctx context.Context, coll string, links []store.Link, replace []string) error {
	return b.hierTx(ctx, coll, func(tx *sql.Tx, cid int64) error {
		if len(replace) > 0 {
			args := []any{cid}
			for _, t := range replace {
				args = append(args, t)
			}
			q := `DELETE FROM kb_links WHERE collection_id = ? AND type IN (?` + strings.Repeat(", ?", len(replace)-1) + `)`
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				return fmt.Errorf("clear links: %w", err)
			}
		}
		st, err := tx.PrepareContext(ctx, `INSERT INTO kb_links(collection_id, from_id, to_id, type, weight, evidence) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT(collection_id, from_id, to_id, type) DO UPDATE SET weight = excluded.weight, evidence = excluded.evidence`)
		if err != nil {
			return fmt.Errorf("put links: %w", err)
		}
		defer st.Close()
		for _, l := range links {
			if _, err := st.ExecContext(ctx, cid, l.From, l.To, l.Type, l.Weight, l.Evidence); err != nil {
				return fmt.Errorf("put link %d-%d: %w", l.From, l.To, err)
			}
		}
		return nil
	})
}

var _ store.HierarchyStore = (*Backend)(nil)
