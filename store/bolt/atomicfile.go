package bolt

import (
	"io"
	"os"
	"path/filepath"
)

// The store's one private copy of server/atomicfile, which it may not import (the
// leaves import no other gardend package): a file written whole or not at all.

// writeFileAtomic replaces path with what fill writes: under a temporary name made
// from pattern (os.CreateTemp), synced, renamed, and the directory synced.
func writeFileAtomic(path, pattern string, fill func(io.Writer) error) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = fill(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp) // err is the one to report
		return err
	}
	return syncDir(dir)
}

// syncDir makes a directory's entries (a new file, a rename) durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
