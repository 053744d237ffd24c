//go:build !unix

package plantmap

import "os"

// mediaOpenFlags: the checks before and after the open (Lstat, the opened file's
// Stat) are what keeps to regular files here.
const mediaOpenFlags = os.O_RDONLY
