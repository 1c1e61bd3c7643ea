package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/quarry-rag/quarry/document"
)

// Hierarchy errors callers branch on.
var (
	// ErrNodeNotFound is returned when a hierarchy node id is unknown.
	ErrNodeNotFound = errors.New("node not found")
	// ErrFolderTaken is returned when a node would take a folder another
	// node of the collection has, or would be a second root: two builds
	// racing cannot make a node twice.
	ErrFolderTaken = errors.New("another node has this folder")
)

// Node kinds of the knowledge hierarchy (SEMANTICS §6).
const (
	NodeRoot           = "root"
	NodeFundamental    = "fundamental"    // a top-level folder
	NodeSpecialization = "specialization" // a deeper folder
)

// Node is one node of a collection's knowledge hierarchy. Package
// hierarchy owns the rules (paths, names, triggers); a store keeps the
// rows.
type Node struct {
	// ID is assigned by the store on insert and is > 0.
	ID int64 `json:"id"`
	// ParentID is 0 for the root.
	ParentID int64  `json:"parent_id"`
	Kind     string `json:"kind"`
	Name     string `json:"name"`
	// Path is the parent's path + "/" + Name.
	Path string `json:"path"`
	// Folder is the '/'-separated folder, relative to the ingested roots,
	// the node was made from; "" for the root and nodes made by hand.
	Folder   string   `json:"folder,omitempty"`
	Triggers []string `json:"triggers"`
}

// Attachment places one chunk (a document of the collection) under a node.
// A chunk belongs to at most one node.
type Attachment struct {
	DocID  string          `json:"doc_id"`
	NodeID int64           `json:"node_id"`
	Source document.Source `json:"source"`
	// File is the absolute path the chunk was read from, "" when unknown
	// (chunks added by hand), so an audit can tell a source is gone.
	File string `json:"file,omitempty"`
}

// Link types.
const (
	LinkTagOverlap = "tag_overlap" // Jaccard overlap of two nodes' triggers
	LinkCrossRef   = "cross_ref"   // chunks of one source under both nodes
	LinkSemantic   = "semantic"    // made by hand or by a model
)

// Link joins two nodes. Links are stored once per (From, To, Type) and
// read as undirected.
type Link struct {
	From     int64   `json:"from"`
	To       int64   `json:"to"`
	Type     string  `json:"type"`
	Weight   float64 `json:"weight"`
	Evidence string  `json:"evidence"`
}

// HierarchyStore is implemented by backends that keep a knowledge
// hierarchy per collection. Every method returns ErrCollectionNotFound for
// an unknown collection; dropping a collection drops its hierarchy.
type HierarchyStore interface {
	// Nodes returns the collection's nodes ordered by id.
	Nodes(ctx context.Context, coll string) ([]Node, error)
	// PutNodes inserts the nodes with ID 0 and updates the others, all or
	// none (ErrNodeNotFound for an unknown id, ErrFolderTaken for a
	// non-empty Folder another node has or a second root), and returns
	// them with their ids.
	PutNodes(ctx context.Context, coll string, nodes []Node) ([]Node, error)
	// DeleteNodes removes nodes with their attachments and every link
	// touching them, and returns how many nodes were removed; unknown ids
	// are skipped. It does not look at children: callers remove bottom-up.
	DeleteNodes(ctx context.Context, coll string, ids []int64) (int, error)
	// Attachments returns the collection's attachments ordered by doc id.
	Attachments(ctx context.Context, coll string) ([]Attachment, error)
	// Attach removes the attachments of the detach doc ids, then inserts or
	// replaces atts (by doc id), in one transaction.
	Attach(ctx context.Context, coll string, atts []Attachment, detach []string) error
	// Links returns the collection's links ordered by (From, To, Type).
	Links(ctx context.Context, coll string) ([]Link, error)
	// PutLinks removes every link whose type is in replace, then inserts or
	// replaces links (by From, To, Type), in one transaction: a rebuild is
	// PutLinks(all, the rebuilt types).
	PutLinks(ctx context.Context, coll string, links []Link, replace []string) error
}

// CheckPutNodes applies PutNodes' rules for stores that keep the rows
// themselves (the SQL stores have a unique index instead): every non-zero
// id must be stored (ErrNodeNotFound), and each folder, and the root, has
// one node, among the stored nodes and the batch (ErrFolderTaken). have
// is every stored node of the collection.
func CheckPutNodes(have, nodes []Node) error {
	key := func(n Node) string {
		if n.Kind == NodeRoot {
			return "\x00root"
		}
		return n.Folder
	}
	stored := make(map[int64]bool, len(have))
	folders := map[string]int64{}
	for _, n := range have {
		stored[n.ID] = true
		if k := key(n); k != "" {
			folders[k] = n.ID
		}
	}
	for _, n := range nodes {
		if n.ID != 0 && !stored[n.ID] {
			return fmt.Errorf("%w: %d", ErrNodeNotFound, n.ID)
		}
		k := key(n)
		if k == "" {
			continue
		}
		if id, ok := folders[k]; ok && (n.ID == 0 || id != n.ID) {
			return fmt.Errorf("%w: %q", ErrFolderTaken, n.Folder)
		}
		folders[k] = n.ID
		if n.ID == 0 {
			folders[k] = -1 // a second new node of this folder is refused too
		}
	}
	return nil
}

// Hierarchy returns the store's knowledge hierarchy, or ErrUnsupported.
func (s *Store) Hierarchy() (HierarchyStore, error) {
	hs, ok := s.b.(HierarchyStore)
	if !ok {
		return nil, fmt.Errorf("%w: this store does not keep a knowledge hierarchy", ErrUnsupported)
	}
	return hs, nil
}

// IndexState says whether a collection's derived indexes on disk reflect
// its rows.
type IndexState struct {
	Collection string `json:"collection"`
	// Seq is the sequence number of the collection's last write;
	// CheckpointSeq the one the checkpoint on disk reflects (0 when there
	// is none).
	Seq           int64 `json:"seq"`
	CheckpointSeq int64 `json:"checkpoint_seq"`
	// Stale is set when the checkpoint is missing, unreadable or behind
	// the rows; Reason says which.
	Stale  bool   `json:"stale"`
	Reason string `json:"reason,omitempty"`
}

// IndexMaintainer is implemented by backends whose indexes are derived
// caches checkpointed beside the data (the embedded store).
type IndexMaintainer interface {
	// IndexStates reports every collection's checkpoint, sorted by name.
	IndexStates(ctx context.Context) ([]IndexState, error)
	// RebuildIndexes brings the collection's indexes up to its rows and
	// writes a fresh checkpoint.
	RebuildIndexes(ctx context.Context, coll string) error
}
