package hnsw

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// allocate gives f at least size bytes of allocated blocks, falling back to
// a sparse extension where the file system cannot allocate ahead.
func allocate(f *os.File, size int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return f.Truncate(size)
	}
	return err
}
