//go:build unix

package cli

import (
	"os"
	"syscall"
)

// fileID is the device and inode of f.
func fileID(f *os.File) (dev, ino uint64, ok bool) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return 0, 0, false
	}
	return uint64(st.Dev), uint64(st.Ino), true
}
