//go:build unix

package load

import (
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// mmapMemory backs one PDFium instance's linear memory with an anonymous
// mapping reserved at its maximum size. Only the pages PDFium touches take
// physical memory, the base address never moves (so growing never copies),
// and Free unmaps it: a retired instance gives its memory straight back to
// the system instead of leaving a large Go allocation for the collector.
type mmapMemory struct {
	buf []byte
}

func allocatePDFMemory(_, max uint64) experimental.LinearMemory {
	if max == 0 {
		return &heapMemory{}
	}
	b, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|mapNoReserve)
	if err != nil {
		return &heapMemory{max: max}
	}
	return &mmapMemory{buf: b}
}

func (m *mmapMemory) Reallocate(size uint64) []byte {
	if m.buf == nil || size > uint64(len(m.buf)) {
		return nil
	}
	return m.buf[:size:size]
}

func (m *mmapMemory) Free() {
	if m.buf != nil {
		_ = syscall.Munmap(m.buf)
		m.buf = nil
	}
}
