package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/quarry-rag/quarry/store"
)

// hierarchySQL creates the knowledge hierarchy's tables. Parents,
// attachments and links carry no foreign key to nodes: an audit must see a
// broken parent, and DeleteNodes removes the rest itself.
const hierarchySQL = `
CREATE TABLE IF NOT EXISTS quarry_nodes (
	id            bigserial PRIMARY KEY,
	collection_id integer NOT NULL REFERENCES quarry_collections(id) ON DELETE CASCADE,
	parent_id     bigint NOT NULL,
	kind          text NOT NULL,
	name          text NOT NULL,
	path          text NOT NULL,
	folder        text NOT NULL,
	triggers      jsonb NOT NULL
);
CREATE INDEX IF NOT EXISTS quarry_nodes_collection ON quarry_nodes (collection_id);
CREATE UNIQUE INDEX IF NOT EXISTS quarry_nodes_folder ON quarry_nodes (collection_id, folder) WHERE folder <> '' OR kind = 'root';
CREATE TABLE IF NOT EXISTS quarry_node_chunks (
	collection_id integer NOT NULL REFERENCES quarry_collections(id) ON DELETE CASCADE,
	doc_id        text NOT NULL,
	node_id       bigint NOT NULL,
	source_type   text NOT NULL,
	source_name   text NOT NULL,
	file          text NOT NULL,
	PRIMARY KEY (collection_id, doc_id)
);
CREATE INDEX IF NOT EXISTS quarry_node_chunks_node ON quarry_node_chunks (collection_id, node_id);
CREATE TABLE IF NOT EXISTS quarry_node_links (
	collection_id integer NOT NULL REFERENCES quarry_collections(id) ON DELETE CASCADE,
	from_id       bigint NOT NULL,
	to_id         bigint NOT NULL,
	type          text NOT NULL,
	weight        double precision NOT NULL,
	evidence      text NOT NULL,
	PRIMARY KEY (collection_id, from_id, to_id, type)
);
`

func (b *Backend) hierCollectionID(ctx context.Context, q interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}, name string) (int, error) {
	var cid int
	err := q.QueryRow(ctx, `SELECT id FROM quarry_collections WHERE name = $1`, name).Scan(&cid)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, store.ErrCollectionNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("read collection %q: %w", name, err)
	}
	return cid, nil
}

// hierTx runs fn in a transaction on the collection's hierarchy.
func (b *Backend) hierTx(ctx context.Context, coll string, fn func(tx pgx.Tx, cid int) error) error {
	return pgx.BeginFunc(ctx, b.db, func(tx pgx.Tx) error {
		cid, err := b.hierCollectionID(ctx, tx, coll)
		if err != nil {
			return err
		}
		return fn(tx, cid)
	})
}

// folderTaken maps a violation of the unique folder index to
// store.ErrFolderTaken.
func folderTaken(err error, folder string) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == "quarry_nodes_folder" {
		return fmt.Errorf("%w: %s", store.ErrFolderTaken, folder)
	}
	return err
}

// Nodes implements store.HierarchyStore.
func (b *Backend) Nodes(ctx context.Context, coll string) ([]store.Node, error) {
	cid, err := b.hierCollectionID(ctx, b.db, coll)
	if err != nil {
		return nil, err
	}
	rows, err := b.db.Query(ctx, `SELECT id, parent_id, kind, name, path, folder, triggers FROM quarry_nodes WHERE collection_id = $1 ORDER BY id`, cid)
	if err != nil {
		return nil, fmt.Errorf("nodes of %q: %w", coll, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Node, error) {
		var n store.Node
		err := r.Scan(&n.ID, &n.ParentID, &n.Kind, &n.Name, &n.Path, &n.Folder, &n.Triggers)
		if n.Triggers == nil {
			n.Triggers = []string{}
		}
		return n, err
	})
	if err != nil {
		return nil, fmt.Errorf("nodes of %q: %w", coll, err)
	}
	return out, nil
}

