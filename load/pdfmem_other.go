//go:build !unix

package load

import "github.com/tetratelabs/wazero/experimental"

func allocatePDFMemory(_, max uint64) experimental.LinearMemory { return &heapMemory{max: max} }
