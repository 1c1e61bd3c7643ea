//go:build !unix

package embedded

import "context"

// LockIngest implements store.IngestLocker; without flock, ingestions of
// one collection are not serialised across processes on this system.
func (b *Backend) LockIngest(context.Context, string) (func(), error) { return func() {}, nil }
