// Package atomicfile replaces files so that a crash leaves either the old content or
// all of the new one, never a part: the content goes to a temporary file in the same
// directory, which is synced, closed and renamed over the target, and then the
// directory is synced so the rename itself survives a power cut.
//
// It is the one copy for server, its sub-packages and cli. The leaves (store,
// imagestore) may not import it and keep one private copy each.
package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
)

// DefaultPattern names temporary files (os.CreateTemp); backups and the start-up
// sweeps leave files starting with ".tmp-" out.
const DefaultPattern = ".tmp-*"

// Options say how the temporary file is named. Both are in the target's directory.
type Options struct {
	// Pattern is the os.CreateTemp pattern of a fresh temporary name; DefaultPattern
	// when empty.
	Pattern string
	// Temp, when set, is the temporary file's exact name instead, created or
	// truncated: a name that a later run reuses, so that a run cut off by a power cut
	// leaves one stale file rather than one per run.
	Temp string
}

// File is a replacement of a file in progress: write to it, then Commit or Abort.
// It is created with mode 0600.
type File struct {
	*os.File
	path string
	done bool
}

// Create starts replacing path.
func Create(path string, opts Options) (*File, error) {
	dir := filepath.Dir(path)
	var (
		f   *os.File
		err error
	)
	if opts.Temp != "" {
		f, err = os.OpenFile(filepath.Join(dir, filepath.Base(opts.Temp)), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
		if err == nil {
			// A stale temporary file keeps its mode through O_TRUNC.
			if err = f.Chmod(0o600); err != nil {
				_ = f.Close() // the chmod error is the one to report
			}
		}
	} else {
		pattern := opts.Pattern
		if pattern == "" {
			pattern = DefaultPattern
		}
		f, err = os.CreateTemp(dir, pattern) // 0600 already
	}
	if err != nil {
		return nil, err
	}
	return &File{File: f, path: path}, nil
}

// Commit syncs the file, renames it over the target and syncs the directory. On an
// error the temporary file is removed and the target keeps its old content (unless
// only the directory sync failed: then the new content is in place but may not
// survive a crash).
func (f *File) Commit() error {
	if f.done {
		return errors.New("atomicfile: " + f.path + " was already committed or aborted")
	}
	f.done = true
	tmp := f.Name()
	err := f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, f.path)
	}
	if err != nil {
		_ = os.Remove(tmp) // err is the one to report
		return err
	}
	return SyncDir(filepath.Dir(f.path))
}

// Abort closes and removes the temporary file; after Commit it does nothing.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	_ = f.Close()           // the data is being thrown away
	_ = os.Remove(f.Name()) // a leftover temporary file is swept at start-up
}

// Write replaces path with what fill writes and returns the size written.
func Write(path string, opts Options, fill func(io.Writer) error) (size int64, err error) {
	f, err := Create(path, opts)
	if err != nil {
		return 0, err
	}
	if err := fill(f); err != nil {
		f.Abort()
		return 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Abort()
		return 0, err
	}
	if err := f.Commit(); err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// WriteFile replaces path with data.
func WriteFile(path string, data []byte, opts Options) error {
	_, err := Write(path, opts, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	return err
}

// SyncDir makes the entries of dir (a new file, a rename, a removal) durable.
func SyncDir(dir string) error {
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
