package mariadb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/quarry-rag/quarry/store"
)

// The knowledge hierarchy's tables. A folder, and the root, have one node
// per collection: a unique key on a generated column that is NULL for the
// other nodes (MariaDB has no partial indexes) says so in the engine, so
// two builds racing cannot make a node twice.
const hierarchySQL = `CREATE TABLE IF NOT EXISTS quarry_nodes (
	id         BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
	collection VARBINARY(64) NOT NULL,
	parent_id  BIGINT NOT NULL,
	kind       VARBINARY(32) NOT NULL,
	name       TEXT NOT NULL,
	path       TEXT NOT NULL,
	folder     VARBINARY(2900) NOT NULL,
	triggers   LONGTEXT NOT NULL,
	folder_key VARBINARY(2900) AS (CASE WHEN folder <> '' THEN folder WHEN kind = 'root' THEN '\0root' ELSE NULL END) PERSISTENT,
	KEY collection (collection),
	UNIQUE KEY folder (collection, folder_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE IF NOT EXISTS quarry_node_chunks (
	collection  VARBINARY(64) NOT NULL,
	doc_id      VARBINARY(1024) NOT NULL,
	node_id     BIGINT NOT NULL,
	source_type VARBINARY(64) NOT NULL,
	source_name VARBINARY(2900) NOT NULL,
	file        TEXT NOT NULL,
	PRIMARY KEY (collection, doc_id),
	KEY node (collection, node_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE IF NOT EXISTS quarry_node_links (
	collection VARBINARY(64) NOT NULL,
	from_id    BIGINT NOT NULL,
	to_id      BIGINT NOT NULL,
	type       VARBINARY(64) NOT NULL,
	weight     DOUBLE NOT NULL,
	evidence   TEXT NOT NULL,
	PRIMARY KEY (collection, from_id, to_id, type)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`

// hierarchyTables are the tables whose rows a dropped collection leaves.
var hierarchyTables = []string{"quarry_nodes", "quarry_node_chunks", "quarry_node_links"}

// folderTaken maps a violation of the unique folder key to
// store.ErrFolderTaken.
func folderTaken(err error, folder string) error {
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1062 && strings.Contains(me.Message, "'folder'") {
		return fmt.Errorf("%w: %s", store.ErrFolderTaken, folder)
	}
	return err
}

func placeholders(n int) string { return "?" + strings.Repeat(", ?", n-1) }

func int64Args(ids []int64) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}

