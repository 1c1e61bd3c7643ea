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

// GraphPending reports whether a loaded collection's graph is still on
// disk, not read yet.
func (b *Backend) GraphPending(name string) bool {
	b.mu.Lock()
	c := b.colls[name]
	b.mu.Unlock()
	if c == nil {
		return false
	}
	c.vecMu.Lock()
	defer c.vecMu.Unlock()
	return c.pending != nil
}