// PutNodes implements store.HierarchyStore.
func (b *Backend) PutNodes(ctx context.Context, coll string, nodes []store.Node) ([]store.Node, error) {
	out := make([]store.Node, len(nodes))
	err := b.hierTx(ctx, coll, func(tx pgx.Tx, cid int) error {
		for i, n := range nodes {
			if n.Triggers == nil {
				n.Triggers = []string{}
			}
			if n.ID == 0 {
				if err := tx.QueryRow(ctx, `INSERT INTO quarry_nodes(collection_id, parent_id, kind, name, path, folder, triggers)
					VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`, cid, n.ParentID, n.Kind, n.Name, n.Path, n.Folder, n.Triggers).Scan(&n.ID); err != nil {
					return fmt.Errorf("insert node %q: %w", n.Name, folderTaken(err, n.Folder))
				}
			} else {
				tag, err := tx.Exec(ctx, `UPDATE quarry_nodes SET parent_id = $1, kind = $2, name = $3, path = $4, folder = $5, triggers = $6
					WHERE id = $7 AND collection_id = $8`, n.ParentID, n.Kind, n.Name, n.Path, n.Folder, n.Triggers, n.ID, cid)
				if err != nil {
					return fmt.Errorf("update node %d: %w", n.ID, folderTaken(err, n.Folder))
				}
				if tag.RowsAffected() == 0 {
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
	err := b.hierTx(ctx, coll, func(tx pgx.Tx, cid int) error {
		tag, err := tx.Exec(ctx, `DELETE FROM quarry_nodes WHERE collection_id = $1 AND id = ANY($2)`, cid, ids)
		if err != nil {
			return fmt.Errorf("delete nodes: %w", err)
		}
		n = int(tag.RowsAffected())
		if _, err := tx.Exec(ctx, `DELETE FROM quarry_node_chunks WHERE collection_id = $1 AND node_id = ANY($2)`, cid, ids); err != nil {
			return fmt.Errorf("delete nodes: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM quarry_node_links WHERE collection_id = $1 AND (from_id = ANY($2) OR to_id = ANY($2))`, cid, ids); err != nil {
			return fmt.Errorf("delete nodes: %w", err)
		}
		return nil
	})
	return n, err
}

// Attachments implements store.HierarchyStore.
func (b *Backend) Attachments(ctx context.Context, coll string) ([]store.Attachment, error) {
	cid, err := b.hierCollectionID(ctx, b.db, coll)
	if err != nil {
		return nil, err
	}
	rows, err := b.db.Query(ctx, `SELECT doc_id, node_id, source_type, source_name, file FROM quarry_node_chunks WHERE collection_id = $1 ORDER BY doc_id COLLATE "C"`, cid)
	if err != nil {
		return nil, fmt.Errorf("attachments of %q: %w", coll, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Attachment, error) {
		var a store.Attachment
		err := r.Scan(&a.DocID, &a.NodeID, &a.Source.Type, &a.Source.Name, &a.File)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("attachments of %q: %w", coll, err)
	}
	return out, nil
}

// Attach implements store.HierarchyStore.
func (b *Backend) Attach(ctx context.Context, coll string, atts []store.Attachment, detach []string) error {
	return b.hierTx(ctx, coll, func(tx pgx.Tx, cid int) error {
		if len(detach) > 0 {
			if _, err := tx.Exec(ctx, `DELETE FROM quarry_node_chunks WHERE collection_id = $1 AND doc_id = ANY($2)`, cid, detach); err != nil {
				return fmt.Errorf("detach: %w", err)
			}
		}
		batch := &pgx.Batch{}
		for _, a := range atts {
			batch.Queue(`INSERT INTO quarry_node_chunks(collection_id, doc_id, node_id, source_type, source_name, file) VALUES ($1, $2, $3, $4, $5, $6)
				ON CONFLICT (collection_id, doc_id) DO UPDATE SET node_id = excluded.node_id, source_type = excluded.source_type,
				source_name = excluded.source_name, file = excluded.file`, cid, a.DocID, a.NodeID, a.Source.Type, a.Source.Name, a.File)
		}
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return fmt.Errorf("attach: %w", err)
		}
		return nil
	})
}

// Links implements store.HierarchyStore.
func (b *Backend) Links(ctx context.Context, coll string) ([]store.Link, error) {
	cid, err := b.hierCollectionID(ctx, b.db, coll)
	if err != nil {
		return nil, err
	}
	rows, err := b.db.Query(ctx, `SELECT from_id, to_id, type, weight, evidence FROM quarry_node_links WHERE collection_id = $1 ORDER BY from_id, to_id, type COLLATE "C"`, cid)
	if err != nil {
		return nil, fmt.Errorf("links of %q: %w", coll, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Link, error) {
		var l store.Link
		err := r.Scan(&l.From, &l.To, &l.Type, &l.Weight, &l.Evidence)
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("links of %q: %w", coll, err)
	}
	return out, nil
}

// PutLinks implements store.HierarchyStore.
func (b *Backend) PutLinks(ctx context.Context, coll string, links []store.Link, replace []string) error {
	return b.hierTx(ctx, coll, func(tx pgx.Tx, cid int) error {
		if len(replace) > 0 {
			if _, err := tx.Exec(ctx, `DELETE FROM quarry_node_links WHERE collection_id = $1 AND type = ANY($2)`, cid, replace); err != nil {
				return fmt.Errorf("clear links: %w", err)
			}
		}
		batch := &pgx.Batch{}
		for _, l := range links {
			batch.Queue(`INSERT INTO quarry_node_links(collection_id, from_id, to_id, type, weight, evidence) VALUES ($1, $2, $3, $4, $5, $6)
				ON CONFLICT (collection_id, from_id, to_id, type) DO UPDATE SET weight = excluded.weight, evidence = excluded.evidence`,
				cid, l.From, l.To, l.Type, l.Weight, l.Evidence)
		}
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return fmt.Errorf("put links: %w", err)
		}
		return nil
	})
}

var _ store.HierarchyStore = (*Backend)(nil)
