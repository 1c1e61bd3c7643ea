package server_test

import (
	"syscall"
	"testing"
)

// needFDs raises the soft limit on open files to need, up to the hard
// limit, or skips the test: a flood holds both ends of every connection.
func needFDs(t *testing.T, need uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("open-file limit: %v", err)
	}
	if lim.Cur >= need {
		return
	}
	if lim.Max < need {
		t.Skipf("needs %d open files; the hard limit is %d (raise it with ulimit -Hn)", need, lim.Max)
	}
	old := lim
	lim.Cur = need
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("needs %d open files; raising the limit from %d: %v", need, old.Cur, err)
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })
}
