package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gardend/gardend/server/photo"
	"github.com/gardend/gardend/store"
)

// Photos of logs: POST the raw JPEG or PNG as the body; it streams to a temporary
// file through an upload slot, its header is checked (format, size, what decoding
// would cost), then one photo at a time is decoded, turned upright and encoded again
// without metadata, with its thumbnail (server/photo), and stored.

const photoPath = logPath + "/:log_id/photos"

func (s *Server) photoRoutes() []route {
	return []route{
		{method: "POST", path: photoPath, handler: s.handleUploadPhoto, maxBody: s.cfg.MaxPhotoBytes, slot: slotUpload},
		{method: "GET", path: photoPath + "/:photo_id", handler: s.handleGetPhoto},
		{method: "DELETE", path: photoPath + "/:photo_id", handler: s.handleDeletePhoto},
	}
}

// photoJSON is a stored photo as the API shows it (no content paths).
type photoJSON struct {
	ID          uint64    `json:"id"`
	Log         uint64    `json:"log"`
	ContentType string    `json:"content_type"`
	Width       int       `json:"width"`
	Height      int       `json:"height"`
	Size        int64     `json:"size"`
	Created     time.Time `json:"created"`
}

var errPhotoType = &apiError{status: http.StatusUnsupportedMediaType,
	detail: "send the photo as the raw body with Content-Type image/jpeg or image/png"}

// photoContentType reads the upload's declared type: JPEG or PNG.
func photoContentType(r *http.Request) (string, error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != photo.JPEG && mt != photo.PNG {
		return "", errPhotoType
	}
	return mt, nil
}

// photoError turns what server/photo says of a client's photo into a 400 naming it.
func photoError(err error) error {
	if errors.Is(err, photo.ErrNotPhoto) || errors.Is(err, photo.ErrBadPhoto) || errors.Is(err, photo.ErrTooLarge) {
		return badRequest("photo", err.Error())
	}
	return err
}

