//go:build !linux

package backup_test

import "time"

// cpuTime is unavailable here; benchmarks then report 0 cpu-ms/op.
func cpuTime() time.Duration { return 0 }