// Nodes implements store.HierarchyStore.
func (b *Backend) Nodes(ctx context.Context, coll string) ([]store.Node, error) {
	if _, err := b.info(ctx, coll); err != nil {
		return nil, err
	}
	rows, err := b.db.QueryContext(ctx, `SELECT id, parent_id, kind, name, path, folder, triggers FROM quarry_nodes WHERE collection = ? ORDER BY id`, coll)
	if err != nil {
		return nil, fmt.Errorf("mariadb: nodes of %q: %w", coll, err)
	}
	defer rows.Close()
	var out []store.Node
	for rows.Next() {
		var (
			n   store.Node
			raw string
		)
		if err := rows.Scan(&n.ID, &n.ParentID, &n.Kind, &n.Name, &n.Path, &n.Folder, &raw); err != nil {
			return nil, fmt.Errorf("mariadb: nodes of %q: %w", coll, err)
		}
		if err := json.Unmarshal([]byte(raw), &n.Triggers); err != nil {
			return nil, fmt.Errorf("mariadb: node %d: triggers: %w", n.ID, err)
		}
		if n.Triggers == nil {
			n.Triggers = []string{}
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// PutNodes implements store.HierarchyStore.
func (b *Backend) PutNodes(ctx context.Context, coll string, nodes []store.Node) ([]store.Node, error) {
	if _, err := b.info(ctx, coll); err != nil {
		return nil, err
	}
	out := make([]store.Node, len(nodes))
	err := b.inTx(ctx, func(tx *sql.Tx) error {
		for i, n := range nodes {
			if n.Triggers == nil {
				n.Triggers = []string{}
			}
			trig, err := json.Marshal(n.Triggers)
			if err != nil {
				return err
			}
			if n.ID == 0 {
				res, err := tx.ExecContext(ctx, `INSERT INTO quarry_nodes (collection, parent_id, kind, name, path, folder, triggers) VALUES (?, ?, ?, ?, ?, ?, ?)`,
					coll, n.ParentID, n.Kind, n.Name, n.Path, n.Folder, string(trig))
				if err != nil {
					return fmt.Errorf("mariadb: insert node %q: %w", n.Name, folderTaken(err, n.Folder))
				}
				if n.ID, err = res.LastInsertId(); err != nil {
					return err
				}
			} else {
				var found int
				if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM quarry_nodes WHERE id = ? AND collection = ?`, n.ID, coll).Scan(&found); err != nil {
					return err
				}
				if found == 0 {
					return fmt.Errorf("%w: %d", store.ErrNodeNotFound, n.ID)
				}
				if _, err := tx.ExecContext(ctx, `UPDATE quarry_nodes SET parent_id = ?, kind = ?, name = ?, path = ?, folder = ?, triggers = ? WHERE id = ? AND collection = ?`,
					n.ParentID, n.Kind, n.Name, n.Path, n.Folder, string(trig), n.ID, coll); err != nil {
					return fmt.Errorf("mariadb: update node %d: %w", n.ID, folderTaken(err, n.Folder))
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
	if _, err := b.info(ctx, coll); err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		return 0, nil
	}
	var n int64
	in := placeholders(len(ids))
	args := append([]any{coll}, int64Args(ids)...)
	err := b.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM quarry_nodes WHERE collection = ? AND id IN (`+in+`)`, args...)
		if err != nil {
			return fmt.Errorf("mariadb: delete nodes: %w", err)
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM quarry_node_chunks WHERE collection = ? AND node_id IN (`+in+`)`, args...); err != nil {
			return fmt.Errorf("mariadb: delete nodes: %w", err)
		}
		linkArgs := append(append([]any{coll}, int64Args(ids)...), int64Args(ids)...)
		if _, err := tx.ExecContext(ctx, `DELETE FROM quarry_node_links WHERE collection = ? AND (from_id IN (`+in+`) OR to_id IN (`+in+`))`, linkArgs...); err != nil {
			return fmt.Errorf("mariadb: delete nodes: %w", err)
		}
		return nil
	})
	return int(n), err
}

// Attachments implements store.HierarchyStore.
func (b *Backend) Attachments(ctx context.Context, coll string) ([]store.Attachment, error) {
	if _, err := b.info(ctx, coll); err != nil {
		return nil, err
	}
	out, err := b.attachments(ctx, nil, `WHERE collection = ? ORDER BY doc_id`, coll)
	if err != nil {
		return nil, fmt.Errorf("mariadb: attachments of %q: %w", coll, err)
	}
	return out, nil
}

// attachments appends to out the quarry_node_chunks rows that where
// selects.
func (b *Backend) attachments(ctx context.Context, out []store.Attachment, where string, args ...any) ([]store.Attachment, error) {
	rows, err := b.db.QueryContext(ctx, `SELECT doc_id, node_id, source_type, source_name, file FROM quarry_node_chunks `+where, args...)
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
	if _, err := b.info(ctx, coll); err != nil {
		return nil, err
	}
	var out []store.Attachment
	const batch = 500
	for start := 0; start < len(docIDs); start += batch {
		ids := docIDs[start:min(start+batch, len(docIDs))]
		args := make([]any, 0, len(ids)+1)
		args = append(args, coll)
		for _, id := range ids {
			args = append(args, id)
		}
		var err error
		if out, err = b.attachments(ctx, out, `WHERE collection = ? AND doc_id IN (?`+strings.Repeat(",?", len(ids)-1)+`)`, args...); err != nil {
			return nil, fmt.Errorf("mariadb: attachments of %q: %w", coll, err)
		}
	}
	slices.SortFunc(out, func(a, b store.Attachment) int { return strings.Compare(a.DocID, b.DocID) })
	return slices.CompactFunc(out, func(a, b store.Attachment) bool { return a.DocID == b.DocID }), nil
}

// Attach implements store.HierarchyStore.
func (b *Backend) Attach(ctx context.Context, coll string, atts []store.Attachment, detach []string) error {
	if _, err := b.info(ctx, coll); err != nil {
		return err
	}
	return b.inTx(ctx, func(tx *sql.Tx) error {
		if len(detach) > 0 {
			args := []any{coll}
			for _, d := range detach {
				args = append(args, d)
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM quarry_node_chunks WHERE collection = ? AND doc_id IN (`+placeholders(len(detach))+`)`, args...); err != nil {
				return fmt.Errorf("mariadb: detach: %w", err)
			}
		}
		for _, a := range atts {
			if _, err := tx.ExecContext(ctx, `INSERT INTO quarry_node_chunks (collection, doc_id, node_id, source_type, source_name, file) VALUES (?, ?, ?, ?, ?, ?)
	ON DUPLICATE KEY UPDATE node_id = VALUES(node_id), source_type = VALUES(source_type), source_name = VALUES(source_name), file = VALUES(file)`,
				coll, a.DocID, a.NodeID, a.Source.Type, a.Source.Name, a.File); err != nil {
				return fmt.Errorf("mariadb: attach: %w", err)
			}
		}
		return nil
	})
}

// Links implements store.HierarchyStore.
func (b *Backend) Links(ctx context.Context, coll string) ([]store.Link, error) {
	if _, err := b.info(ctx, coll); err != nil {
		return nil, err
	}
	rows, err := b.db.QueryContext(ctx, `SELECT from_id, to_id, type, weight, evidence FROM quarry_node_links WHERE collection = ? ORDER BY from_id, to_id, type`, coll)
	if err != nil {
		return nil, fmt.Errorf("mariadb: links of %q: %w", coll, err)
	}
	defer rows.Close()
	var out []store.Link
	for rows.Next() {
		var l store.Link
		if err := rows.Scan(&l.From, &l.To, &l.Type, &l.Weight, &l.Evidence); err != nil {
			return nil, fmt.Errorf("mariadb: links of %q: %w", coll, err)
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// PutLinks implements store.HierarchyStore.
func (b *Backend) PutLinks(ctx context.Context, coll string, links []store.Link, replace []string) error {
	if _, err := b.info(ctx, coll); err != nil {
		return err
	}
	return b.inTx(ctx, func(tx *sql.Tx) error {
		if len(replace) > 0 {
			args := []any{coll}
			for _, r := range replace {
				args = append(args, r)
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM quarry_node_links WHERE collection = ? AND type IN (`+placeholders(len(replace))+`)`, args...); err != nil {
				return fmt.Errorf("mariadb: clear links: %w", err)
			}
		}
		for _, l := range links {
			if _, err := tx.ExecContext(ctx, `INSERT INTO quarry_node_links (collection, from_id, to_id, type, weight, evidence) VALUES (?, ?, ?, ?, ?, ?)
	ON DUPLICATE KEY UPDATE weight = VALUES(weight), evidence = VALUES(evidence)`, coll, l.From, l.To, l.Type, l.Weight, l.Evidence); err != nil {
				return fmt.Errorf("mariadb: put links: %w", err)
			}
		}
		return nil
	})
}

var _ store.HierarchyStore = (*Backend)(nil)
