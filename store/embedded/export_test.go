package embedded

// SetBeforeLoad runs fn as each collection's load begins.
func (b *Backend) SetBeforeLoad(fn func(name string)) { b.beforeLoad = fn }

// SetIndexOnly makes searches stop before reading rows: hits carry ids and
// scores only.
func (b *Backend) SetIndexOnly(on bool) { b.indexOnly = on }

// ToStorage and Hydrate are the metadata storage rules the conformance
// cases check (toStorage, hydrate).
var (
	ToStorage = toStorage
	Hydrate   = hydrate
)

// Pending reports whether a loaded collection's graph and keyword index
// are still on disk, not read yet.
func (b *Backend) Pending(name string) (graph, keyword bool) {
	b.mu.Lock()
	c := b.colls[name]
	b.mu.Unlock()
	if c == nil {
		return false, false
	}
	c.vecMu.Lock()
	graph = c.vecFile != nil
	c.vecMu.Unlock()
	c.kwMu.Lock()
	keyword = c.kwFile != nil
	c.kwMu.Unlock()
	return graph, keyword
}

// PendingMeta reports whether a collection's metadata postings are still
// undecoded.
func (b *Backend) PendingMeta(name string) bool {
	b.mu.Lock()
	c := b.colls[name]
	b.mu.Unlock()
	if c == nil {
		return false
	}
	c.metaMu.Lock()
	defer c.metaMu.Unlock()
	return c.metaFile != nil
}

// VectorsMapped reports whether a loaded collection's graph keeps its
// vectors in a mapped file; false while the graph is still on disk.
func (b *Backend) VectorsMapped(name string) bool {
	b.mu.Lock()
	c := b.colls[name]
	b.mu.Unlock()
	if c == nil {
		return false
	}
	c.vecMu.Lock()
	defer c.vecMu.Unlock()
	return c.vec != nil && c.vec.VectorsMapped()
}

// HoldCheckpointWrite takes a collection's checkpoint lock as a
// checkpoint writer does, until the returned func is called.
func (b *Backend) HoldCheckpointWrite(collection string) (func(), error) {
	unlock, _, err := b.lockCheckpoints(collection, false)
	return unlock, err
}

// MmapSizes are the memory-map sizes of a reader connection and of the
// connection whole-collection scans use.
func (b *Backend) MmapSizes() (reader, scan int64, err error) {
	if err := b.r.QueryRow(`PRAGMA mmap_size`).Scan(&reader); err != nil {
		return 0, 0, err
	}
	err = b.s.QueryRow(`PRAGMA mmap_size`).Scan(&scan)
	return reader, scan, err
}
