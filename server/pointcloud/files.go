package pointcloud

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/server/atomicfile"
	"github.com/gardend/gardend/spatial/cloud"
	"github.com/gardend/gardend/store"
)

// DirName is the directory of kept point clouds inside the data directory:
// pointclouds/<project uuid>/<cloud geometry uuid>.ply.
const DirName = "pointclouds"

// ContentType is the media type of the kept clouds (PLY has no registered type; this
// is the one viewers and loaders recognise).
const ContentType = "application/x-ply"

const tempPrefix = ".tmp-"

// ErrNotKept: the cloud has no PLY file here (not downloaded yet, evicted, or its
// project deleted). It wraps fs.ErrNotExist.
var ErrNotKept = fmt.Errorf("point cloud not kept: %w", fs.ErrNotExist)

// Files are the kept PLY files of a data directory. Files the pool writes or reads
// count against the disk budget (Config.MaxBytes); what one pass over a kept cloud
// tells is cached. A Files is safe for concurrent use.
type Files struct {
	dir       string
	budget    *budget // nil without a limit
	statCache statsCache
}

// NewFiles is the pointclouds/ directory of dataDir, kept within maxBytes (0: no
// limit).
func NewFiles(dataDir string, maxBytes int64, log zerolog.Logger) *Files {
	dir := filepath.Join(dataDir, DirName)
	return &Files{dir: dir, budget: newBudget(dir, maxBytes, log)}
}

// Path is where a cloud is kept. Cloud uuids come from the spatial server, so both
// uuids are checked to be plain path elements before they become a path.
func (f *Files) Path(project, cloudUUID string) (string, error) {
	if !store.ValidUUID(project) || !store.ValidUUID(cloudUUID) {
		return "", fmt.Errorf("%w: project %q or cloud %q is not a uuid", store.ErrInvalid, project, cloudUUID)
	}
	return filepath.Join(f.dir, project, cloudUUID+".ply"), nil
}

// Open opens a kept cloud to serve it, with its size and time: ErrNotKept when there
// is none, store.ErrInvalid when a uuid cannot name a file.
func (f *Files) Open(project, cloudUUID string) (*os.File, fs.FileInfo, error) {
	path, err := f.Path(project, cloudUUID)
	if err != nil {
		return nil, nil, err
	}
	file, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, ErrNotKept
	} else if err != nil {
		return nil, nil, err
	}
	st, err := file.Stat()
	if err != nil {
		_ = file.Close() // read only
		return nil, nil, err
	}
	return file, st, nil
}

// Kept reports whether the cloud has a file here.
func (f *Files) Kept(project, cloudUUID string) bool {
	path, err := f.Path(project, cloudUUID)
	if err != nil {
		return false
	}
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// write keeps pc as binary PLY, atomically (a crash never leaves a half-written cloud
// under the real name), and accounts it against the budget.
func (f *Files) write(path string, pc cloud.PointCloud) (size int64, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return 0, err
	}
	size, err = atomicfile.Write(path, atomicfile.Options{Pattern: tempPrefix + "*.ply"}, func(w io.Writer) error {
		return cloud.WritePLY(w, pc)
	})
	if err == nil {
		f.budget.added(size)
	}
	return size, err
}

// read reads a kept cloud; fs.ErrNotExist when there is none.
func (f *Files) read(path string) (cloud.PointCloud, int64, error) {
	file, err := os.Open(path)
	if err != nil {
		return cloud.PointCloud{}, 0, err
	}
	defer func() { _ = file.Close() }() // read only
	st, err := file.Stat()
	if err != nil {
		return cloud.PointCloud{}, 0, err
	}
	pc, err := cloud.ReadPLY(file)
	return pc, st.Size(), err
}

// RemoveProject deletes the clouds kept for a project.
func (f *Files) RemoveProject(project string) error {
	if !store.ValidUUID(project) {
		return fmt.Errorf("%w: project %q is not a uuid", store.ErrInvalid, project)
	}
	return os.RemoveAll(filepath.Join(f.dir, project))
}

// Count counts the regular files under the directory.
func (f *Files) Count() int {
	n := 0
	_ = filepath.WalkDir(f.dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			n++
		}
		return nil
	})
	return n
}

// Referrers is what the sweep asks the store: the projects a bed or a queued download
// refers to.
type Referrers interface {
	Beds() ([]store.Bed, error)
	CloudJobs() ([]store.CloudJob, error)
}

// Sweep deletes temporary files of interrupted writes, and the clouds of projects
// that no bed and no queued download refers to: a crash between a deletion's commit
// and its clean-up leaves them, and so does a bed removed by a process that could not
// delete its files. It leaves alone what is not named as a project. It returns the
// projects whose clouds it deleted. Call it before the pool runs, and never while a
// restore may be moving the files.
func (f *Files) Sweep(st Referrers) (orphans []string, err error) {
	projects, err := os.ReadDir(f.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	keep, err := referenced(st)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, p := range projects {
		if !p.IsDir() || !store.ValidUUID(p.Name()) {
			continue
		}
		if !keep[p.Name()] {
			if err := f.RemoveProject(p.Name()); err != nil {
				errs = append(errs, err)
			} else {
				orphans = append(orphans, p.Name())
			}
			continue
		}
		files, err := os.ReadDir(filepath.Join(f.dir, p.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, file := range files {
			if strings.HasPrefix(file.Name(), tempPrefix) {
				errs = append(errs, os.Remove(filepath.Join(f.dir, p.Name(), file.Name())))
			}
		}
	}
	return orphans, errors.Join(errs...)
}

// referenced are the projects a bed or a queued download refers to.
func referenced(st Referrers) (map[string]bool, error) {
	beds, err := st.Beds()
	if err != nil {
		return nil, err
	}
	jobs, err := st.CloudJobs()
	if err != nil {
		return nil, err
	}
	keep := make(map[string]bool, len(beds))
	for _, b := range beds {
		keep[b.UUID] = true
	}
	for _, j := range jobs {
		keep[j.Project] = true
	}
	return keep, nil
}
