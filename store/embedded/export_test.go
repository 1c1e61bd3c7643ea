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
