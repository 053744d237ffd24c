package server

import (
	"context"
	"path/filepath"

	"github.com/gardend/gardend/store"
)

// afterRemove cleans up outside the database once a deletion (or an image
// replacement) has committed: it deletes the image files now unreferenced, and the
// point-cloud files of removed.BedUUIDs, the projects no bed refers to any more (their
// positions and queued downloads went in the deleting transaction). Failures are
// logged, not returned: the records are gone already, and the start-up sweeps delete
// image files and point clouds nobody refers to.
func (s *Server) afterRemove(ctx context.Context, removed store.Removed) {
	for _, rel := range removed.ImagePaths {
		if err := s.images.Remove(rel); err != nil {
			s.log.Error().Err(err).Str("image_path", rel).Msg("remove image file; the next start-up sweep deletes it")
		}
	}
	dir := filepath.Join(s.cfg.DataDir, PointCloudDirName)
	for _, project := range removed.BedUUIDs {
		if err := removeProjectClouds(dir, project); err != nil {
			s.log.Error().Err(err).Str("project", project).Msg("remove point-cloud files; the next start-up sweep deletes them")
		}
	}
}

// sweepImages deletes image files no garden refers to, left by a crash between writing
// a file and committing its record or between a commit and deleting the old file. It
// runs before serving, as imagestore.Sweep requires.
func (s *Server) sweepImages() error {
	keep, err := s.store.ImagePaths()
	if err != nil {
		return err
	}
	removed, err := s.images.Sweep(func(rel string) bool { return keep[rel] })
	if len(removed) > 0 {
		s.log.Info().Strs("image_paths", removed).Msg("swept image files no garden refers to")
	}
	if err != nil {
		s.log.Warn().Err(err).Msg("sweep image files")
	}
	return nil
}
