package load

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// opener opens a listed file the way the listing checked it. A file found
// by walking a folder is opened through that folder's os.Root, which no
// symbolic link or ".." can lead out of, whatever was swapped in since the
// walk. A file given as a root itself is opened at the path its links
// resolved to when it was listed, without following a link in its last
// element, and must still be the file that was listed.
type opener struct {
	root   *os.Root    // the walked folder; nil for a file root
	rel    string      // the path below root
	real   string      // a file root's resolved path; empty to open the path read is given
	listed os.FileInfo // a file root as it was listed; nil when unknown
}

// read returns the file's bytes, refusing one larger than limit.
func (o opener) read(p string, limit int64) ([]byte, error) {
	var f *os.File
	var err error
	switch {
	case o.root != nil:
		f, err = o.root.Open(o.rel)
		if err != nil && isEscape(err) {
			return nil, fmt.Errorf("the path now leads outside the folder it was listed in (a symbolic link replaced it); not read")
		}
	default:
		at := p
		if o.real != "" {
			at = o.real
		}
		f, err = os.OpenFile(at, os.O_RDONLY|oNoFollow, 0)
		if isLoop(err) {
			return nil, fmt.Errorf("the file became a symbolic link after it was listed; not read")
		}
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if o.listed != nil && !os.SameFile(o.listed, st) {
		return nil, fmt.Errorf("the file was replaced after it was listed; not read (run again to read the new one)")
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: not a regular file", ErrSkipped)
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%w: %d bytes is above the %d-byte limit", ErrSkipped, st.Size(), limit)
	}
	// Read at most one byte past the limit, so a file that grows while
	// being read cannot take more memory than the limit allows.
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: the file grew above the %d-byte limit while it was read", ErrSkipped, limit)
	}
	return data, nil
}

// isEscape reports whether an os.Root refused a path for leaving the root.
func isEscape(err error) bool {
	var pe *os.PathError
	return errors.As(err, &pe) && pe.Err != nil && pe.Err.Error() == "path escapes from parent"
}
