package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/gardend/gardend/imagestore"
	"github.com/gardend/gardend/server/jsonstream"
	"github.com/gardend/gardend/store"
)

// ImageDirName is the directory of garden images inside the data directory.
const ImageDirName = "images"

func (s *Server) imageRoutes() []route {
	return []route{
		{method: "POST", path: "/companies/:company_id/gardens/:garden_id/image", handler: s.handleUploadImage, maxBody: s.cfg.MaxImageBytes, slot: slotUpload},
		{method: "GET", path: "/companies/:company_id/gardens/:garden_id/image", handler: s.handleGetImage},
	}
}

type imageUploaded struct {
	ImagePath   string            `json:"image_path"`
	Width       int               `json:"width"`
	Height      int               `json:"height"`
	Coordinates store.Coordinates `json:"coordinates"`
}

// handleUploadImage replaces the garden's image and coordinates. The body streams
// through an upload slot, taken once the body begins (uploadslots.go), to a
// temporary file (receiveImage), so an upload of any size costs a few buffers of
// memory. The order makes a crash at any point harmless: the
// file is written and synced under a new name, then one transaction points the garden
// at it, then the old file goes. A crash before the commit leaves an unreferenced file
// and one after it an old file; the start-up sweep deletes both.
func (s *Server) handleUploadImage(w http.ResponseWriter, r *http.Request) {
	g, err := s.adminGarden(r)
	if err == nil {
		err = s.atHome("garden", g.ID)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !isJSON(r) {
		s.writeError(w, r, errNotJSON)
		return
	}
	release, err := s.takeUploadSlot(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer release()
	up, coords, err := s.receiveImage(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer up.Abort() // a no-op once committed
	width, height, err := up.Finish()
	if err == nil {
		err = s.checkImageSize(width, height)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rel, err := s.storeUpload(r.Context(), g.ID, up)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.setGardenImage(r.Context(), g.ID, rel, coords); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusCreated, imageUploaded{ImagePath: rel, Width: width, Height: height, Coordinates: coords})
}

// receiveImage reads {"image": "<data URL>", "coordinates": [...]} from the body,
// streaming the image into an Upload and keeping the other members (at most
// MaxBodyBytes of them) as JSON. Its errors come in the order a whole-body decode
// gives them: malformed JSON, a member of the wrong type, no image, bad coordinates;
// the image's own problems are left to Upload.Finish. On success the caller owns the
// upload.
func (s *Server) receiveImage(r *http.Request) (*imagestore.Upload, store.Coordinates, error) {
	var (
		up        *imagestore.Upload
		coordsRaw json.RawMessage
		typeErr   error
	)
	abort := func() {
		if up != nil {
			up.Abort()
			up = nil
		}
	}
	err := jsonstream.NewDecoder(r.Body, s.cfg.MaxBodyBytes).Object(func(name string, v *jsonstream.Value) error {
		var err error
		switch {
		case strings.EqualFold(name, "image"): // encoding/json matches names so
			abort() // the last one counts
			if v.Kind() != '"' {
				if v.Kind() != 'n' && typeErr == nil {
					typeErr = badRequest("image", "image must be a string")
				}
				return nil
			}
			if up, err = s.uploads.NewUpload(); err != nil {
				return storeError{err}
			}
			return v.Stream(uploadWriter{up})
		case strings.EqualFold(name, "coordinates"):
			coordsRaw, err = v.Raw()
		}
		return err
	})
	var stored storeError
	switch {
	case errors.As(err, &stored):
		// Ours, not the client's: a 500.
	case errors.Is(err, jsonstream.ErrBudget):
		err = badRequest("body", "the members other than image may take at most "+formatBytes(s.cfg.MaxBodyBytes)+" of JSON")
	case err != nil:
		err = jsonError(err)
	case typeErr != nil:
		err = typeErr
	case up == nil:
		err = badRequest("image", "image is required: "+imagestore.DataURLPrefix+"<base64 PNG>")
	}
	var coords store.Coordinates
	if err == nil {
		coords, err = store.ParseCoordinates(coordsRaw)
	}
	if err != nil {
		abort()
		return nil, nil, err
	}
	return up, coords, nil
}

// storeError marks a failure to store the image (the disk's, so a 500), apart from
// the client's errors in the same stream.
type storeError struct{ error }

func (e storeError) Unwrap() error { return e.error }

type uploadWriter struct{ up *imagestore.Upload }

func (w uploadWriter) Write(p []byte) (int, error) {
	n, err := w.up.Write(p)
	if err != nil {
		err = storeError{err}
	}
	return n, err
}

// replaceGardenImage checks a PNG held in memory (the demo's) and makes it the
// garden's image with coords.
func (s *Server) replaceGardenImage(ctx context.Context, gardenID uint64, data []byte, coords store.Coordinates) (imageUploaded, error) {
	width, height, err := imagestore.CheckPNG(data)
	if err == nil {
		err = s.checkImageSize(width, height)
	}
	if err != nil {
		return imageUploaded{}, err
	}
	rel, _, err := s.images.PutImage(ctx, gardenID, bytes.NewReader(data))
	if err != nil {
		return imageUploaded{}, err
	}
	if err := s.setGardenImage(ctx, gardenID, rel, coords); err != nil {
		return imageUploaded{}, err
	}
	return imageUploaded{ImagePath: rel, Width: width, Height: height, Coordinates: coords}, nil
}

// setGardenImage points the garden at the stored image rel with coords, and deletes
// the file it replaces; on failure it deletes rel instead.
func (s *Server) setGardenImage(ctx context.Context, gardenID uint64, rel string, coords store.Coordinates) error {
	old, err := s.store.SetGardenImage(gardenID, rel, coords)
	if err != nil {
		// The record still points at the old image; the new one must not stay.
		if rmErr := s.images.RemoveImage(context.WithoutCancel(ctx), rel); rmErr != nil {
			s.log.Error().Err(rmErr).Str("image_path", rel).Msg("remove image of a failed upload; the next sweep deletes it")
		}
		return err
	}
	if old != "" {
		s.afterRemove(ctx, store.Removed{ImagePaths: []string{old}})
	}
	s.tiles.Want(rel) // the uploader looks at it next
	return nil
}

// handleGetImage streams {"image": "<data URL>", "coordinates": [...]} with the file
// encoded on the fly, so the image is never held in memory.
func (s *Server) handleGetImage(w http.ResponseWriter, r *http.Request) {
	g, _, err := s.gardenFromPath(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	f, size, coords, err := s.openImage(r.Context(), g.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer func() { _ = f.Close() }() // read only
	tail, err := json.Marshal(coords)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	const head, mid = `{"image":"`, `","coordinates":`
	h := w.Header()
	h["Content-Type"] = headerJSON
	h.Set("Content-Length", strconv.FormatInt(int64(len(head))+imagestore.EncodedLen(size)+int64(len(mid)+len(tail)+1), 10))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	// What is left is the client's to pace: it holds its connection, not a slot.
	s.releaseSlot(r)
	pw := s.progressive(w)
	_, _ = io.WriteString(pw, head) // a client gone shows in WriteDataURL's error
	if err := imagestore.WriteDataURL(pw, f); err != nil {
		// The status is sent: cut the response short rather than end it as valid JSON.
		s.log.Warn().Err(err).Str("request_id", requestID(r)).Uint64("garden_id", g.ID).Msg("image download interrupted")
		panic(http.ErrAbortHandler)
	}
	_, _ = pw.Write(append([]byte(mid), append(tail, '}')...)) // a client gone at the end: nothing left to do
}

// openImage opens the garden's image with the coordinates of the same upload. An
// upload running at the same time may delete the image between reading the record and
// opening it; reading the record again then finds the new one.
func (s *Server) openImage(ctx context.Context, gardenID uint64) (io.ReadCloser, int64, store.Coordinates, error) {
	for attempt := 1; ; attempt++ {
		rel, coords, err := s.store.GardenImage(gardenID)
		if err != nil {
			return nil, 0, nil, err
		}
		f, size, err := s.images.OpenImage(ctx, rel)
		if errors.Is(err, store.ErrNotFound) && attempt < 3 {
			continue
		}
		if errors.Is(err, store.ErrNotFound) {
			// The record names content that is not there: the same answer as ever for
			// a missing image file, whichever backend keeps it.
			err = fmt.Errorf("image %s of garden %d: %w", rel, gardenID, imagestore.ErrNotFound)
		}
		return f, size, coords, err
	}
}
