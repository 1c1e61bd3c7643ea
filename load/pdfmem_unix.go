//go:build unix

package load

import (
	"golang.org/x/sys/unix"
	"sync"
	"time"

	"github.com/tetratelabs/wazero/experimental"
)

// pdfMemory hands PDFium instances their linear memories: anonymous
// mappings reserved at the budget. Only the pages PDFium touches take
// physical memory, and the base address never moves, so growing never
// copies. When an instance goes, its pages are given straight back to the
// system (MADV_DONTNEED), but the mapping itself is kept: an instance
// killed in the middle of a call may still touch it until the runtime
// closes the module, and an unmapped page would crash the process there.
// A kept mapping is reused for a new instance once it has rested for
// pdfMemoryRest, and all are unmapped when the reader closes.
type pdfMemory struct {
	mu      sync.Mutex
	resting []restingMemory
	closed  bool
}

type restingMemory struct {
	buf   []byte
	since time.Time
}

// pdfMemoryRest is how long a freed mapping waits before reuse: far more
// than a killed call takes to reach the runtime's next check and stop.
const pdfMemoryRest = 30 * time.Second

func (p *pdfMemory) allocate(_, max uint64) experimental.LinearMemory {
	if max == 0 {
		return &heapMemory{}
	}
	p.mu.Lock()
	for i, m := range p.resting {
		if uint64(len(m.buf)) == max && time.Since(m.since) >= pdfMemoryRest {
			p.resting = append(p.resting[:i], p.resting[i+1:]...)
			p.mu.Unlock()
			return &mmapMemory{buf: m.buf, pool: p}
		}
	}
	p.mu.Unlock()
	b, err := unix.Mmap(-1, 0, int(max), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON|mapNoReserve)
	if err != nil {
		return &heapMemory{max: max}
	}
	return &mmapMemory{buf: b, pool: p}
}

// release takes back a mapping whose instance is gone: its pages go back
// to the system now (and read as zero if touched again), the address range
// rests for reuse.
func (p *pdfMemory) release(b []byte) {
	_ = unix.Madvise(b, unix.MADV_DONTNEED)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = unix.Munmap(b)
		return
	}
	p.resting = append(p.resting, restingMemory{buf: b, since: time.Now()})
}

// close unmaps the resting mappings; the engine has stopped, so nothing
// can touch them any more.
func (p *pdfMemory) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, m := range p.resting {
		_ = unix.Munmap(m.buf)
	}
	p.resting = nil
}

// mmapMemory is one instance's linear memory in a pdfMemory mapping.
type mmapMemory struct {
	buf  []byte
	pool *pdfMemory
}

func (m *mmapMemory) Reallocate(size uint64) []byte {
	if m.buf == nil || size > uint64(len(m.buf)) {
		return nil
	}
	return m.buf[:size:size]
}

func (m *mmapMemory) Free() {
	if m.buf != nil {
		m.pool.release(m.buf)
		m.buf = nil
	}
}
