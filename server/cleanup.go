package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gardend/gardend/imagestore"
	"github.com/gardend/gardend/server/atomicfile"
	"github.com/gardend/gardend/server/backup"
	"github.com/gardend/gardend/store"
)

// DataIDFile, in the data directory, names the database whose files (images/,
// pointclouds/) lie beside it: store.DataID. The start-up sweeps delete files no record
// refers to only when it names the open database; backups and restores carry it with
// the files.
const DataIDFile = ".gardend-id"

// sweep runs the start-up sweeps, before serving, when the files beside the database
// are its own (ownsFiles); otherwise it leaves every file alone and says why.
func (s *Server) sweep(freshDB bool) error {
	owned, why, err := s.ownsFiles(freshDB)
	if err != nil {
		return fmt.Errorf("data directory identity: %w", err)
	}
	if !owned {
		s.log.Warn().Str("data", s.cfg.DataDir).Msg(why + "; the start-up sweep leaves every image and point-cloud file alone")
		return nil
	}
	if err := s.sweepImages(); err != nil {
		return fmt.Errorf("sweep images: %w", err)
	}
	if err := s.sweepPhotos(); err != nil {
		return fmt.Errorf("sweep photos: %w", err)
	}
	if err := s.sweepPointClouds(); err != nil {
		s.log.Warn().Err(err).Msg("sweep point-cloud files")
	}
	return nil
}

// ownsFiles decides whether the files beside the database are its own, so that a
// file none of its records refers to is a crash's leftover and may be deleted. Files
// of another generation of the data (beside a database moved away, lost, or put in by
// hand) are not: a database that never referred to them cannot tell which are needed.
//
//   - DataIDFile names the database: its own.
//   - DataIDFile names another database: not its own.
//   - no DataIDFile, and the database is new: its own when there are no files yet (the
//     file is written now); otherwise the files are another generation's, and stay so.
//   - no DataIDFile, and the database has just been given its id: a data directory of
//     a gardend from before DataIDFile existed: its own (the file is written now).
//   - no DataIDFile and no files: its own (a new node of a shared database).
//   - no DataIDFile otherwise: the database never claimed the files: not its own.
func (s *Server) ownsFiles(freshDB bool) (owned bool, why string, err error) {
	id, created, err := s.store.DataID()
	if err != nil {
		return false, "", err
	}
	path := filepath.Join(s.cfg.DataDir, DataIDFile)
	marker, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, "", err
	}
	claimed := strings.TrimSpace(string(marker))
	switch {
	case claimed == id:
		return true, "", nil
	case claimed != "":
		return false, fmt.Sprintf("%s names database %s, but the store is database %s: the files beside it are another database's", DataIDFile, oneLine(claimed), id), nil
	case freshDB:
		if n := s.countDataFiles(); n > 0 {
			return false, fmt.Sprintf("the database is new, but the data directory already holds %d image or point-cloud files of another: delete them by hand if they are not needed", n), nil
		}
	case !created && s.countDataFiles() > 0:
		return false, fmt.Sprintf("%s is missing: the database never claimed the files beside it; if they are its own, write %s into %s", DataIDFile, id, path), nil
	}
	if err := atomicfile.WriteFile(path, []byte(id+"\n"), atomicfile.Options{}); err != nil {
		return false, "", err
	}
	return true, "", nil
}

// countDataFiles counts the regular files under images/, photos/ and pointclouds/.
func (s *Server) countDataFiles() int {
	n := 0
	for _, dir := range []string{ImageDirName, store.PhotoDir} {
		_ = filepath.WalkDir(filepath.Join(s.cfg.DataDir, dir), func(_ string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				n++
			}
			return nil
		})
	}
	return n + s.cloudFiles.Count()
}

// afterRemove cleans up outside the database once a deletion (or an image
// replacement) has committed: it deletes the image files now unreferenced, and the
// point-cloud files of removed.BedUUIDs, the projects no bed refers to any more (their
// positions and queued downloads went in the deleting transaction). Failures are
// logged, not returned: the records are gone already, and the start-up sweeps delete
// image files and point clouds nobody refers to.
func (s *Server) afterRemove(ctx context.Context, removed store.Removed) {
	for _, rel := range removed.ImagePaths {
		s.tiles.Forget(rel)
		if err := s.images.RemoveImage(context.WithoutCancel(ctx), rel); err != nil {
			s.log.Error().Err(err).Str("image_path", rel).Msg("remove image; the next sweep deletes it")
		}
	}
	s.removePhotos(ctx, removed.PhotoPaths)
	for _, project := range removed.BedUUIDs {
		if err := s.cloudFiles.RemoveProject(project); err != nil {
			s.log.Error().Err(err).Str("project", project).Msg("remove point-cloud files; the next start-up sweep deletes them")
		}
	}
}

