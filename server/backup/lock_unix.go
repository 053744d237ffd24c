//go:build unix

package backup

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockDir takes an exclusive lock on dir for one restore, resume or rollback at a
// time; the kernel drops it when the process dies, so a kill leaves no stale lock.
func lockDir(dir string) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close() // the lock file holds no data
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w %s; wait for it to finish", ErrBusy, dir)
		}
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return func() { _ = f.Close() }, nil // closing releases the lock; the file holds no data
}
