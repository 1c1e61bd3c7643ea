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

// sweepMinAge is how long a temporary checkpoint must have been left
// untouched before sweepTemporary removes it. With flock the checkpoint
// lock tells a live writer from a dead one, so no age is needed.
const sweepMinAge = 0

// lockCheckpoints takes a collection's checkpoint lock file
// (locks/checkpoint-<name>.lock beside the database). A checkpoint writer
// holds it shared from creating its temporary files until they are
// renamed into place, so writers never wait for one another; the sweep of
// leftovers takes it exclusive without waiting, and ok is false (nothing
// taken) while any writer, in this process or another, holds it. The lock
// goes when its holder's process dies, so a crashed writer never keeps its
// leftovers from being swept.
func (b *Backend) lockCheckpoints(collection string, sweep bool) (unlock func(), ok bool, err error) {
	dir := filepath.Join(b.dir, "locks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, false, fmt.Errorf("checkpoint lock: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "checkpoint-"+lockName(collection)+".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, false, fmt.Errorf("checkpoint lock: %w", err)
	}
	how := syscall.LOCK_SH
	if sweep {
		how = syscall.LOCK_EX | syscall.LOCK_NB
	}
	for {
		err = syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	switch {
	case sweep && errors.Is(err, syscall.EWOULDBLOCK):
		f.Close()
		return nil, false, nil
	case err != nil:
		f.Close()
		return nil, false, fmt.Errorf("checkpoint lock: %w", err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, true, nil
}
