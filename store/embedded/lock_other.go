//go:build !unix

package embedded

import (
	"context"
	"time"
)

// LockIngest implements store.IngestLocker; without flock, ingestions of
// one collection are not serialised across processes on this system.
func (b *Backend) LockIngest(context.Context, string) (func(), error) { return func() {}, nil }

// sweepMinAge is how long a temporary checkpoint must have been left
// untouched before sweepTemporary removes it. Without flock nothing tells
// a live writer in another process from a dead one; a writer touches its
// files as it goes, so one untouched for an hour is taken for a crash's.
const sweepMinAge = time.Hour

// lockCheckpoints takes nothing on this system (see sweepMinAge).
func (b *Backend) lockCheckpoints(string, bool) (unlock func(), ok bool, err error) {
	return func() {}, true, nil
}
