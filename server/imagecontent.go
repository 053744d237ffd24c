package server

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/gardend/gardend/imagestore"
	"github.com/gardend/gardend/store"
)

// Garden images live where the backend says: as files under the data directory's
// images/ with a one-node backend (imageFiles), in the database with a shared one
// (store.Shared), so that any node serves any image. Uploads stream into a temporary
// file of the node either way (imagestore.Upload checks them as they arrive); from
// there a file is renamed into place, or streamed into the database and deleted.

// imageFiles is store.ImageContent on an image directory.
type imageFiles struct{ dir *imagestore.Store }

var _ store.ImageContent = imageFiles{}

// PutImage copies r into a new image file; gardenID does not matter to files.
func (f imageFiles) PutImage(ctx context.Context, _ uint64, r io.Reader) (string, int64, error) {
	p, err := f.dir.Create()
	if err != nil {
		return "", 0, err
	}
	n, err := io.Copy(p, readerWithContext{ctx, r})
	if err != nil {
		p.Abort()
		return "", 0, fmt.Errorf("store image: %w", err)
	}
	rel, err := p.Commit()
	return rel, n, err
}

// OpenImage opens the file at path; a missing one is store.ErrNotFound.
func (f imageFiles) OpenImage(_ context.Context, path string) (io.ReadCloser, int64, error) {
	rc, size, err := f.dir.Open(path)
	if errors.Is(err, imagestore.ErrNotFound) {
		return nil, 0, fmt.Errorf("%w: %w", store.ErrNotFound, err)
	}
	return rc, size, err
}

// RemoveImage deletes the file at path; callers only remove what no garden shows.
func (f imageFiles) RemoveImage(_ context.Context, path string) error { return f.dir.Remove(path) }

// commitUpload gives a checked upload in the same directory its final name: a
// rename, no copy.
func (f imageFiles) commitUpload(up *imagestore.Upload) (string, error) { return up.Commit() }

// readerWithContext stops a copy once ctx ends.
type readerWithContext struct {
	ctx context.Context
	r   io.Reader
}

func (r readerWithContext) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

// storeUpload stores a checked upload as an image of the garden and returns its path:
// renamed into place next to it, or streamed from its file into the database (the
// file is deleted after). On error nothing new is left behind but what the sweeps
// delete.
func (s *Server) storeUpload(ctx context.Context, gardenID uint64, up *imagestore.Upload) (string, error) {
	if files, ok := s.images.(imageFiles); ok {
		return files.commitUpload(up)
	}
	defer up.Abort()
	r, err := up.Reader()
	if err != nil {
		return "", err
	}
	rel, _, err := s.images.PutImage(ctx, gardenID, r)
	return rel, err
}
