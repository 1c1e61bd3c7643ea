package load

// heapMemory is a linear memory on the Go heap, for systems without mmap
// or when a mapping fails; it grows by copying, as wazero's own does.
type heapMemory struct {
	buf []byte
	max uint64
}

func (m *heapMemory) Reallocate(size uint64) []byte {
	if m.max > 0 && size > m.max {
		return nil
	}
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
		return m.buf
	}
	nb := make([]byte, size, min(max(size, 2*uint64(cap(m.buf))), max(m.max, size)))
	copy(nb, m.buf)
	m.buf = nb
	return m.buf
}

func (m *heapMemory) Free() { m.buf = nil }
