//go:build !linux

package store_test

import "time"

// cpuTime is unavailable here; benchmarks then report 0 cpu-ms/op.
func cpuTime() time.Duration { return 0 }
