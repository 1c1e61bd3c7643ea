package embedded

// SetBeforeLoad runs fn as each collection's load begins.
func (b *Backend) SetBeforeLoad(fn func(name string)) { b.beforeLoad = fn }
