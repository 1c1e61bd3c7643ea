//go:build unix && !linux

package hnsw

import "os"

// allocate extends f to size bytes; without fallocate the extension is
// sparse, so a full disk shows as a fault on first write, as with any
// mapped file on these systems.
func allocate(f *os.File, size int64) error { return f.Truncate(size) }
