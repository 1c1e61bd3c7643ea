package embedded

// SetBeforeLoad runs fn as each collection's load begins.
func (b *Backend) SetBeforeLoad(fn func(name string)) { b.beforeLoad = fn }

// ToStorage and Hydrate are the metadata storage rules the conformance
// cases check (toStorage, hydrate).
var (
	ToStorage = toStorage
	Hydrate   = hydrate
)
