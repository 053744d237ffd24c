//go:build !linux

package store

// lowerThreadPriority does nothing where priorities are per process, not per thread.
func lowerThreadPriority() error { return nil }
