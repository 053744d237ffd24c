package server

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gardend/gardend/server/atomicfile"
	"github.com/gardend/gardend/server/backup"
	"github.com/gardend/gardend/spatial/cloud"
	"github.com/gardend/gardend/store"
)

// PointCloudDirName is the directory of downloaded point clouds inside the data
// directory: pointclouds/<project uuid>/<cloud geometry uuid>.ply.
const PointCloudDirName = "pointclouds"

const plyTempPrefix = ".tmp-"

// plyPath is where a cloud is kept. Cloud uuids come from the spatial server, so both
// uuids are checked to be plain path elements before they become a path.
func plyPath(dir, project, cloudUUID string) (string, error) {
	if !store.ValidUUID(project) || !store.ValidUUID(cloudUUID) {
		return "", fmt.Errorf("%w: project %q or cloud %q is not a uuid", store.ErrInvalid, project, cloudUUID)
	}
	return filepath.Join(dir, project, cloudUUID+".ply"), nil
}

// writePLYFile writes pc as binary PLY under a temporary name, syncs it and renames
// it into place, so a crash never leaves a half-written cloud under the real name.
func writePLYFile(path string, pc cloud.PointCloud) (size int64, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return 0, err
	}
	return atomicfile.Write(path, atomicfile.Options{Pattern: plyTempPrefix + "*.ply"}, func(w io.Writer) error {
		return cloud.WritePLY(w, pc)
	})
}

// readPLYFile reads a kept cloud; os.ErrNotExist when there is none.
func readPLYFile(path string) (cloud.PointCloud, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return cloud.PointCloud{}, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return cloud.PointCloud{}, 0, err
	}
	pc, err := cloud.ReadPLY(f)
	return pc, st.Size(), err
}

// removeProjectClouds deletes the clouds kept for a project.
func removeProjectClouds(dir, project string) error {
	if !store.ValidUUID(project) {
		return fmt.Errorf("%w: project %q is not a uuid", store.ErrInvalid, project)
	}
	return os.RemoveAll(filepath.Join(dir, project))
}

// sweepPointClouds runs before the download workers start. It deletes temporary files
// of interrupted writes, and the clouds of projects no bed refers to: a crash between a
// deletion's commit and its clean-up leaves them, and so does a bed removed by a
// process that could not delete its files. It deletes nothing while a restore is
// pending in the data directory (the files may be the restore's to move), nor a
// project the download queue holds, nor a directory that is not named as a project.
func (s *Server) sweepPointClouds() error {
	dir := filepath.Join(s.cfg.DataDir, PointCloudDirName)
	projects, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	// New opens the store only when no restore is pending (openStore); this guards
	// against one begun since.
	if in, err := backup.Inspect(s.cfg.DataDir); err != nil || in != nil {
		s.log.Warn().Err(err).Msg("a restore is pending in the data directory; point-cloud files are not swept")
		return nil
	}
	keep, err := s.referencedProjects()
	if err != nil {
		return err
	}
	var errs []error
	var orphans []string
	for _, p := range projects {
		if !p.IsDir() || !store.ValidUUID(p.Name()) {
			continue
		}
		if !keep[p.Name()] {
			if err := removeProjectClouds(dir, p.Name()); err != nil {
				errs = append(errs, err)
			} else {
				orphans = append(orphans, p.Name())
			}
			continue
		}
		files, err := os.ReadDir(filepath.Join(dir, p.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, f := range files {
			if strings.HasPrefix(f.Name(), plyTempPrefix) {
				errs = append(errs, os.Remove(filepath.Join(dir, p.Name(), f.Name())))
			}
		}
	}
	if len(orphans) > 0 {
		s.log.Info().Strs("projects", orphans).Msg("swept point clouds of projects no bed refers to")
	}
	return errors.Join(errs...)
}

// referencedProjects are the projects a bed or a queued download refers to.
func (s *Server) referencedProjects() (map[string]bool, error) {
	beds, err := s.store.Beds()
	if err != nil {
		return nil, err
	}
	jobs, err := s.store.CloudJobs()
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
