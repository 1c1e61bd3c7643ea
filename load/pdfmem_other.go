//go:build !unix

package load

import "github.com/tetratelabs/wazero/experimental"

// pdfMemory hands PDFium instances their linear memories; without mmap
// they are Go memory that grows by copying, as wazero's own does.
type pdfMemory struct{}

func (*pdfMemory) allocate(_, max uint64) experimental.LinearMemory { return &heapMemory{max: max} }

func (*pdfMemory) close() {}
