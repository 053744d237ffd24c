//go:build unix

package plantmap

import "syscall"

// mediaOpenFlags open an image for reading without following a symlink in its place
// and without waiting for a writer (a FIFO), or taking a terminal as the controlling
// one.
const mediaOpenFlags = syscall.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_NOCTTY