// sweepImages deletes images no garden refers to, left by a crash between writing an
// image and committing its record or between a commit and deleting the old one. It
// runs before serving, as imagestore.Sweep requires. With a shared backend the node's
// upload directory holds only files being uploaded, and the content in the database is
// swept with a grace period (sweepSharedImages), since other nodes upload meanwhile.
func (s *Server) sweepImages() error {
	if s.shared != nil {
		if _, err := s.uploads.Sweep(func(string) bool { return false }); err != nil {
			s.log.Warn().Err(err).Msg("sweep upload files")
		}
		s.sweepSharedImages(context.Background())
		return nil
	}
	keep, err := s.store.ImagePaths()
	if err != nil {
		return err
	}
	removed, err := s.uploads.Sweep(func(rel string) bool { return keep[rel] })
	if len(removed) > 0 {
		s.log.Info().Strs("image_paths", removed).Msg("swept image files no garden refers to")
	}
	if err != nil {
		s.log.Warn().Err(err).Msg("sweep image files")
	}
	return nil
}

// sweepPhotos deletes photo files no photo refers to (a crash between writing a
// photo and committing its record, or between a deletion and removing its files),
// before serving. With a shared backend the node's upload directory (swept with the
// images') holds only photos being uploaded, and the database's content is swept
// with a grace period (sweepSharedPhotos).
func (s *Server) sweepPhotos() error {
	if s.shared != nil {
		s.sweepSharedPhotos(context.Background())
		return nil
	}
	keep, err := s.store.PhotoPaths()
	if err != nil {
		return err
	}
	removed, err := s.photoFiles.Sweep(func(rel string) bool { return keep[rel] })
	if len(removed) > 0 {
		s.log.Info().Strs("photo_paths", removed).Msg("swept photo files no photo refers to")
	}
	if err != nil {
		s.log.Warn().Err(err).Msg("sweep photo files")
	}
	return nil
}

// sweepSharedPhotos deletes photo content of a shared backend that no photo refers to
// and that is older than sharedImageGrace.
func (s *Server) sweepSharedPhotos(ctx context.Context) {
	sp, ok := s.photos.(store.SharedPhotos)
	if !ok {
		return
	}
	n, err := sp.SweepUnreferencedPhotos(ctx, sharedImageGrace)
	switch {
	case err != nil:
		s.log.Warn().Err(err).Msg("sweep photo content no photo refers to")
	case n > 0:
		s.log.Info().Int("photos", n).Msg("swept photo content no photo refers to")
	}
}

// sharedImageGrace is how old image content no garden shows must be before a sweep
// deletes it: older than any upload still in flight on some node (an upload takes at
// most its body timeout plus a second per BodyMinRate bytes; an hour covers the
// largest at the slowest rate allowed by default).
const sharedImageGrace = time.Hour

// sweepSharedImages deletes image content of a shared backend that no garden shows and
// that is older than sharedImageGrace. Every node runs it; they delete the same rows.
func (s *Server) sweepSharedImages(ctx context.Context) {
	n, err := s.shared.SweepUnreferencedImages(ctx, sharedImageGrace)
	switch {
	case err != nil:
		s.log.Warn().Err(err).Msg("sweep image content no garden shows")
	case n > 0:
		s.log.Info().Int("images", n).Msg("swept image content no garden shows")
	}
}

// UploadDirName is the directory of a node's upload files with a shared backend; with
// bbolt, uploads go straight into ImageDirName.
const UploadDirName = "uploads"

// openImages opens where the garden images' bytes live (see imagecontent.go) and the
// directory uploads stream into.
func openImages(dataDir string, shared store.Shared) (*imagestore.Store, store.ImageContent, error) {
	if shared != nil {
		uploads, err := imagestore.Open(filepath.Join(dataDir, UploadDirName))
		return uploads, shared, err
	}
	dir, err := imagestore.Open(filepath.Join(dataDir, ImageDirName))
	if err != nil {
		return nil, nil, err
	}
	return dir, imageFiles{dir: dir}, nil
}

// sweepPointClouds deletes the point-cloud files no bed or queued download refers to
// (pointcloud.Files.Sweep), unless a restore is pending in the data directory: the
// files may be the restore's to move.
func (s *Server) sweepPointClouds() error {
	// The cli opens a bbolt store only when no restore is pending (cli.openStore);
	// this guards against one begun since.
	if in, err := backup.Inspect(s.cfg.DataDir); err != nil || in != nil {
		s.log.Warn().Err(err).Msg("a restore is pending in the data directory; point-cloud files are not swept")
		return nil
	}
	orphans, err := s.cloudFiles.Sweep(s.store)
	if len(orphans) > 0 {
		s.log.Info().Strs("projects", orphans).Msg("swept point clouds of projects no bed refers to")
	}
	return err
}
