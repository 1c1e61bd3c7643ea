//go:build unix

package embedded

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// LockIngest implements store.IngestLocker with an advisory lock file per
// collection (locks/ingest-<name>.lock beside the database), held until
// unlock or until the process dies, so a killed ingestion never leaves it
// taken. A second ingestion of the collection, in this process or another,
// waits for the first; it then finds what the first wrote unchanged.
func (b *Backend) LockIngest(ctx context.Context, collection string) (func(), error) {
	dir := filepath.Join(b.dir, "locks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("ingestion lock: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "ingest-"+lockName(collection)+".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("ingestion lock: %w", err)
	}
	logged := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("ingestion lock: %w", err)
		}
		if !logged {
			b.log.Info("embedded store: another ingestion of this collection is running; waiting for it", "collection", collection)
			logged = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