func (s *Server) handleUploadPhoto(w http.ResponseWriter, r *http.Request) {
	g, rl, logID, err := s.logFromPath(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	me := currentUser(r)
	allowed := s.logActionAtHome(authorOrAdmin(me, rl, errNotYourLogPhoto))
	// Refuse before reading a byte of the body; AddPhoto checks again as it records.
	l, err := s.store.Log(g.ID, logID)
	if err == nil {
		err = allowed(l)
	}
	if err != nil {
		s.writeError(w, r, logNotFound(err, logID))
		return
	}
	declared, err := photoContentType(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	release, err := s.takeUploadSlot(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer release()
	p, err := s.receivePhoto(r.Context(), g.ID, r.Body, declared)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p.Uploader = me.ID
	var stored store.Photo
	added := true
	if key, sent := r.Header[idempotencyKey]; sent {
		// A retry after a lost answer (or a browser's own resend): the photo the
		// first try added, not a second one.
		stored, added, err = s.store.AddPhotoOnce(g.ID, logID, strings.Join(key, ","), p, s.cfg.PhotoStorageBytes, allowed)
	} else {
		stored, err = s.store.AddPhoto(g.ID, logID, p, s.cfg.PhotoStorageBytes, allowed)
	}
	if err != nil || !added {
		s.removePhotos(r.Context(), []string{p.Path, p.ThumbPath})
	}
	if err != nil {
		if errors.Is(err, store.ErrStorageFull) {
			err = &apiError{status: http.StatusInsufficientStorage, detail: detailOf(err, store.ErrStorageFull)}
		}
		s.writeError(w, r, logNotFound(err, logID))
		return
	}
	if !added {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	s.writeJSON(w, r, http.StatusCreated, newPhotoJSON(stored))
}

func newPhotoJSON(p store.Photo) photoJSON {
	return photoJSON{ID: p.ID, Log: p.Log, ContentType: p.ContentType, Width: p.Width, Height: p.Height, Size: p.Size, Created: p.Created}
}

// receivePhoto streams body into a temporary file, checks it and stores the upright
// picture and its thumbnail as content of the garden (not yet of a log): the record
// is the caller's to add, or the content to remove.
func (s *Server) receivePhoto(ctx context.Context, gardenID uint64, body io.Reader, declared string) (store.Photo, error) {
	raw, err := s.photoFiles.CreateAs(".upload")
	if err != nil {
		return store.Photo{}, err
	}
	defer raw.Abort()
	if _, err := io.Copy(raw, readerWithContext{ctx, body}); err != nil {
		var big *http.MaxBytesError
		if errors.As(err, &big) {
			return store.Photo{}, &apiError{status: http.StatusRequestEntityTooLarge,
				detail: "the photo is larger than the limit of " + formatBytes(big.Limit) + "; send it smaller"}
		}
		return store.Photo{}, err
	}
	h, err := photo.ReadHeader(raw.Reader())
	if err == nil && h.ContentType != declared {
		err = badRequest("photo", fmt.Sprintf("the body is %s but Content-Type says %s", h.ContentType, declared))
	}
	if err == nil {
		err = (photo.Limits{MaxPixels: s.cfg.MaxPhotoPixels}).Check(h)
	}
	if err != nil {
		return store.Photo{}, photoError(err)
	}
	ext := map[string]string{photo.JPEG: ".jpg", photo.PNG: ".png"}[h.ContentType]
	full, err := s.photoFiles.CreateAs(ext)
	if err != nil {
		return store.Photo{}, err
	}
	defer full.Abort()
	thumb, err := s.photoFiles.CreateAs(".jpg")
	if err != nil {
		return store.Photo{}, err
	}
	defer thumb.Abort()
	// One decode at a time bounds the memory photos take (photo.Limits); the client
	// waits for its turn, as long as it stays.
	select {
	case s.photoWork <- struct{}{}:
	case <-ctx.Done():
		return store.Photo{}, ctx.Err()
	}
	res, err := photo.Process(raw.Reader(), h, store.ThumbMax, full, thumb)
	<-s.photoWork
	if err != nil {
		return store.Photo{}, photoError(err)
	}
	p := store.Photo{ContentType: h.ContentType, Width: res.Width, Height: res.Height, Size: full.Size(), ThumbSize: thumb.Size()}
	if p.Path, err = s.storePhotoFile(ctx, gardenID, ext, full); err != nil {
		return store.Photo{}, err
	}
	if p.ThumbPath, err = s.storePhotoFile(ctx, gardenID, ".jpg", thumb); err != nil {
		s.removePhotos(ctx, []string{p.Path})
		return store.Photo{}, err
	}
	return p, nil
}

// photoFromPath resolves {log_id} and {photo_id} of the path's garden.
func (s *Server) photoFromPath(r *http.Request) (store.Garden, role, uint64, uint64, error) {
	g, rl, logID, err := s.logFromPath(r)
	if err != nil {
		return g, rl, 0, 0, err
	}
	photoID, err := pathID(r, "photo_id")
	return g, rl, logID, photoID, err
}

func (s *Server) handleGetPhoto(w http.ResponseWriter, r *http.Request) {
	g, _, logID, photoID, err := s.photoFromPath(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.store.Photo(g.ID, logID, photoID)
	if err != nil {
		s.writeError(w, r, hideMissing(err, "photo "+idText(photoID)+" of log "+idText(logID)+" not found"))
		return
	}
	size := r.URL.Query().Get("size")
	path, ct, variant := p.Path, p.ContentType, "full"
	switch size {
	case "", "full":
	case "thumb":
		if p.ThumbPath == "" {
			if p, err = s.makeThumb(r.Context(), p); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		path, ct, variant = p.ThumbPath, photo.JPEG, "thumb"
	default:
		s.writeError(w, r, badRequest("size", "size must be thumb or full"))
		return
	}
	etag := `"photo-` + idText(p.ID) + "-" + variant + `"`
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Cache-Control", "private, max-age=86400")
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	rc, n, err := s.photos.OpenPhoto(r.Context(), path)
	if err != nil {
		h.Del("ETag")
		h.Del("Cache-Control")
		if errors.Is(err, store.ErrNotFound) {
			s.log.Error().Err(err).Uint64("photo_id", p.ID).Msg("photo content missing")
			err = notFound("the photo's content is missing")
		}
		s.writeError(w, r, err)
		return
	}
	defer func() { _ = rc.Close() }() // a reader: nothing to lose
	ext := map[string]string{photo.JPEG: "jpg", photo.PNG: "png"}[ct]
	h.Set("Content-Type", ct)
	h.Set("Content-Length", strconv.FormatInt(n, 10))
	h.Set("Content-Disposition", `inline; filename="photo-`+idText(p.ID)+map[string]string{"full": "", "thumb": "-thumb"}[variant]+"."+ext+`"`)
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	s.releaseSlot(r) // the client paces the rest
	if _, err := io.Copy(s.progressive(w), rc); err != nil {
		s.log.Warn().Err(err).Str("request_id", requestID(r)).Uint64("photo_id", p.ID).Msg("photo download interrupted")
		panic(http.ErrAbortHandler)
	}
}

// makeThumb makes the thumbnail of a photo that has none (one restored without it),
// once: a thumbnail another request recorded meanwhile wins and this one goes.
func (s *Server) makeThumb(ctx context.Context, p store.Photo) (store.Photo, error) {
	h, err := s.storedPhotoHeader(ctx, p)
	if err != nil {
		return store.Photo{}, err
	}
	rc, _, err := s.photos.OpenPhoto(ctx, p.Path)
	if err != nil {
		return store.Photo{}, err
	}
	defer func() { _ = rc.Close() }() // a reader: nothing to lose
	thumb, err := s.photoFiles.CreateAs(".jpg")
	if err != nil {
		return store.Photo{}, err
	}
	defer thumb.Abort()
	select {
	case s.photoWork <- struct{}{}:
	case <-ctx.Done():
		return store.Photo{}, ctx.Err()
	}
	err = photo.MakeThumb(rc, h, store.ThumbMax, thumb)
	<-s.photoWork
	if err != nil {
		return store.Photo{}, fmt.Errorf("thumbnail of photo %d: %w", p.ID, err)
	}
	rel, err := s.storePhotoFile(ctx, p.Garden, ".jpg", thumb)
	if err != nil {
		return store.Photo{}, err
	}
	got, err := s.store.SetPhotoThumb(p.ID, rel, thumb.Size())
	if err != nil || got.ThumbPath != rel {
		s.removePhotos(ctx, []string{rel})
	}
	return got, err
}

// storedPhotoHeader reads and checks the header of a stored photo as an upload's
// is: it may come from a backup of a box with higher limits, or from an archive
// edited by hand, and decoding it must stay within this box's limits all the same.
// The stored picture is upright: its orientation is 1 whatever it says.
func (s *Server) storedPhotoHeader(ctx context.Context, p store.Photo) (photo.Header, error) {
	rc, _, err := s.photos.OpenPhoto(ctx, p.Path)
	if err != nil {
		return photo.Header{}, err
	}
	defer func() { _ = rc.Close() }() // a reader: nothing to lose
	h, err := photo.ReadHeader(rc)
	if err == nil && (h.ContentType != p.ContentType || h.Width != p.Width || h.Height != p.Height) {
		err = fmt.Errorf("%w: it is a %s of %d×%d, its record says a %s of %d×%d", photo.ErrBadPhoto, h.ContentType, h.Width, h.Height, p.ContentType, p.Width, p.Height)
	}
	if err == nil {
		err = (photo.Limits{MaxPixels: s.cfg.MaxPhotoPixels}).Check(h)
	}
	if errors.Is(err, photo.ErrNotPhoto) || errors.Is(err, photo.ErrBadPhoto) || errors.Is(err, photo.ErrTooLarge) {
		s.log.Warn().Err(err).Uint64("photo_id", p.ID).Msg("no thumbnail made of a stored photo")
		return photo.Header{}, &apiError{status: http.StatusUnprocessableEntity,
			detail: "this server makes no thumbnail of this photo (" + err.Error() + "); ask for size=full"}
	}
	h.Orientation = 1
	return h, err
}

func (s *Server) handleDeletePhoto(w http.ResponseWriter, r *http.Request) {
	g, rl, logID, photoID, err := s.photoFromPath(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	removed, err := s.store.DeletePhoto(g.ID, logID, photoID, s.logActionAtHome(authorOrAdmin(currentUser(r), rl, errNotYourLogPhoto)))
	if err != nil {
		s.writeError(w, r, hideMissing(err, "photo "+idText(photoID)+" of log "+idText(logID)+" not found"))
		return
	}
	s.afterRemove(r.Context(), removed)
	writeRawJSON(w, http.StatusOK, []byte("{}"))
}
