//go:build !linux

package metrics

// writeProcess writes nothing where there is no /proc: the process families are
// Linux's.
func writeProcess(*expo) {}
