//go:build unix

package hnsw

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// minRowMap is the smallest mapping a row file makes, so a growing index
// remaps a handful of times rather than once per node.
const minRowMap = 1 << 20

// rowFile holds an index's float32 rows in a memory-mapped scratch file
// instead of the Go heap. The pages are the kernel's page cache: they stay
// resident while memory allows and are written back and dropped under
// pressure, to be read again when a search re-scores their nodes. The file
// is unlinked as soon as it is created, so its space returns to the file
// system when it closes, even if the process dies.
type rowFile struct {
	mu     sync.Mutex // guards mem and closed against a cleanup racing Close
	f      *os.File
	mem    []byte // the mapping: the whole file
	closed bool
}

func newRowFile(dir string) (*rowFile, error) {
	f, err := os.CreateTemp(dir, "quarry-hnsw-*.f32")
	if err != nil {
		return nil, fmt.Errorf("hnsw: vector file: %w", err)
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, fmt.Errorf("hnsw: vector file: %w", err)
	}
	return &rowFile{f: f}, nil
}

// reserve makes room for n float32 values and returns them, the first n
// of the file. Growing maps the larger file anew and drops the old mapping;
// both view the same file, so nothing is copied. The blocks are allocated
// before they are mapped: a write to a page a full disk cannot hold would
// otherwise kill the process with SIGBUS instead of returning an error.
func (r *rowFile) reserve(n int) ([]float32, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	need := n * 4
	if need > len(r.mem) {
		page := os.Getpagesize()
		size := max(need, 2*len(r.mem), minRowMap)
		size = (size + page - 1) / page * page
		if err := allocate(r.f, int64(size)); err != nil {
			return nil, fmt.Errorf("hnsw: vector file: reserving %d bytes: %w", size, err)
		}
		mem, err := unix.Mmap(int(r.f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			return nil, fmt.Errorf("hnsw: vector file: mapping %d bytes: %w", size, err)
		}
		if r.mem != nil {
			if err := unix.Munmap(r.mem); err != nil {
				unix.Munmap(mem)
				return nil, fmt.Errorf("hnsw: vector file: %w", err)
			}
		}
		r.mem = mem
	}
	if n == 0 {
		return nil, nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(r.mem))), n), nil
}

// writeAt writes raw rows at byte offset off through the file rather than
// the mapping: filling pages by write costs no page faults, where a copy
// into fresh mapped pages faults on every one of them (on a graph read
// from disk, a third of the read).
func (r *rowFile) writeAt(p []byte, off int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	if _, err := r.f.WriteAt(p, off); err != nil {
		return fmt.Errorf("hnsw: vector file: %w", err)
	}
	return nil
}

// close unmaps and closes the file; later calls do nothing.
func (r *rowFile) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	var err error
	if r.mem != nil {
		err = unix.Munmap(r.mem)
		r.mem = nil
	}
	return errors.Join(err, r.f.Close())
}
