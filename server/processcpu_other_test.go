//go:build !linux

package server_test

import "time"

// processCPU is unavailable here; benchmarks then report 0 cpu-ns.
func processCPU() time.Duration { return 0 }
