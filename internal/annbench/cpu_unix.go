//go:build unix

package annbench

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user + system) the process has used. On a shared
// machine it measures work done, where wall time also counts the time other
// processes held the cores.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
