package imagestore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Sweep deletes what crashes and failed uploads leave behind: every temporary file,
// and every image whose path keep rejects (keep says whether a record references the
// path). Other files and all directories are left alone. It returns the image paths
// it removed, temporary files included (as "<prefix>/.tmp-…"), and keeps going past
// errors, returning them joined.
//
// Sweep assumes nothing else writes the directory while it runs: a single process
// owns the data directory, and that process calls Sweep at start-up, before serving.
// Run later, it could delete a temporary file an upload is writing, or a new image
// whose record is not committed yet.
func (s *Store) Sweep(keep func(rel string) bool) (removed []string, err error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("sweep images: %w", err)
	}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() {
			continue
		}
		rel := s.prefix + "/" + name
		switch {
		case strings.HasPrefix(name, tempPrefix):
		case s.isName(name) && !keep(rel):
		default:
			continue
		}
		if err := os.Remove(filepath.Join(s.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("sweep images: %w", err))
			continue
		}
		removed = append(removed, rel)
	}
	return removed, errors.Join(errs...)
}
