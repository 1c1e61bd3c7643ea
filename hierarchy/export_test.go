package hierarchy

import "github.com/quarry-rag/quarry/store"

// OpenOn is Open over a given hierarchy store, for tests that cut writes off.
func OpenOn(c *store.Collection, hs store.HierarchyStore) *Hierarchy {
	return &Hierarchy{coll: c, hs: hs}
}
