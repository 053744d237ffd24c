package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/gardend/gardend/imagestore"
	"github.com/gardend/gardend/store"
)

// Log photos live where garden images do (imagecontent.go): files under the data
// directory's photos/ with a one-node backend, rows of the database with a shared one
// (store.SharedPhotos). A photo streams into a temporary file of the node first; the
// checked, re-encoded picture and its thumbnail are written into temporary files of
// the same directory, then renamed into place or streamed into the database.

// photoFiles is store.PhotoContent on a photo directory.
type photoFiles struct{ dir *imagestore.Store }

var _ store.PhotoContent = photoFiles{}

// PutPhoto copies r into a new file; gardenID does not matter to files.
func (f photoFiles) PutPhoto(ctx context.Context, _ uint64, ext string, r io.Reader) (string, int64, error) {
	p, err := f.dir.CreateAs(ext)
	if err != nil {
		return "", 0, err
	}
	n, err := io.Copy(p, readerWithContext{ctx, r})
	if err != nil {
		p.Abort()
		return "", 0, fmt.Errorf("store photo: %w", err)
	}
	rel, err := p.Commit()
	return rel, n, err
}

// OpenPhoto opens the file at path; a missing one is store.ErrNotFound.
func (f photoFiles) OpenPhoto(_ context.Context, path string) (io.ReadCloser, int64, error) {
	rc, size, err := f.dir.Open(path)
	if errors.Is(err, imagestore.ErrNotFound) {
		return nil, 0, fmt.Errorf("%w: %w", store.ErrNotFound, err)
	}
	return rc, size, err
}

// RemovePhoto deletes the file at path; callers remove only what no photo refers to.
func (f photoFiles) RemovePhoto(_ context.Context, path string) error { return f.dir.Remove(path) }

// openPhotos opens where photo content lives and the directory photos stream into.
func openPhotos(dataDir string, st store.Backend) (*imagestore.Store, store.PhotoContent, error) {
	if _, shared := st.(store.Shared); shared {
		content, ok := st.(store.SharedPhotos)
		if !ok {
			return nil, nil, errors.New("the shared store keeps no photo content")
		}
		dir, err := imagestore.OpenFor(filepath.Join(dataDir, UploadDirName), ".jpg", ".png")
		return dir, content, err
	}
	dir, err := imagestore.OpenFor(filepath.Join(dataDir, store.PhotoDir), ".jpg", ".png")
	if err != nil {
		return nil, nil, err
	}
	return dir, photoFiles{dir: dir}, nil
}

// storePhotoFile stores a finished temporary file as photo content of the garden:
// renamed into place, or streamed into the database (and the file deleted).
func (s *Server) storePhotoFile(ctx context.Context, gardenID uint64, ext string, p *imagestore.Pending) (string, error) {
	if _, ok := s.photos.(photoFiles); ok {
		return p.Commit()
	}
	defer p.Abort()
	rel, _, err := s.photos.PutPhoto(ctx, gardenID, ext, p.Reader())
	return rel, err
}

// removePhotos deletes photo content whose records are gone; failures are logged
// (the sweeps delete what is left).
func (s *Server) removePhotos(ctx context.Context, paths []string) {
	for _, rel := range paths {
		if err := s.photos.RemovePhoto(context.WithoutCancel(ctx), rel); err != nil {
			s.log.Error().Err(err).Str("photo_path", rel).Msg("remove photo content; the next sweep deletes it")
		}
	}
}
