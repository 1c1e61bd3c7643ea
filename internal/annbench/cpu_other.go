//go:build !unix

package annbench

import "time"

// cpuTime is unavailable here; CPU-time figures come out as zero.
func cpuTime() time.Duration { return 0 }
