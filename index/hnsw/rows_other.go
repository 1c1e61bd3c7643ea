//go:build !unix

package hnsw

import (
	"errors"
	"fmt"
)

// rowFile is unavailable without mmap: MapVectors refuses.
type rowFile struct{}

func newRowFile(string) (*rowFile, error) {
	return nil, fmt.Errorf("hnsw: vector file: %w on this system", errors.ErrUnsupported)
}

func (*rowFile) reserve(int) ([]float32, error) { return nil, errors.ErrUnsupported }
func (*rowFile) writeAt([]byte, int64) error    { return errors.ErrUnsupported }
func (*rowFile) close() error                   { return nil }
